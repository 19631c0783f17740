//! Reads on the read pool: one job, or a page of jobs in id order.

use crate::{error, SqliteStore};
use leasehold_core::{JobId, JobRecord, ListRequest, StoreError};
use leasehold_sql::dialect::SQLITE;
use leasehold_sql::job_sql::JobSql;
use std::sync::LazyLock;

/// The job reads, in this store's placeholders.
pub(crate) static JOBS: LazyLock<JobSql> = LazyLock::new(|| JobSql::new(SQLITE));

impl SqliteStore {
    /// One job, if it exists.
    pub(crate) async fn get_job(&self, job: JobId) -> Result<Option<JobRecord>, StoreError> {
        JOBS.by_id(&self.pool, job, error::map).await
    }

    /// Up to `req.limit` jobs after `req.after`, in id order.
    pub(crate) async fn list_jobs(&self, req: ListRequest) -> Result<Vec<JobRecord>, StoreError> {
        JOBS.page(&self.pool, &req, error::map).await
    }
}
