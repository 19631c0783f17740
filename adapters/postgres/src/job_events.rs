//! One job's audit trail, for an operator's `leasehold show`: at most
//! `limit` of its events, in insertion order, through the `lease_events`
//! view (a scan of `leasehold_audit`: it has no index by job, so the
//! writers pay nothing for a reader this rare).

use crate::{error, PgStore};
use leasehold_core::{Event, JobId, StoreError};

impl PgStore {
    /// Up to `limit` audit events of `job`, in insertion order.
    pub async fn job_events(&self, job: JobId, limit: u32) -> Result<Vec<Event>, StoreError> {
        let id = i64::try_from(job.0).map_err(|_| StoreError::Corrupt(format!("{job}: id")))?;
        let texts: Vec<String> = sqlx::query_scalar(
            "SELECT event::text FROM lease_events WHERE job_id = $1 ORDER BY seq, pos LIMIT $2",
        )
        .bind(id)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(error::map)?;
        texts
            .iter()
            .map(|t| {
                serde_json::from_str(t)
                    .map_err(|e| StoreError::Corrupt(format!("event of {job}: {e}")))
            })
            .collect()
    }
}
