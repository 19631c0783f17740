//! One job's audit trail, for an operator's `leasehold show`: at most
//! `limit` of its events, in insertion order, through the `lease_events`
//! view (a scan of `leasehold_audit`: it has no index by job, so the
//! writers pay nothing for a reader this rare).

use crate::{error, PgStore};
use leasehold_core::{Event, JobId, StoreError};
use leasehold_sql::job_trail::read_trail;

/// One job's events (job id, then limit), in insertion order.
const TRAIL: &str =
    "SELECT event::text FROM lease_events WHERE job_id = $1 ORDER BY seq, pos LIMIT $2";

impl PgStore {
    /// Up to `limit` audit events of `job`, in insertion order.
    pub async fn job_events(&self, job: JobId, limit: u32) -> Result<Vec<Event>, StoreError> {
        read_trail(&self.pool, TRAIL, job, limit, error::map).await
    }
}
