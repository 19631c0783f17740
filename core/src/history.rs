//! History events: one record per accepted transition.
//!
//! Every transition in [`crate::transition`] emits exactly one [`Event`].
//! Events are what the simulator's checker and a production audit log
//! (`lease_events`) read; they carry store time only, never a worker's clock.

use crate::ids::{JobId, Token, WorkerId};
use crate::job::{JobState, Outcome};
use crate::time::StoreTime;
use serde::{Deserialize, Serialize};

/// One accepted transition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// The job.
    pub job: JobId,
    /// The job's token after the transition (the lease it concerns).
    pub token: Token,
    /// The worker the transition concerns (claimer, renewer, releaser, or
    /// the swept holder), if any.
    pub worker: Option<WorkerId>,
    /// State before; `None` for enqueue.
    pub from: Option<JobState>,
    /// State after.
    pub to: JobState,
    /// Store time of the transition.
    pub at: StoreTime,
    /// The job's version after the transition.
    pub version: u64,
    /// What happened.
    pub kind: EventKind,
}

/// What a transition did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A new job.
    Enqueued {
        /// Queue name.
        queue: String,
        /// Attempt budget.
        max_attempts: u32,
        /// Earliest claim time.
        run_at: StoreTime,
    },
    /// A lease was granted.
    Claimed {
        /// Attempt number (1-based).
        attempt: u32,
        /// Lease expiry.
        expires_at: StoreTime,
    },
    /// A lease was extended.
    Renewed {
        /// New expiry.
        expires_at: StoreTime,
    },
    /// The holder ended its lease.
    Released {
        /// What it released with (the result bytes for a success).
        outcome: Outcome,
        /// For a retry: when the job may be claimed again.
        run_at: Option<StoreTime>,
    },
    /// An expired lease was reclaimed: a crash report.
    Swept {
        /// When the lease had expired.
        expired_at: StoreTime,
        /// The attempt that was running.
        attempt: u32,
    },
    /// A cancel was requested on a running job.
    CancelRequested,
    /// A pending job was cancelled.
    Cancelled,
    /// An operator took a `dead` job back to `pending` with a fresh
    /// attempt budget ([`crate::transition::retry`]).
    Retried {
        /// The attempts the job had spent when it died.
        attempts_spent: u32,
        /// When it may be claimed again (the store's now).
        run_at: StoreTime,
    },
}

/// A sweep reclaim of an expired lease: the holder is presumed crashed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrashReport {
    /// The job.
    pub job: JobId,
    /// The token of the expired lease.
    pub token: Token,
    /// Its holder.
    pub holder: WorkerId,
    /// When the lease had expired (store time).
    pub expired_at: StoreTime,
    /// When the sweep reclaimed it (store time).
    pub swept_at: StoreTime,
    /// Where the job went: `pending`, `dead` or `cancelled`.
    pub to: JobState,
}
