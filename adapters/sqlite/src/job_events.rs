//! One job's audit trail, for an operator's `leasehold show`: at most
//! `limit` of its events, oldest first. A scan of `lease_events` (it has no
//! index by job: the writers pay nothing for a reader this rare).

use crate::{error, SqliteStore};
use leasehold_core::{Event, JobId, StoreError};
use leasehold_sql::job_trail::{decode_trail, job_param};

impl SqliteStore {
    /// Up to `limit` audit events of `job`, in commit order.
    pub async fn job_events(&self, job: JobId, limit: u32) -> Result<Vec<Event>, StoreError> {
        let id = job_param(job)?;
        let texts: Vec<String> = sqlx::query_scalar(
            "SELECT event FROM lease_events WHERE job_id = ? ORDER BY seq LIMIT ?",
        )
        .bind(id)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(error::map)?;
        decode_trail(job, &texts)
    }
}
