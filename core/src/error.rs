//! Typed errors: bad input, bad configuration, and store failures.
//!
//! [`StoreError::Unavailable`] is the only error whose outcome is unknown: the
//! request may or may not have committed. Every other error is a definite
//! rejection that changed nothing.

use crate::ids::{JobId, Token};
use crate::job::JobState;
use crate::time::{Millis, StoreTime};
use thiserror::Error;

/// Input that no transition accepts. Nothing changed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum InputError {
    /// The queue name is empty, too long or has control characters.
    #[error("bad queue name {queue:?}: {reason}")]
    BadQueueName {
        /// The offending name (truncated).
        queue: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A payload is larger than the cap.
    #[error("payload of {size} bytes exceeds the cap of {cap} bytes")]
    PayloadTooLarge {
        /// Its size.
        size: usize,
        /// The configured cap.
        cap: usize,
    },
    /// A result is larger than the cap.
    #[error("result of {size} bytes for {job} exceeds the cap of {cap} bytes")]
    ResultTooLarge {
        /// The job.
        job: JobId,
        /// Its size.
        size: usize,
        /// The configured cap.
        cap: usize,
    },
    /// A duration is zero, too long or otherwise unusable.
    #[error("bad {what} duration {value}: {reason}")]
    BadDuration {
        /// Which duration.
        what: &'static str,
        /// Its value.
        value: Millis,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The attempt budget is zero or above the cap.
    #[error("max_attempts {value} must be between 1 and {cap}")]
    BadMaxAttempts {
        /// The value given.
        value: u32,
        /// The configured cap.
        cap: u32,
    },
    /// The idempotency key is empty or too long.
    #[error("bad idempotency key: {reason}")]
    BadIdempotencyKey {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The idempotency key was already used for a different job spec.
    #[error("idempotency key {key:?} already names {existing} with a different spec")]
    IdempotencyConflict {
        /// The key.
        key: String,
        /// The job it names.
        existing: JobId,
    },
    /// A claim asked for zero jobs or more than the batch cap.
    #[error("claim batch size {value} must be between 1 and {cap}")]
    BadBatch {
        /// The value given.
        value: u32,
        /// The configured cap.
        cap: u32,
    },
    /// No job has this id.
    #[error("unknown job {0}")]
    UnknownJob(JobId),
    /// A release named a token the job never had.
    #[error("{job} has never had token {token}")]
    UnknownToken {
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
    },
    /// A schedule field no store accepts (`name`, `rule.cron`,
    /// `rule.time_zone`, `rule.interval`, `catch_up.max`, `jitter`).
    #[error("bad schedule: {field}: {reason}")]
    BadSchedule {
        /// The offending field.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The store does not implement this operation (a store written
    /// before it existed keeps the trait's default).
    #[error("this store does not support {operation}")]
    Unsupported {
        /// The operation.
        operation: &'static str,
    },
    /// No schedule has this name.
    #[error("unknown schedule {0:?}")]
    UnknownSchedule(String),
    /// A fire named an instant the schedule does not plan, or one after the
    /// store's now.
    #[error("schedule {schedule:?} cannot fire at {plan_time}: {reason}")]
    NotAPlanTime {
        /// The schedule.
        schedule: String,
        /// The instant given.
        plan_time: StoreTime,
        /// Why not.
        reason: &'static str,
    },
    /// A prune's retention is shorter than its floor: the job retention
    /// below [`crate::transition::MIN_RETENTION`], or the audit retention
    /// below the job retention.
    #[error("{what} {value} is shorter than its minimum {min}")]
    BadRetention {
        /// Which retention (`retention` or `audit_retention`).
        what: &'static str,
        /// The value given.
        value: Millis,
        /// The shortest accepted.
        min: Millis,
    },
    /// A prune asked for zero jobs or more than the cap.
    #[error("prune limit {value} must be between 1 and {cap}")]
    BadPruneLimit {
        /// The value given.
        value: u32,
        /// The cap ([`crate::transition::MAX_PRUNE_LIMIT`]).
        cap: u32,
    },
    /// A fire of a plan time at or before the latest one whose job was
    /// pruned: it fired once, and its job is gone.
    #[error("schedule {schedule:?} plan time {plan_time} fired and was pruned (pruned through {through})")]
    PlanTimePruned {
        /// The schedule.
        schedule: String,
        /// The plan time given.
        plan_time: StoreTime,
        /// The latest pruned plan time the store keeps for the schedule.
        through: StoreTime,
    },
}

/// A configuration that cannot work, rejected at build time.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("invalid configuration: {field}: {reason}")]
pub struct ConfigError {
    /// The offending field.
    pub field: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

impl ConfigError {
    /// A config error for `field`.
    pub fn new(field: &'static str, reason: impl Into<String>) -> Self {
        ConfigError {
            field,
            reason: reason.into(),
        }
    }
}

/// Failure of a [`crate::Store`] operation.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum StoreError {
    /// Definite rejection of bad input; nothing changed.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The outcome is unknown: the request may or may not have committed
    /// (connection lost, timeout, store crash). Retry idempotently.
    #[error("store unavailable (outcome unknown): {0}")]
    Unavailable(String),
    /// A concurrent writer changed the row between load and write; nothing
    /// changed. Adapters retry these internally a bounded number of times.
    #[error("write conflict on {0}; nothing changed")]
    Conflict(JobId),
    /// The store holds a row that breaks an invariant (corruption or a bug).
    #[error("corrupt row: {0}")]
    Corrupt(String),
}

impl StoreError {
    /// Whether the request may have committed (retry only idempotent requests).
    pub fn is_unknown_outcome(&self) -> bool {
        matches!(self, StoreError::Unavailable(_))
    }

    /// Whether sending the same request again may succeed: an unknown
    /// outcome ([`StoreError::Unavailable`]), or a [`StoreError::Conflict`]
    /// (nothing applied; the contention passes). A worker retries its
    /// renews and releases on these and never gives up a lease for one: a
    /// store under contention is not a crashed worker.
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Unavailable(_) | StoreError::Conflict(_))
    }
}

/// Why a transition refused to act (not an error: an answer such as `Lost`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The job is not in a state the operation accepts.
    WrongState(JobState),
    /// The token does not hold the lease.
    StaleToken {
        /// Token the caller named.
        given: Token,
        /// Token the job has.
        current: Token,
    },
    /// `run_at` is still in the future.
    NotYetDue,
    /// The lease has not expired yet.
    NotExpired,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only an unavailable store leaves the outcome unknown; a conflict or
    /// a refusal changed nothing, so retrying those is always safe.
    #[test]
    fn only_an_unavailable_store_leaves_the_outcome_unknown() {
        let input = StoreError::Input(InputError::BadQueueName {
            queue: String::new(),
            reason: "empty",
        });
        let cases = [
            (StoreError::Unavailable("down".into()), true, true),
            (StoreError::Conflict(JobId(1)), false, true),
            (input, false, false),
            (StoreError::Corrupt("row".into()), false, false),
        ];
        for (e, unknown, transient) in cases {
            assert_eq!(e.is_unknown_outcome(), unknown, "{e}");
            assert_eq!(e.is_transient(), transient, "{e}");
        }
    }
}
