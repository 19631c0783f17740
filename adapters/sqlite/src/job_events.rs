//! One job's audit trail, for an operator's `leasehold show`: at most
//! `limit` of its events, oldest first. A scan of `lease_events` (it has no
//! index by job: the writers pay nothing for a reader this rare).

use crate::{error, SqliteStore};
use leasehold_core::{Event, JobId, StoreError};
use leasehold_sql::job_trail::read_trail;

/// One job's events (job id, then limit), in commit order.
const TRAIL: &str = "SELECT event FROM lease_events WHERE job_id = ? ORDER BY seq LIMIT ?";

impl SqliteStore {
    /// Up to `limit` audit events of `job`, in commit order.
    pub async fn job_events(&self, job: JobId, limit: u32) -> Result<Vec<Event>, StoreError> {
        read_trail(&self.shared.pool, TRAIL, job, limit, error::map).await
    }
}
