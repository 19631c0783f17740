//! The operator's commands on a real store (`--store-url`): `migrate`,
//! `status`, `list`, `show`, `retry`, `cancel`, `prune`. Each opens the store,
//! checks its schema (every command but `migrate` refuses a database
//! without leasehold's schema, behind this binary's migrations or newer
//! than them), and changes rows only through the store's operations, which
//! apply the core's transitions (no SQL of its own writes a row).
//!
//! Exit codes: 0 done; 2 bad input (an unknown job, a wrong or unreachable
//! URL, a schema missing or newer than the binary, a retry of a job that
//! is not dead), with nothing changed.

pub mod format;
pub mod job_arg;
pub mod job_change;
pub mod list;
pub mod migrate;
pub mod prune;
pub mod show;
pub mod status;
pub mod target;

use super::ExitCode;
use std::future::Future;
use target::{Open, OpsStore, TargetArgs};

/// Runs `body` on the store `args` name, opened in `mode`; with
/// [`Open::Existing`] the schema must be this binary's. Every error is
/// printed as `leasehold: …` and answers exit 2.
pub fn with_store<F, Fut>(args: &TargetArgs, mode: Open, body: F) -> ExitCode
where
    F: FnOnce(OpsStore) -> Fut,
    Fut: Future<Output = (OpsStore, Result<(), String>)>,
{
    let result = runtime().and_then(|rt| {
        rt.block_on(async {
            let target = args.target()?;
            let store = OpsStore::open(&target, args.schema.as_deref(), mode).await?;
            if mode == Open::Existing {
                if let Err(e) = store.require_current_schema().await {
                    store.close().await;
                    return Err(format!("{}: {e}", target.shown()));
                }
            }
            let (store, result) = body(store).await;
            store.close().await;
            result
        })
    });
    match result {
        Ok(()) => ExitCode::Ok,
        Err(e) => {
            eprintln!("leasehold: {e}");
            ExitCode::Input
        }
    }
}

/// A one-thread runtime with timers and sockets (the store's drivers).
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// Calls the same method on either store.
macro_rules! on_store {
    ($store:expr, |$s:ident| $body:expr) => {
        match $store {
            $crate::cli::ops::target::OpsStore::Sqlite($s) => $body,
            $crate::cli::ops::target::OpsStore::Postgres($s) => $body,
        }
    };
}
pub(crate) use on_store;
