//! `leasehold cancel JOB` and `leasehold retry JOB`: one job changed
//! through the store's own operation (the core's transition, audited),
//! and the answer printed.
//! - `cancel` (`Store::cancel`): a pending job is cancelled, a running
//!   one asked to stop, a finished one left as it is.
//! - `retry` (`Store::retry_dead`): a dead job back to pending with a
//!   fresh attempt budget. A job that is not dead is refused (exit 2),
//!   nothing changed.

use super::job_arg::JobArgs;
use super::target::Open;
use super::{on_store, with_store};
use crate::cli::ExitCode;
use leasehold_core::{CancelOutcome, JobId, RetryOutcome, Store};

/// The change a command makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobChange {
    /// `leasehold cancel`.
    Cancel,
    /// `leasehold retry`.
    Retry,
}

impl JobChange {
    /// The command's name, as its errors begin.
    fn name(self) -> &'static str {
        match self {
            JobChange::Cancel => "cancel",
            JobChange::Retry => "retry",
        }
    }
}

/// Runs the command `change` names.
pub fn run(args: &JobArgs, change: JobChange) -> ExitCode {
    let job = args.job;
    with_store(&args.target, Open::Existing, |store| async move {
        let said = match change {
            JobChange::Cancel => {
                on_store!(&store, |s| s.cancel(job).await).map(|a| cancelled(job, a))
            }
            JobChange::Retry => {
                on_store!(&store, |s| s.retry_dead(job).await).map(|a| retried(job, a))
            }
        };
        let result = match said {
            Ok(Ok(line)) => {
                println!("{line}");
                Ok(())
            }
            Ok(Err(refused)) => Err(refused),
            Err(e) => Err(format!("{} {job}: {e}", change.name())),
        };
        (store, result)
    })
}

/// What a cancel answered, as printed.
fn cancelled(job: JobId, answer: CancelOutcome) -> Result<String, String> {
    Ok(match answer {
        CancelOutcome::Cancelled => format!("{job}: cancelled"),
        CancelOutcome::Requested => {
            format!("{job}: cancel requested (it is running; its worker stops it)")
        }
        CancelOutcome::AlreadyTerminal(state) => format!("{job}: already {state}; nothing changed"),
    })
}

/// What a retry answered: the line printed, or the refusal.
fn retried(job: JobId, answer: RetryOutcome) -> Result<String, String> {
    match answer {
        RetryOutcome::Retried => Ok(format!(
            "{job}: retried (pending, with a fresh attempt budget)"
        )),
        RetryOutcome::NotDead(state) => Err(format!(
            "retry {job}: it is {state}, not dead; nothing changed"
        )),
    }
}
