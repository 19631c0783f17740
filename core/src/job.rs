//! The job row and the values that describe it.
//!
//! Invariants of a [`JobRecord`] (checked by [`JobRecord::check_invariants`]):
//! - `holder` and `expires_at` are set exactly when the job is `running`;
//! - `result` is set only when `succeeded`, and always when `succeeded`;
//! - `attempt ≤ max_attempts`;
//! - `token` counts claims: a job that was never claimed has `Token::NONE`.

use crate::ids::{JobId, Token, WorkerId};
use crate::time::{Millis, StoreTime};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Where a job is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Waiting to be claimed once `run_at` has passed.
    Pending,
    /// Leased to a holder until `expires_at`.
    Running,
    /// Terminal: the handler's result is stored.
    Succeeded,
    /// Terminal: attempts spent, or a non-retryable failure.
    Dead,
    /// Terminal: cancelled before it could finish.
    Cancelled,
}

impl JobState {
    /// Every state, in a fixed order.
    pub const ALL: [JobState; 5] = [
        JobState::Pending,
        JobState::Running,
        JobState::Succeeded,
        JobState::Dead,
        JobState::Cancelled,
    ];

    /// `succeeded`, `dead` and `cancelled` never change again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Succeeded | JobState::Dead | JobState::Cancelled
        )
    }

    /// The lower-case name used in storage and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Dead => "dead",
            JobState::Cancelled => "cancelled",
        }
    }

    /// Parses the lower-case name used in storage.
    pub fn parse(s: &str) -> Option<JobState> {
        JobState::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a caller asks to enqueue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewJob {
    /// Queue name (validated by [`crate::Limits`]).
    pub queue: String,
    /// Opaque payload handed to the handler.
    pub payload: Vec<u8>,
    /// Higher runs first.
    pub priority: i32,
    /// Earliest claim time as a delay from the store's `now` at enqueue.
    pub delay: Millis,
    /// Attempt budget, at least 1.
    pub max_attempts: u32,
    /// Optional key making enqueue idempotent.
    pub idempotency_key: Option<String>,
}

impl NewJob {
    /// Default attempt budget for [`NewJob::new`].
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

    /// A job on `queue` with `payload`, priority 0, no delay and the default budget.
    pub fn new(queue: impl Into<String>, payload: impl Into<Vec<u8>>) -> Self {
        NewJob {
            queue: queue.into(),
            payload: payload.into(),
            priority: 0,
            delay: Millis::ZERO,
            max_attempts: Self::DEFAULT_MAX_ATTEMPTS,
            idempotency_key: None,
        }
    }

    /// Sets the priority.
    pub fn priority(mut self, p: i32) -> Self {
        self.priority = p;
        self
    }

    /// Sets the delay before the first claim.
    pub fn delay(mut self, d: Millis) -> Self {
        self.delay = d;
        self
    }

    /// Sets the attempt budget.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n;
        self
    }

    /// Sets the idempotency key.
    pub fn idempotency_key(mut self, k: impl Into<String>) -> Self {
        self.idempotency_key = Some(k.into());
        self
    }
}

/// How a lease holder ends its lease.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The work is done; the result is stored atomically with `succeeded`.
    Succeeded(Vec<u8>),
    /// The work failed; retried with backoff when `retryable` and budget remains.
    Failed {
        /// Human-readable error.
        error: String,
        /// Whether another attempt may succeed.
        retryable: bool,
    },
    /// Graceful shutdown: back to `pending`, attempt refunded.
    Returned,
    /// Acknowledges a cancel request: `cancelled`.
    Cancelled,
}

impl Outcome {
    /// A short name for logs and events.
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Succeeded(_) => "succeeded",
            Outcome::Failed { .. } => "failed",
            Outcome::Returned => "returned",
            Outcome::Cancelled => "cancelled",
        }
    }

    /// A stable 64-bit digest (FNV-1a over a canonical encoding).
    ///
    /// Stored with the release so that a repeated release can be told apart
    /// from a different one with the same token. It must not change between
    /// versions: adapters persist it.
    pub fn digest(&self) -> u64 {
        let mut h = Fnv::new();
        match self {
            Outcome::Succeeded(r) => {
                h.byte(1);
                h.bytes(r);
            }
            Outcome::Failed { error, retryable } => {
                h.byte(2);
                h.bytes(error.as_bytes());
                h.byte(u8::from(*retryable));
            }
            Outcome::Returned => h.byte(3),
            Outcome::Cancelled => h.byte(4),
        }
        h.finish()
    }
}

/// FNV-1a, 64 bit: tiny, stable across platforms and releases.
pub(crate) struct Fnv(u64);

impl Fnv {
    pub(crate) fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    pub(crate) fn byte(&mut self, b: u8) {
        self.0 ^= u64::from(b);
        self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
    }
    pub(crate) fn bytes(&mut self, bs: &[u8]) {
        for &b in (bs.len() as u64).to_le_bytes().iter() {
            self.byte(b);
        }
        for &b in bs {
            self.byte(b);
        }
    }
    pub(crate) fn u64(&mut self, v: u64) {
        for b in v.to_le_bytes() {
            self.byte(b);
        }
    }
    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
}

/// The last accepted release of a job: which token sent which outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseMark {
    /// Token of the lease that was released.
    pub token: Token,
    /// [`Outcome::digest`] of what it released with.
    pub digest: u64,
}

/// One job row as the store holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Stable id.
    pub id: JobId,
    /// Queue name.
    pub queue: String,
    /// Opaque payload.
    pub payload: Vec<u8>,
    /// Higher runs first.
    pub priority: i32,
    /// Earliest claim time (store time).
    pub run_at: StoreTime,
    /// Current state.
    pub state: JobState,
    /// Attempts started so far.
    pub attempt: u32,
    /// Attempt budget.
    pub max_attempts: u32,
    /// Token of the current or last lease.
    pub token: Token,
    /// Holder of the current lease (running only).
    pub holder: Option<WorkerId>,
    /// Expiry of the current lease in store time (running only).
    pub expires_at: Option<StoreTime>,
    /// A cancel was requested while running.
    pub cancel_requested: bool,
    /// Result bytes (succeeded only).
    pub result: Option<Vec<u8>>,
    /// Last error message, if the last attempt failed.
    pub error: Option<String>,
    /// The last accepted release, for idempotent repeats.
    pub released: Option<ReleaseMark>,
    /// Idempotency key given at enqueue.
    pub idempotency_key: Option<String>,
    /// Optimistic-concurrency counter, bumped by every transition.
    pub version: u64,
    /// Store time of enqueue.
    pub created_at: StoreTime,
    /// Store time of the last transition.
    pub updated_at: StoreTime,
}

impl JobRecord {
    /// Checks the row invariants listed in the module docs.
    ///
    /// Returns a description of the first broken one; transitions assert it
    /// in debug builds, and adapters may call it on loaded rows.
    pub fn check_invariants(&self) -> Result<(), String> {
        let running = self.state == JobState::Running;
        let succeeded = self.state == JobState::Succeeded;
        // Fields set exactly in one state: (name, set, in that state).
        for (field, set, in_its_state) in [
            ("holder", self.holder.is_some(), running),
            ("expires_at", self.expires_at.is_some(), running),
            ("result", self.result.is_some(), succeeded),
        ] {
            if set != in_its_state {
                return Err(format!(
                    "{}: {field} set={set} in state {}",
                    self.id, self.state
                ));
            }
        }
        if self.attempt > self.max_attempts {
            return Err(format!(
                "{}: attempt {} > max_attempts {}",
                self.id, self.attempt, self.max_attempts
            ));
        }
        if running && self.token == Token::NONE {
            return Err(format!("{}: running without a token", self.id));
        }
        if !running && self.cancel_requested {
            return Err(format!(
                "{}: cancel_requested in state {}",
                self.id, self.state
            ));
        }
        Ok(())
    }
}

/// A granted lease, as returned by claim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The job.
    pub job: JobId,
    /// Its fencing token for this lease.
    pub token: Token,
    /// Queue it came from.
    pub queue: String,
    /// The job's payload.
    pub payload: Vec<u8>,
    /// Attempt number this lease runs (1-based).
    pub attempt: u32,
    /// Expiry in store time (informational: workers fence on their own clock).
    pub expires_at: StoreTime,
}

/// Answer to a renew.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Renewal {
    /// The lease is extended.
    Renewed {
        /// New expiry in store time.
        expires_at: StoreTime,
        /// The job was asked to stop.
        cancel_requested: bool,
    },
    /// The lease is gone (swept, reclaimed, or already released).
    Lost,
}

/// Answer to a release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Release {
    /// The outcome is durable (possibly by an earlier identical release).
    Committed,
    /// The token no longer holds the job; nothing changed.
    Lost,
}

/// Answer to a cancel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CancelOutcome {
    /// A pending job is now `cancelled`.
    Cancelled,
    /// A running job now has `cancel_requested`; its holder will stop it.
    Requested,
    /// The job had already ended in this state; nothing changed.
    AlreadyTerminal(JobState),
}

/// Answer to an operator's retry of a job ([`crate::Store::retry_dead`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RetryOutcome {
    /// The `dead` job is `pending` again with a fresh attempt budget.
    Retried,
    /// The job is not `dead` (it is in this state); nothing changed.
    NotDead(JobState),
}

#[cfg(test)]
mod display_tests {
    use super::*;

    /// Logs and errors name a state by its stored spelling.
    #[test]
    fn a_state_displays_as_its_stored_name() {
        for st in JobState::ALL {
            assert_eq!(st.to_string(), st.as_str());
            assert_eq!(JobState::parse(&st.to_string()), Some(st));
        }
        assert_eq!(JobState::Running.to_string(), "running");
    }
}
