//! One job's audit trail as both SQL adapters read it for an operator's
//! `leasehold show`: the statement's parameter and the events decoded from
//! their stored JSON text.

use crate::job_columns::to_i64;
use leasehold_core::{Event, JobId, StoreError};

/// `job` as the `job_id` parameter of a trail query.
pub fn job_param(job: JobId) -> Result<i64, StoreError> {
    to_i64(job.0)
}

/// The events of `job`, from the JSON text each was stored as.
pub fn decode_trail(job: JobId, texts: &[String]) -> Result<Vec<Event>, StoreError> {
    texts
        .iter()
        .map(|t| {
            serde_json::from_str(t).map_err(|e| StoreError::Corrupt(format!("event of {job}: {e}")))
        })
        .collect()
}
