//! The lease state machine: one pure transition per operation.
//!
//! Each function takes the current row and the store's `now`, and returns
//! either the new row plus its [`Event`], an answer that changes nothing
//! (`Lost`, a repeated release), or a typed rejection. None does I/O, reads a
//! clock or draws randomness: backoff jitter is a seeded hash
//! ([`crate::Backoff::delay`]).
//!
//! Invariants upheld by every transition (asserted in debug builds):
//! - the new row passes [`JobRecord::check_invariants`];
//! - `version` increases by exactly one;
//! - the token never decreases, and increases by one exactly on claim;
//! - a terminal row is never changed, except that an operator's
//!   [`retry`] takes a `dead` one back to `pending`;
//! - the event names the row's new state, token and version.
//!
//! Adapters load rows, call these functions, and persist the returned row
//! only if the stored `version` is still the one they loaded.

mod cancel;
mod claim;
mod enqueue;
mod fire;
mod prune;
mod release;
mod renew;
mod retry;
mod sweep;

pub use cancel::cancel;
pub use claim::{claim, claim_capacity, validate_claim};
pub use enqueue::{enqueue, validate_new_job, EnqueuePlan};
pub use fire::{fire, fire_key, put_schedule, FirePlan, PutPlan};
pub use prune::{
    prunable, prune, refuse_pruned_plan_time, PrunePlan, PruneRequest, AUDIT_EVENTS_PER_JOB,
    MAX_PRUNE_LIMIT, MIN_RETENTION,
};
pub use release::{release, validate_outcome, ReleasePlan};
pub use renew::{renew, RenewPlan};
pub use retry::retry;
pub use sweep::sweep;

use crate::history::{Event, EventKind};
use crate::ids::WorkerId;
use crate::job::{JobRecord, JobState};
use crate::time::StoreTime;

/// A transition that changes a row: the row to persist and its event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The new row.
    pub record: JobRecord,
    /// The history event describing the change.
    pub event: Event,
}

/// Copies `old` as the start of its next version.
fn next_version(old: &JobRecord, now: StoreTime) -> JobRecord {
    debug_assert!(!old.state.is_terminal(), "terminal rows never change");
    let mut new = old.clone();
    new.version = old.version + 1;
    new.updated_at = now;
    new
}

/// Wraps a new row with its event and checks the transition invariants.
fn finish(
    old: Option<&JobRecord>,
    record: JobRecord,
    worker: Option<WorkerId>,
    kind: EventKind,
) -> Applied {
    if let Some(old) = old {
        debug_assert_eq!(record.version, old.version + 1, "version bumps by one");
        debug_assert!(record.token >= old.token, "tokens never decrease");
        // An operator's retry is the one transition out of a terminal
        // state (`dead` only, see `retry.rs`).
        let retried = matches!(kind, EventKind::Retried { .. }) && old.state == JobState::Dead;
        debug_assert!(
            !old.state.is_terminal() || retried,
            "terminal rows never change"
        );
        debug_assert_eq!(record.id, old.id);
    }
    if let Err(e) = record.check_invariants() {
        debug_assert!(false, "transition broke a row invariant: {e}");
    }
    let event = Event {
        job: record.id,
        token: record.token,
        worker,
        from: old.map(|o| o.state),
        to: record.state,
        at: record.updated_at,
        version: record.version,
        kind,
    };
    Applied { record, event }
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Rows in each state, for the transition tests.
    use crate::ids::{JobId, Token, WorkerId};
    use crate::job::{JobRecord, JobState};
    use crate::time::StoreTime;

    pub fn pending() -> JobRecord {
        JobRecord {
            id: JobId(7),
            queue: "q".into(),
            payload: b"p".to_vec(),
            priority: 0,
            run_at: StoreTime(1000),
            state: JobState::Pending,
            attempt: 0,
            max_attempts: 3,
            token: Token::NONE,
            holder: None,
            expires_at: None,
            cancel_requested: false,
            result: None,
            error: None,
            released: None,
            idempotency_key: None,
            version: 1,
            created_at: StoreTime(1000),
            updated_at: StoreTime(1000),
        }
    }

    pub fn running(token: u64, attempt: u32, expires_at: i64) -> JobRecord {
        let mut r = pending();
        r.state = JobState::Running;
        r.token = Token(token);
        r.attempt = attempt;
        r.holder = Some(WorkerId::new("w1"));
        r.expires_at = Some(StoreTime(expires_at));
        r.version = 2;
        r
    }
}
