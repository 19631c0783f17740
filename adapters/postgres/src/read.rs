//! Reads outside a transaction: one job, or a page of jobs in id order.

use crate::{error, PgStore};
use leasehold_core::{JobId, JobRecord, ListRequest, StoreError};
use leasehold_sql::dialect::POSTGRES;
use leasehold_sql::job_sql::JobSql;
use std::sync::LazyLock;

/// The job reads, in this store's placeholders.
pub(crate) static JOBS: LazyLock<JobSql> = LazyLock::new(|| JobSql::new(POSTGRES));

impl PgStore {
    /// One job, if it exists.
    pub(crate) async fn get_job(&self, job: JobId) -> Result<Option<JobRecord>, StoreError> {
        JOBS.by_id(&self.pool, job, error::map).await
    }

    /// Up to `req.limit` jobs after `req.after`, in id order.
    pub(crate) async fn list_jobs(&self, req: ListRequest) -> Result<Vec<JobRecord>, StoreError> {
        JOBS.page(&self.pool, &req, error::map).await
    }
}
