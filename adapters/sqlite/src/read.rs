//! Reads on the read pool: one job by id or by idempotency key, a page of
//! jobs in id order, or many jobs by id, as both SQL stores send them
//! ([`JobSql`]).

use crate::error;
use leasehold_sql::dialect::SQLITE;
use leasehold_sql::job_sql::JobSql;
use sqlx::Sqlite;
use std::sync::LazyLock;

/// The job reads, in this store's placeholders.
pub(crate) static JOBS: LazyLock<JobSql<Sqlite>> =
    LazyLock::new(|| JobSql::new(SQLITE, error::map));
