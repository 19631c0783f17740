//! The workload one seed draws: when each job is enqueued (and cancelled),
//! whether its payload is poison, and how each attempt of its handler
//! behaves.
//!
//! Attempt behaviour is a function of `(seed, job index, token)`, so it does
//! not depend on which worker runs the attempt or when.
//!
//! ## Sizes
//! By default payloads, results and error messages are short. The workload
//! knobs `payload_bytes`, `result_bytes` and `error_bytes` make them exactly
//! that long (to run at the store's size limits):
//! - a payload is `job:<index>` (or `poison:<index>`), then [`PAD_SEP`], then
//!   the bytes 0x00..=0x09 over and over (binary, NUL included, and each
//!   only two characters in the wire's JSON); the decoder reads only up to
//!   the separator;
//! - a result is `result:<job>:<token>:`, a NUL and a 0xFF byte, then
//!   pseudo-random bytes derived from job and token, cut to the size;
//! - an error message is the usual text, a space, then printable ASCII, cut
//!   to the size (the store truncates one above its limit).

use crate::config::SimConfig;
use crate::rng::SimRng;

/// Idempotency key prefix of simulated jobs: `job-<index>`.
pub const KEY_PREFIX: &str = "job-";
/// Payload prefix of a decodable job.
const PAYLOAD_OK: &str = "job:";
/// Payload prefix of a poison job (the handler cannot decode it).
const PAYLOAD_POISON: &str = "poison:";
/// Separates a padded payload's `job:<index>` from its padding.
pub const PAD_SEP: u8 = b'|';
/// Error message of a retryable simulated failure.
const FAILURE: &str = "simulated failure";
/// Error message of a permanent simulated failure.
const PERMANENT_FAILURE: &str = "simulated permanent failure";
/// Longest delay between a job's enqueue and its cancel.
const CANCEL_WITHIN_MS: u64 = 30_000;

/// One planned job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedJob {
    /// Index (0-based); the idempotency key is `job-<index>`.
    pub index: u32,
    /// Queue.
    pub queue: String,
    /// True time of the enqueue.
    pub enqueue_at: u64,
    /// Whether the payload is poison.
    pub poison: bool,
    /// True time of a cancel, if the client cancels it.
    pub cancel_at: Option<u64>,
    /// Exact payload size (0 = unpadded).
    pub payload_bytes: u64,
}

impl PlannedJob {
    /// The idempotency key.
    pub fn key(&self) -> String {
        format!("{KEY_PREFIX}{}", self.index)
    }

    /// The payload bytes.
    pub fn payload(&self) -> Vec<u8> {
        let prefix = if self.poison {
            PAYLOAD_POISON
        } else {
            PAYLOAD_OK
        };
        let mut p = format!("{prefix}{}", self.index).into_bytes();
        let want = self.payload_bytes as usize;
        if want > 0 {
            p.push(PAD_SEP);
            let start = p.len();
            p.extend((start..want.max(start)).map(|i| ((i + self.index as usize) % 10) as u8));
            p.truncate(want);
        }
        p
    }
}

/// The smallest `workload.payload_bytes` that still carries every job's
/// index and the padding separator (so every payload decodes).
pub fn min_payload_bytes(jobs: u32) -> u64 {
    let last = jobs.saturating_sub(1);
    (PAYLOAD_POISON.len().max(PAYLOAD_OK.len()) + last.to_string().len() + 1) as u64
}

/// How one attempt of a handler behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptKind {
    /// Runs, then succeeds.
    Succeed,
    /// Runs, then fails; retryable or not.
    Fail {
        /// Whether the failure is retryable.
        retryable: bool,
    },
    /// Hangs until stopped (or until the faults heal).
    Hang,
}

/// One attempt's plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// Run time on the worker's clock.
    pub run_ms: u64,
    /// Behaviour.
    pub kind: AttemptKind,
}

/// The workload of one seed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkloadPlan {
    /// Jobs by index.
    pub jobs: Vec<PlannedJob>,
    seed: u64,
    run_lo: u64,
    run_hi: u64,
    fail_rate_ppm: u64,
    permanent_ppm: u64,
    hang_ppm: u64,
    result_bytes: u64,
    error_bytes: u64,
}

fn ppm(p: f64) -> u64 {
    (p.clamp(0.0, 1.0) * 1e6) as u64
}

impl WorkloadPlan {
    /// The workload `seed` draws from `cfg`.
    pub fn new(cfg: &SimConfig, seed: u64) -> Self {
        let w = &cfg.workload;
        let mut rng = SimRng::derive(seed, "workload", &[]);
        let over = w.enqueue_over.as_ms();
        let jobs = (0..w.jobs)
            .map(|index| {
                let queue = w.queues[index as usize % w.queues.len().max(1)].clone();
                let enqueue_at = rng.range_u64(0, over);
                let poison = rng.chance(w.poison_rate);
                let cancel_at = rng
                    .chance(w.cancel_rate)
                    .then(|| enqueue_at + rng.range_u64(0, CANCEL_WITHIN_MS));
                PlannedJob {
                    index,
                    queue,
                    enqueue_at,
                    poison,
                    cancel_at,
                    payload_bytes: w.payload_bytes,
                }
            })
            .collect();
        WorkloadPlan {
            jobs,
            seed,
            run_lo: w.run_time.lo.as_ms(),
            run_hi: w.run_time.hi.as_ms(),
            fail_rate_ppm: ppm(w.fail_rate),
            permanent_ppm: ppm(w.permanent_share),
            hang_ppm: ppm(w.hang_rate),
            result_bytes: w.result_bytes,
            error_bytes: w.error_bytes,
        }
    }

    /// Decodes a payload into a job index (padding after [`PAD_SEP`] is
    /// skipped); `None` for poison.
    pub fn decode(payload: &[u8]) -> Option<u32> {
        let head = payload
            .iter()
            .position(|&b| b == PAD_SEP)
            .map_or(payload, |i| &payload[..i]);
        std::str::from_utf8(head)
            .ok()?
            .strip_prefix(PAYLOAD_OK)?
            .parse()
            .ok()
    }

    /// The behaviour of attempt `token` of job `index`.
    pub fn attempt(&self, index: u32, token: u64) -> Attempt {
        let mut rng = SimRng::derive(self.seed, "attempt", &[u64::from(index), token]);
        let run_ms = rng.range_u64(self.run_lo, self.run_hi);
        let roll = rng.range_u64(0, 999_999);
        let kind = if roll < self.hang_ppm {
            AttemptKind::Hang
        } else if rng.range_u64(0, 999_999) < self.fail_rate_ppm {
            AttemptKind::Fail {
                retryable: rng.range_u64(0, 999_999) >= self.permanent_ppm,
            }
        } else {
            AttemptKind::Succeed
        };
        Attempt { run_ms, kind }
    }

    /// The short result bytes an attempt produces (no `result_bytes` set).
    pub fn result_of(job: u64, token: u64) -> Vec<u8> {
        format!("result:{job}:{token}").into_bytes()
    }

    /// The result bytes of attempt `token` of job `job` under this workload.
    pub fn result(&self, job: u64, token: u64) -> Vec<u8> {
        if self.result_bytes == 0 {
            Self::result_of(job, token)
        } else {
            Self::result_sized(job, token, self.result_bytes as usize)
        }
    }

    /// Exactly `n` deterministic binary bytes for attempt `token` of job
    /// `job`: `result:<job>:<token>:`, a NUL, a 0xFF, then splitmix64 bytes
    /// seeded by job and token, cut to `n`.
    pub fn result_sized(job: u64, token: u64, n: usize) -> Vec<u8> {
        let mut out = format!("result:{job}:{token}:").into_bytes();
        out.extend_from_slice(&[0x00, 0xff]);
        out.reserve(n.saturating_sub(out.len()));
        let mut x = job.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ token.rotate_left(32) ^ 0x5eed;
        while out.len() < n {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let z = crate::rng::mix64(x);
            let take = (n - out.len()).min(8);
            out.extend_from_slice(&z.to_le_bytes()[..take]);
        }
        out.truncate(n);
        out
    }

    /// The error message of a failing attempt `token` of job `index`:
    /// exactly `error_bytes` bytes of printable ASCII when set.
    pub fn error_of(&self, index: u32, token: u64, retryable: bool) -> String {
        let base = if retryable {
            FAILURE
        } else {
            PERMANENT_FAILURE
        };
        if self.error_bytes == 0 {
            return base.to_string();
        }
        Self::error_sized(base, index, token, self.error_bytes as usize)
    }

    /// `base`, the job index and token, then printable ASCII, exactly `n` bytes.
    pub fn error_sized(base: &str, index: u32, token: u64, n: usize) -> String {
        let mut out = format!("{base} (job {index}, token {token}) ");
        let start = out.len();
        out.extend(
            (start..n.max(start)).map(|i| char::from(b'!' + ((i as u64 + token) % 94) as u8)),
        );
        out.truncate(n);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_decode_unless_poison() {
        let mut j = PlannedJob {
            index: 7,
            queue: "q".into(),
            enqueue_at: 0,
            poison: false,
            cancel_at: None,
            payload_bytes: 0,
        };
        assert_eq!(j.payload(), b"job:7");
        assert_eq!(WorkloadPlan::decode(&j.payload()), Some(7));
        j.poison = true;
        assert_eq!(WorkloadPlan::decode(&j.payload()), None);
        assert_eq!(j.key(), "job-7");
        j.payload_bytes = 1 << 20;
        assert_eq!(j.payload().len(), 1 << 20);
        assert_eq!(WorkloadPlan::decode(&j.payload()), None);
        j.poison = false;
        assert_eq!(j.payload().len(), 1 << 20);
        assert_eq!(WorkloadPlan::decode(&j.payload()), Some(7));
        // The shortest padding that carries every index, poison included.
        j.payload_bytes = min_payload_bytes(8);
        assert_eq!(j.payload(), b"job:7|\x03\x04\x05");
        assert_eq!(WorkloadPlan::decode(&j.payload()), Some(7));
        j.poison = true;
        assert_eq!(j.payload(), b"poison:7|");
    }

    #[test]
    fn sized_results_and_errors_are_exact_and_deterministic() {
        for n in [1usize, 20, 21, 22, 23, 1000, 1 << 20] {
            let r = WorkloadPlan::result_sized(3, 9, n);
            assert_eq!(r.len(), n);
            assert_eq!(r, WorkloadPlan::result_sized(3, 9, n));
        }
        let r = WorkloadPlan::result_sized(3, 9, 4096);
        assert!(
            r.contains(&0) && r.iter().any(|&b| b >= 0x80),
            "binary bytes"
        );
        assert_ne!(r, WorkloadPlan::result_sized(3, 10, 4096));
        assert_ne!(r, WorkloadPlan::result_sized(4, 9, 4096));
        let e = WorkloadPlan::error_sized(FAILURE, 2, 5, 5000);
        assert_eq!(e.len(), 5000);
        assert!(e.starts_with(FAILURE) && e.bytes().all(|b| (b' '..=b'~').contains(&b)));
        assert_eq!(WorkloadPlan::error_sized(FAILURE, 2, 5, 4).len(), 4);
        let mut cfg = SimConfig::default();
        let plan = WorkloadPlan::new(&cfg, 1);
        assert_eq!(plan.result(3, 9), b"result:3:9");
        assert_eq!(plan.error_of(0, 1, true), FAILURE);
        assert_eq!(plan.error_of(0, 1, false), PERMANENT_FAILURE);
        cfg.workload.result_bytes = 64;
        cfg.workload.error_bytes = 100;
        let plan = WorkloadPlan::new(&cfg, 1);
        assert_eq!(plan.result(3, 9).len(), 64);
        assert_eq!(plan.error_of(0, 1, false).len(), 100);
    }

    #[test]
    fn attempts_are_a_function_of_seed_job_and_token() {
        let mut cfg = SimConfig::default();
        cfg.workload.fail_rate = 0.5;
        let p = WorkloadPlan::new(&cfg, 1);
        assert_eq!(p.attempt(3, 2), p.attempt(3, 2));
        assert_eq!(p.jobs.len(), cfg.workload.jobs as usize);
        assert!(p.jobs.iter().all(|j| j.enqueue_at <= 60_000));
    }
}
