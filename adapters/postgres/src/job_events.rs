//! One job's audit trail, for an operator's `leasehold show`: at most
//! `limit` of its events, in insertion order, through the `lease_events`
//! view (a scan of `leasehold_audit`: it has no index by job, so the
//! writers pay nothing for a reader this rare).

use crate::{error, PgStore};
use leasehold_core::{Event, JobId, StoreError};
use leasehold_sql::job_trail::{decode_trail, job_param};

impl PgStore {
    /// Up to `limit` audit events of `job`, in insertion order.
    pub async fn job_events(&self, job: JobId, limit: u32) -> Result<Vec<Event>, StoreError> {
        let id = job_param(job)?;
        let texts: Vec<String> = sqlx::query_scalar(
            "SELECT event::text FROM lease_events WHERE job_id = $1 ORDER BY seq, pos LIMIT $2",
        )
        .bind(id)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(error::map)?;
        decode_trail(job, &texts)
    }
}
