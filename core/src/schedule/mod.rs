//! Schedules: periodic jobs that run exactly once per plan time (spec §3
//! "Schedules", invariant I12).
//!
//! A [`Schedule`] names a queue, a payload, a [`Rule`] that says which
//! store instants are its *plan times*, and a [`CatchUp`] policy for plan
//! times a scheduler noticed late. Schedules live in the store
//! (`put_schedule`); any number of [`crate::worker::Scheduler`]s, on hosts
//! with any clocks, read them and `fire(name, plan_time)` each plan time.
//!
//! Invariants upheld here:
//! - plan times come from the **store's** clock only: [`plan::due`] takes
//!   the store's `now`, and the store's `fire` refuses a plan time after its
//!   own `now` or off the rule;
//! - a plan time is enqueued under the key [`job_key`]`(name, plan_time)`,
//!   unique in every store (an index or primary key), so a second fire of
//!   the same plan time, by whichever scheduler, answers the job the first
//!   one made; user idempotency keys cannot take that namespace
//!   ([`RESERVED_KEY_PREFIX`] is refused at enqueue);
//! - jitter is a hash of (name, plan time), never a random draw, so every
//!   scheduler and every store computes the same delay.

pub mod plan;
pub mod rule;

pub use rule::{CompiledRule, Rule, DEFAULT_TIME_ZONE, MAX_CRON_LEN};

use crate::error::InputError;
use crate::job::{Fnv, NewJob};
use crate::policy::Policy;
use crate::time::{Millis, StoreTime};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Longest schedule name, in bytes.
pub const MAX_SCHEDULE_NAME_LEN: usize = 128;
/// Largest catch-up bound: a scheduler that was away never fires more than
/// this many missed plan times of one schedule at once.
pub const MAX_CATCH_UP: u32 = 1000;
/// Largest jitter a schedule may ask for.
pub const MAX_JITTER: Millis = Millis(3_600_000);
/// Idempotency keys starting with this are reserved for schedule fires; an
/// enqueue naming one is refused.
pub const RESERVED_KEY_PREFIX: &str = "leasehold:schedule:";

const _: () = assert!(MAX_CATCH_UP >= 1);

/// What a scheduler does with plan times it noticed late (older than its
/// misfire grace): a crash, a pause, a partition or a store clock step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    /// Fire only the most recent late plan time.
    Latest,
    /// Fire each late plan time, at most the `max` most recent ones
    /// (1 ≤ `max` ≤ [`MAX_CATCH_UP`]).
    Each {
        /// How many late plan times at most.
        max: u32,
    },
}

impl CatchUp {
    /// How many late plan times this policy fires at most.
    pub fn bound(self) -> u32 {
        match self {
            CatchUp::Latest => 1,
            CatchUp::Each { max } => max,
        }
    }
}

/// A periodic job: every plan time of `rule` enqueues one job of `queue`
/// with `payload`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Schedule {
    /// Unique name: non-empty, at most [`MAX_SCHEDULE_NAME_LEN`] bytes, no
    /// control or whitespace characters.
    pub name: String,
    /// The queue its jobs go to.
    pub queue: String,
    /// The payload of every job.
    pub payload: Vec<u8>,
    /// When its plan times fall.
    pub rule: Rule,
    /// What happens to plan times noticed late.
    pub catch_up: CatchUp,
    /// Each job's start is delayed by up to this much (a hash of name and
    /// plan time picks the delay), so that many schedules sharing plan
    /// times do not all land at once.
    pub jitter: Millis,
    /// The attempt budget of every job.
    pub max_attempts: u32,
}

impl Schedule {
    /// A schedule `name` putting `payload` on `queue` at every plan time of
    /// `rule`, catching up the latest missed plan time only, no jitter, the
    /// default attempt budget.
    pub fn new(
        name: impl Into<String>,
        queue: impl Into<String>,
        payload: impl Into<Vec<u8>>,
        rule: Rule,
    ) -> Self {
        Schedule {
            name: name.into(),
            queue: queue.into(),
            payload: payload.into(),
            rule,
            catch_up: CatchUp::Latest,
            jitter: Millis::ZERO,
            max_attempts: NewJob::DEFAULT_MAX_ATTEMPTS,
        }
    }

    /// Sets the catch-up policy.
    pub fn catch_up(mut self, c: CatchUp) -> Self {
        self.catch_up = c;
        self
    }

    /// Sets the jitter.
    pub fn jitter(mut self, j: Millis) -> Self {
        self.jitter = j;
        self
    }

    /// Sets the attempt budget.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n;
        self
    }

    /// Checks every field against `policy`; a problem is an
    /// [`InputError::BadSchedule`] naming the field (or the queue and
    /// payload errors enqueue gives).
    pub fn validate(&self, policy: &Policy) -> Result<CompiledRule, InputError> {
        check_name(&self.name)?;
        policy.limits.check_queue(&self.queue)?;
        if self.payload.len() > policy.limits.max_payload_bytes {
            return Err(InputError::PayloadTooLarge {
                size: self.payload.len(),
                cap: policy.limits.max_payload_bytes,
            });
        }
        if self.max_attempts == 0 || self.max_attempts > policy.limits.max_attempts_cap {
            return Err(InputError::BadMaxAttempts {
                value: self.max_attempts,
                cap: policy.limits.max_attempts_cap,
            });
        }
        if let CatchUp::Each { max } = self.catch_up {
            if max == 0 || max > MAX_CATCH_UP {
                return Err(InputError::BadSchedule {
                    field: "catch_up.max",
                    reason: format!("{max} must be between 1 and {MAX_CATCH_UP}"),
                });
            }
        }
        if self.jitter > MAX_JITTER {
            return Err(InputError::BadSchedule {
                field: "jitter",
                reason: format!("{} is above the cap of {MAX_JITTER}", self.jitter),
            });
        }
        self.rule.compile()
    }

    /// The delay of the job of `plan_time`: a hash of name and plan time in
    /// `[0, jitter]`.
    pub fn jitter_of(&self, plan_time: StoreTime) -> Millis {
        if self.jitter == Millis::ZERO {
            return Millis::ZERO;
        }
        let mut h = Fnv::new();
        h.bytes(self.name.as_bytes());
        h.u64(plan_time.0 as u64);
        Millis(h.finish() % (self.jitter.0 + 1))
    }
}

/// Checks a schedule name.
pub fn check_name(name: &str) -> Result<(), InputError> {
    let bad = |reason: &str| InputError::BadSchedule {
        field: "name",
        reason: format!("{:?} {reason}", name.chars().take(64).collect::<String>()),
    };
    if name.is_empty() {
        return Err(bad("is empty"));
    }
    if name.len() > MAX_SCHEDULE_NAME_LEN {
        return Err(bad(&format!(
            "is longer than {MAX_SCHEDULE_NAME_LEN} bytes"
        )));
    }
    if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(bad("contains control or whitespace characters"));
    }
    Ok(())
}

/// The idempotency key of the job of `name`'s `plan_time`: unique per
/// (schedule, plan time), outside every key a user may choose.
pub fn job_key(name: &str, plan_time: StoreTime) -> String {
    format!("{RESERVED_KEY_PREFIX}{name}@{}", plan_time.0)
}

/// The (schedule, plan time) a job key names, if it is a schedule's key.
pub fn parse_job_key(key: &str) -> Option<(&str, StoreTime)> {
    let rest = key.strip_prefix(RESERVED_KEY_PREFIX)?;
    let (name, t) = rest.rsplit_once('@')?;
    Some((name, StoreTime(t.parse().ok()?)))
}

/// A schedule as the store holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleRecord {
    /// The schedule.
    pub schedule: Schedule,
    /// Bumped by every put of the same name.
    pub version: u64,
    /// Store time of the first put.
    pub created_at: StoreTime,
    /// Store time of the last put: plan times at or before it are never
    /// caught up by a scheduler (they belong to no version of it).
    pub updated_at: StoreTime,
}

/// Ask to enqueue the job of one plan time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FireRequest {
    /// The schedule.
    pub name: String,
    /// The plan time (store time).
    pub plan_time: StoreTime,
}

/// Page through the schedules in name order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListSchedulesRequest {
    /// Only names after this one.
    pub after: Option<String>,
    /// At most this many.
    pub limit: u32,
}

impl fmt::Display for CatchUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CatchUp::Latest => f.write_str("latest"),
            CatchUp::Each { max } => write!(f, "each (at most {max})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_sit_in_the_reserved_namespace() {
        let k = job_key("nightly@eu", StoreTime(1_700_000_000_000));
        assert!(k.starts_with(RESERVED_KEY_PREFIX));
        assert_eq!(
            parse_job_key(&k),
            Some(("nightly@eu", StoreTime(1_700_000_000_000)))
        );
        assert_eq!(parse_job_key("user-key@5"), None);
    }

    #[test]
    fn jitter_is_a_stable_hash_within_its_bound() {
        let s = Schedule::new("s", "q", "p", Rule::every(Millis(1000))).jitter(Millis(500));
        for t in 0..200 {
            let j = s.jitter_of(StoreTime(t * 1000));
            assert!(j <= Millis(500));
            assert_eq!(j, s.jitter_of(StoreTime(t * 1000)));
        }
        let spread: std::collections::BTreeSet<_> =
            (0..50).map(|t| s.jitter_of(StoreTime(t * 1000))).collect();
        assert!(spread.len() > 10, "jitter spreads: {spread:?}");
        let none = Schedule::new("s", "q", "p", Rule::every(Millis(1000)));
        assert_eq!(none.jitter_of(StoreTime(5)), Millis::ZERO);
        // Both bounds are reached: 0 and the jitter itself.
        let small = Schedule::new("s", "q", "p", Rule::every(Millis(1000))).jitter(Millis(2));
        let reached: std::collections::BTreeSet<u64> = (0..60)
            .map(|t| small.jitter_of(StoreTime(t * 1000)).0)
            .collect();
        assert_eq!(reached, [0, 1, 2].into_iter().collect());
    }

    #[test]
    fn bad_schedules_name_their_field() {
        let p = Policy::default();
        let base = || Schedule::new("s", "q", "p", Rule::every(Millis(1000)));
        let field = |s: Schedule| match s.validate(&p) {
            Err(InputError::BadSchedule { field, .. }) => field.to_string(),
            Err(e) => e.to_string(),
            Ok(_) => "ok".into(),
        };
        assert_eq!(field(base()), "ok");
        let mut s = base();
        s.name = String::new();
        assert_eq!(field(s), "name");
        let mut s = base();
        s.name = "a b".into();
        assert_eq!(field(s), "name");
        assert_eq!(
            field(base().catch_up(CatchUp::Each { max: 0 })),
            "catch_up.max"
        );
        assert_eq!(
            field(base().catch_up(CatchUp::Each {
                max: MAX_CATCH_UP + 1
            })),
            "catch_up.max"
        );
        assert_eq!(
            field(base().catch_up(CatchUp::Each { max: MAX_CATCH_UP })),
            "ok"
        );
        assert_eq!(field(base().jitter(Millis(MAX_JITTER.0 + 1))), "jitter");
        assert_eq!(field(base().jitter(MAX_JITTER)), "ok");
        let cap = p.limits.max_payload_bytes;
        let with_payload =
            |n: usize| Schedule::new("s", "q", vec![b'x'; n], Rule::every(Millis(1000)));
        assert_eq!(field(with_payload(cap)), "ok");
        assert!(field(with_payload(cap + 1)).contains("payload"));
        assert_eq!(CatchUp::Latest.to_string(), "latest");
        assert_eq!(CatchUp::Each { max: 3 }.to_string(), "each (at most 3)");
        let mut s = base();
        s.queue = String::new();
        assert!(field(s).contains("queue"));
        assert!(field(base().max_attempts(0)).contains("max_attempts"));
        let mut s = base();
        s.name = "n".repeat(MAX_SCHEDULE_NAME_LEN);
        assert_eq!(field(s), "ok");
        let mut s = base();
        s.name = "n".repeat(MAX_SCHEDULE_NAME_LEN + 1);
        assert_eq!(field(s), "name");
        let cap = p.limits.max_attempts_cap;
        assert_eq!(field(base().max_attempts(cap)), "ok");
        assert!(field(base().max_attempts(cap + 1)).contains("max_attempts"));
    }
}
