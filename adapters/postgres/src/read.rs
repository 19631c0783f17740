//! Reads outside a transaction: one job by id or by idempotency key, or a page of
//! jobs in id order, or many jobs by id, as both SQL stores send them
//! ([`JobSql`]).

use crate::error;
use leasehold_sql::dialect::POSTGRES;
use leasehold_sql::job_sql::JobSql;
use sqlx::Postgres;
use std::sync::LazyLock;

/// The job reads, in this store's placeholders.
pub(crate) static JOBS: LazyLock<JobSql<Postgres>> =
    LazyLock::new(|| JobSql::new(POSTGRES, error::map));
