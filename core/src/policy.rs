//! Store-side policy: input limits, retry backoff and queue parallelism.
//!
//! A [`Policy`] is built once per store with [`PolicyBuilder`], which rejects
//! nonsense (zero caps, a backoff cap below its base, a zero parallelism
//! limit) at build time so that the transitions never see it.

use crate::error::{ConfigError, InputError};
use crate::ids::{JobId, Token};
use crate::job::Fnv;
use crate::time::Millis;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Default longest queue name, in bytes.
pub const DEFAULT_MAX_QUEUE_LEN: usize = 128;
/// Default largest payload, in bytes.
pub const DEFAULT_MAX_PAYLOAD_BYTES: usize = 1 << 20;
/// Default largest result, in bytes.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 1 << 20;
/// Default largest error message, in bytes (longer ones are truncated, not rejected).
pub const DEFAULT_MAX_ERROR_BYTES: usize = 4096;
/// Default longest idempotency key, in bytes.
pub const DEFAULT_MAX_KEY_LEN: usize = 256;
/// Default longest lease a claim or renew may ask for.
pub const DEFAULT_MAX_LEASE: Millis = Millis(24 * 3600 * 1000);
/// Largest `max_key_len` a policy may set: keys are indexed for uniqueness,
/// and a PostgreSQL btree entry holds at most 2704 bytes.
pub const MAX_KEY_LEN_CAP: usize = 1024;
/// Default largest attempt budget.
pub const DEFAULT_MAX_ATTEMPTS_CAP: u32 = 1000;
/// Default most jobs one claim may take.
pub const DEFAULT_MAX_CLAIM_BATCH: u32 = 1000;
/// Default first retry delay.
pub const DEFAULT_BACKOFF_BASE: Millis = Millis(1000);
/// Default longest retry delay.
pub const DEFAULT_BACKOFF_CAP: Millis = Millis(5 * 60 * 1000);
/// Default jitter, in per-mille of the delay (±).
pub const DEFAULT_JITTER_PERMILLE: u32 = 200;

const _: () = assert!(DEFAULT_BACKOFF_BASE.0 <= DEFAULT_BACKOFF_CAP.0);
const _: () = assert!(DEFAULT_JITTER_PERMILLE < 1000);
const _: () = assert!(DEFAULT_MAX_KEY_LEN <= MAX_KEY_LEN_CAP);

/// Limits on user input, enforced by every transition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Longest queue name in bytes.
    pub max_queue_len: usize,
    /// Largest payload in bytes.
    pub max_payload_bytes: usize,
    /// Largest result in bytes.
    pub max_result_bytes: usize,
    /// Error messages are truncated to this many bytes.
    pub max_error_bytes: usize,
    /// Longest idempotency key in bytes.
    pub max_key_len: usize,
    /// Longest lease a claim or renew may ask for.
    pub max_lease: Millis,
    /// Largest attempt budget.
    pub max_attempts_cap: u32,
    /// Most jobs one claim may take.
    pub max_claim_batch: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_queue_len: DEFAULT_MAX_QUEUE_LEN,
            max_payload_bytes: DEFAULT_MAX_PAYLOAD_BYTES,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            max_error_bytes: DEFAULT_MAX_ERROR_BYTES,
            max_key_len: DEFAULT_MAX_KEY_LEN,
            max_lease: DEFAULT_MAX_LEASE,
            max_attempts_cap: DEFAULT_MAX_ATTEMPTS_CAP,
            max_claim_batch: DEFAULT_MAX_CLAIM_BATCH,
        }
    }
}

impl Limits {
    /// Checks a queue name: non-empty, at most `max_queue_len` bytes, no
    /// control characters or whitespace.
    pub fn check_queue(&self, queue: &str) -> Result<(), InputError> {
        let bad = |reason: &'static str| InputError::BadQueueName {
            queue: queue.chars().take(64).collect(),
            reason,
        };
        if queue.is_empty() {
            return Err(bad("empty"));
        }
        if queue.len() > self.max_queue_len {
            return Err(bad("too long"));
        }
        if queue.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(bad("contains control or whitespace characters"));
        }
        Ok(())
    }

    /// Checks a lease duration: non-zero and at most `max_lease`.
    pub fn check_lease(&self, lease: Millis) -> Result<(), InputError> {
        if lease == Millis::ZERO {
            return Err(InputError::BadDuration {
                what: "lease",
                value: lease,
                reason: "must be greater than zero",
            });
        }
        if lease > self.max_lease {
            return Err(InputError::BadDuration {
                what: "lease",
                value: lease,
                reason: "exceeds the store's max_lease",
            });
        }
        Ok(())
    }
}

/// Exponential retry backoff with a cap and deterministic jitter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backoff {
    /// Delay before the second attempt.
    pub base: Millis,
    /// Longest delay.
    pub cap: Millis,
    /// Jitter as ± per-mille of the delay.
    pub jitter_permille: u32,
    /// Seed mixed into the jitter so that runs replay exactly.
    pub seed: u64,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: DEFAULT_BACKOFF_BASE,
            cap: DEFAULT_BACKOFF_CAP,
            jitter_permille: DEFAULT_JITTER_PERMILLE,
            seed: 0,
        }
    }
}

impl Backoff {
    /// Delay after failed attempt number `attempt` (1-based) of `job` under `token`.
    ///
    /// `base·2^(attempt−1)` capped at `cap`, then moved by up to
    /// ± `jitter_permille`‰ (never above `cap`). The jitter is a hash of
    /// (seed, job, token): a seeded source, identical on every adapter.
    pub fn delay(&self, job: JobId, token: Token, attempt: u32) -> Millis {
        let shift = attempt.saturating_sub(1).min(40);
        let raw = self.base.0.saturating_mul(1u64 << shift).min(self.cap.0);
        let span = raw.saturating_mul(u64::from(self.jitter_permille)) / 1000;
        let delay = if span == 0 {
            raw
        } else {
            let mut h = Fnv::new();
            h.u64(self.seed);
            h.u64(job.0);
            h.u64(token.0);
            let r = h.finish() % (2 * span + 1);
            (raw - span + r).min(self.cap.0)
        };
        debug_assert!(delay <= self.cap.0, "backoff respects its cap");
        Millis(delay)
    }

    /// The longest delay this policy can produce.
    pub fn max_delay(&self) -> Millis {
        self.cap
    }
}

/// Everything a store needs to evaluate transitions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Input limits.
    pub limits: Limits,
    /// Retry backoff.
    pub backoff: Backoff,
    /// Most running jobs per queue; queues not listed are unlimited.
    pub parallelism: BTreeMap<String, u32>,
}

impl Policy {
    /// Starts a builder from the defaults.
    pub fn builder() -> PolicyBuilder {
        PolicyBuilder {
            policy: Policy::default(),
        }
    }

    /// The parallelism limit of `queue`, if any.
    pub fn parallelism_of(&self, queue: &str) -> Option<u32> {
        self.parallelism.get(queue).copied()
    }
}

/// Builds a validated [`Policy`].
#[derive(Clone, Debug)]
pub struct PolicyBuilder {
    policy: Policy,
}

impl PolicyBuilder {
    /// Replaces the input limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.policy.limits = limits;
        self
    }

    /// Replaces the backoff.
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.policy.backoff = backoff;
        self
    }

    /// Limits how many jobs of `queue` may run at once.
    pub fn parallelism(mut self, queue: impl Into<String>, limit: u32) -> Self {
        self.policy.parallelism.insert(queue.into(), limit);
        self
    }

    /// Validates and returns the policy.
    pub fn build(self) -> Result<Policy, ConfigError> {
        let p = self.policy;
        let l = &p.limits;
        let positive = [
            ("limits.max_queue_len", l.max_queue_len as u64),
            ("limits.max_error_bytes", l.max_error_bytes as u64),
            ("limits.max_key_len", l.max_key_len as u64),
            ("limits.max_lease", l.max_lease.0),
            ("limits.max_attempts_cap", u64::from(l.max_attempts_cap)),
            ("limits.max_claim_batch", u64::from(l.max_claim_batch)),
            ("backoff.base", p.backoff.base.0),
        ];
        for (field, v) in positive {
            if v == 0 {
                return Err(ConfigError::new(field, "must be greater than zero"));
            }
        }
        if l.max_key_len > MAX_KEY_LEN_CAP {
            return Err(ConfigError::new(
                "limits.max_key_len",
                format!("must be at most {MAX_KEY_LEN_CAP} bytes (the key is indexed; PostgreSQL's btree entries hold at most 2704 bytes)"),
            ));
        }
        if p.backoff.cap < p.backoff.base {
            return Err(ConfigError::new(
                "backoff.cap",
                "must be at least backoff.base",
            ));
        }
        if p.backoff.jitter_permille >= 1000 {
            return Err(ConfigError::new(
                "backoff.jitter_permille",
                "must be below 1000",
            ));
        }
        for (queue, &limit) in &p.parallelism {
            l.check_queue(queue)
                .map_err(|e| ConfigError::new("parallelism", e.to_string()))?;
            if limit == 0 {
                return Err(ConfigError::new(
                    "parallelism",
                    format!("limit for queue {queue:?} must be greater than zero"),
                ));
            }
        }
        Ok(p)
    }
}

#[cfg(test)]
mod key_cap_tests {
    use super::*;

    /// The defaults (`DEFAULT_BACKOFF_BASE`, `DEFAULT_BACKOFF_CAP`):
    /// retries start after 1 s and wait at most 5 minutes.
    #[test]
    fn the_default_backoff_runs_from_one_second_to_five_minutes() {
        let b = Backoff::default();
        assert_eq!(b.base, Millis(1_000));
        assert_eq!(b.max_delay(), Millis(300_000));
    }

    #[test]
    fn the_longest_backoff_is_its_cap() {
        let b = Backoff {
            cap: Millis(7_000),
            ..Backoff::default()
        };
        assert_eq!(b.max_delay(), Millis(7_000));
        assert!(b.delay(JobId(1), Token(1), 30) <= b.max_delay());
    }

    /// The distinct first-retry delays of jobs 1 to `jobs` under a backoff
    /// of `base` with ±100 ‰ jitter drawn from `seed` (capped at 60 s).
    fn first_delays_of_jobs(base: Millis, seed: u64, jobs: u64) -> std::collections::BTreeSet<u64> {
        let b = Backoff {
            base,
            cap: Millis(60_000),
            jitter_permille: 100,
            seed,
        };
        (1..=jobs)
            .map(|j| b.delay(JobId(j), Token(1), 1).0)
            .collect()
    }

    /// A jitter of ±100 ‰ on a 10 s delay spreads the delays of different
    /// jobs over 9 s to 11 s: they differ, and stay within the span.
    #[test]
    fn jitter_spreads_delays_over_its_span() {
        let delays = first_delays_of_jobs(Millis(10_000), 7, 50);
        assert!(
            delays.iter().all(|d| (9_000..=11_000).contains(d)),
            "{delays:?}"
        );
        assert!(delays.len() > 10, "the delays differ: {delays:?}");
        assert!(
            delays.first().unwrap() < &9_500 && delays.last().unwrap() > &10_500,
            "the span is ±1 s, not less: {delays:?}"
        );
    }

    /// The smallest jitter, one millisecond each way, reaches both ends.
    #[test]
    fn a_jitter_of_one_millisecond_reaches_both_ends() {
        let delays = first_delays_of_jobs(Millis(10), 1, 60);
        assert_eq!(delays, [9, 10, 11].into_iter().collect());
    }

    #[test]
    fn a_queue_name_may_be_max_queue_len_bytes_long() {
        let l = Limits::default();
        assert!(l.check_queue(&"q".repeat(l.max_queue_len)).is_ok());
        assert!(l.check_queue(&"q".repeat(l.max_queue_len + 1)).is_err());
    }

    #[test]
    fn a_backoff_cap_may_equal_its_base_but_not_be_below_it() {
        let with = |base: u64, cap: u64| {
            Policy::builder()
                .backoff(Backoff {
                    base: Millis(base),
                    cap: Millis(cap),
                    ..Backoff::default()
                })
                .build()
        };
        assert!(with(1_000, 1_000).is_ok());
        assert_eq!(with(1_000, 999).unwrap_err().field, "backoff.cap");
    }

    #[test]
    fn a_key_length_beyond_what_an_index_holds_is_refused_at_build() {
        let limits = |n| Limits {
            max_key_len: n,
            ..Limits::default()
        };
        assert!(Policy::builder()
            .limits(limits(MAX_KEY_LEN_CAP))
            .build()
            .is_ok());
        let e = Policy::builder()
            .limits(limits(MAX_KEY_LEN_CAP + 1))
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("max_key_len"), "{e}");
    }
}
