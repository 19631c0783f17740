//! What the soak reads from a store's tables, beside the core's API: row
//! counts, on-disk sizes, and the final state checks. Read-only SQL on
//! the store's own pool; the system under test is never told anything.
//! Each SQL store implements it in a file of its own (`pg_sizes.rs`,
//! `sqlite_sizes.rs`).

use leasehold_core::{Store, StoreError};
use std::future::Future;

/// One look at a store's tables:
/// - `jobs_rows`, `audit_rows`: rows in `leasehold_jobs` and in the audit
///   table (PostgreSQL: `leasehold_audit`, one row per write statement;
///   SQLite: `lease_events`, one row per event);
/// - `table_bytes`, `index_bytes`: bytes of `leasehold_jobs`' heap and of
///   its indexes (`None`: the store cannot tell);
/// - `total_bytes`: PostgreSQL: `leasehold_jobs` with its indexes and
///   TOAST; SQLite: the whole database file;
/// - `wal_bytes`: SQLite's write-ahead log file.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sizes {
    pub(crate) jobs_rows: u64,
    pub(crate) audit_rows: u64,
    pub(crate) table_bytes: Option<u64>,
    pub(crate) index_bytes: Option<u64>,
    pub(crate) total_bytes: u64,
    pub(crate) wal_bytes: Option<u64>,
}

/// Read-only looks at a SQL store's tables.
pub trait Inspect: Store {
    /// Row counts and sizes.
    fn sizes(&self) -> impl Future<Output = Result<Sizes, StoreError>> + Send;
    /// The dialect's first bind placeholder.
    const PLACEHOLDER: &'static str;
    /// Runs a `count(*)` query, with `bind` as its one parameter if given.
    fn count(
        &self,
        sql: String,
        bind: Option<i64>,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;
    /// Jobs still `pending` or `running`.
    fn unfinished(&self) -> impl Future<Output = Result<u64, StoreError>> + Send {
        self.count(UNFINISHED.to_string(), None)
    }
    /// Finished jobs whose `updated_at` (store ms) is at or before `cutoff`.
    fn finished_by(&self, cutoff: i64) -> impl Future<Output = Result<u64, StoreError>> + Send {
        self.count(finished_by_sql(Self::PLACEHOLDER), Some(cutoff))
    }
}

/// The SQL both stores answer for [`Inspect::unfinished`].
pub const UNFINISHED: &str =
    "SELECT count(*) FROM leasehold_jobs WHERE state IN ('pending', 'running')";

/// [`Inspect::finished_by`]'s SQL with the dialect's placeholder `p`.
pub fn finished_by_sql(p: &str) -> String {
    format!(
        "SELECT count(*) FROM leasehold_jobs \
         WHERE state IN ('succeeded', 'dead', 'cancelled') AND updated_at <= {p}"
    )
}

/// Maps a driver error for the bench's reports.
pub fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

/// Bytes as MiB with one decimal, `n/a` when unknown.
pub fn mib(b: Option<u64>) -> String {
    b.map(|b| format!("{:.1}", b as f64 / 1_048_576.0))
        .unwrap_or_else(|| "n/a".into())
}
