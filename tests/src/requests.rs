//! Requests several integration tests send the same way.

use leasehold_core::{ClaimRequest, Millis, WorkerId};

/// Up to `max` jobs of queue `"q"` for `worker`, on a lease (60 s) no
/// test outlives.
pub fn claim_q(worker: &str, max: u32) -> ClaimRequest {
    ClaimRequest {
        worker: WorkerId::new(worker),
        queue: "q".into(),
        lease: Millis(60_000),
        max,
    }
}
