//! What the soak reads from a store's tables, beside the core's API: row
//! counts, on-disk sizes, and the final state checks. Read-only SQL on
//! the store's own pool; the system under test is never told anything.
//! Each SQL store implements it in a file of its own (`pg_sizes.rs`,
//! `sqlite_sizes.rs`).

use leasehold_core::{Store, StoreError};
use std::future::Future;

/// One look at a store's tables.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sizes {
    /// Rows in `leasehold_jobs`.
    pub jobs_rows: u64,
    /// Rows in the audit table (PostgreSQL: `leasehold_audit`, one row per
    /// write statement; SQLite: `lease_events`, one row per event).
    pub audit_rows: u64,
    /// Bytes of `leasehold_jobs`' heap (`None`: the store cannot tell).
    pub table_bytes: Option<u64>,
    /// Bytes of `leasehold_jobs`' indexes.
    pub index_bytes: Option<u64>,
    /// PostgreSQL: `leasehold_jobs` with its indexes and TOAST; SQLite:
    /// the whole database file.
    pub total_bytes: u64,
    /// SQLite: the write-ahead log file.
    pub wal_bytes: Option<u64>,
}

/// Read-only looks at a SQL store's tables.
pub trait Inspect: Store {
    /// Row counts and sizes.
    fn sizes(&self) -> impl Future<Output = Result<Sizes, StoreError>> + Send;
    /// Jobs still `pending` or `running`.
    fn unfinished(&self) -> impl Future<Output = Result<u64, StoreError>> + Send;
    /// Finished jobs whose `updated_at` (store ms) is at or before `cutoff`.
    fn finished_by(&self, cutoff: i64) -> impl Future<Output = Result<u64, StoreError>> + Send;
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
