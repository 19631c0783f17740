//! Reads on the read pool: one job, or a page of jobs in id order.

use crate::{error, SqliteStore};
use leasehold_core::{JobId, JobRecord, ListRequest, StoreError};
use leasehold_sql::job_columns::{decode_job, to_i64, COLUMNS};

impl SqliteStore {
    /// One job, if it exists.
    pub(crate) async fn get_job(&self, job: JobId) -> Result<Option<JobRecord>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM leasehold_jobs WHERE id = ?");
        let row = sqlx::query(&sql)
            .bind(to_i64(job.0)?)
            .fetch_optional(&self.pool)
            .await
            .map_err(error::map)?;
        row.as_ref().map(decode_job).transpose()
    }

    /// Up to `req.limit` jobs after `req.after`, in id order.
    pub(crate) async fn list_jobs(&self, req: ListRequest) -> Result<Vec<JobRecord>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM leasehold_jobs WHERE id > ? ORDER BY id LIMIT ?");
        let after = req.after.map(|a| to_i64(a.0)).transpose()?.unwrap_or(0);
        let rows = sqlx::query(&sql)
            .bind(after)
            .bind(i64::from(req.limit))
            .fetch_all(&self.pool)
            .await
            .map_err(error::map)?;
        rows.iter().map(decode_job).collect()
    }
}
