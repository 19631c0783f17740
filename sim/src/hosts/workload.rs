//! The workload one seed draws: when each job is enqueued (and cancelled),
//! whether its payload is poison, and how each attempt of its handler
//! behaves.
//!
//! Attempt behaviour is a function of `(seed, job index, token)`, so it does
//! not depend on which worker runs the attempt or when.

use crate::config::SimConfig;
use crate::rng::SimRng;

/// Idempotency key prefix of simulated jobs: `job-<index>`.
pub const KEY_PREFIX: &str = "job-";
/// Payload prefix of a decodable job.
const PAYLOAD_OK: &str = "job:";
/// Payload prefix of a poison job (the handler cannot decode it).
const PAYLOAD_POISON: &str = "poison:";
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
        format!("{prefix}{}", self.index).into_bytes()
    }
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
        }
    }

    /// Decodes a payload into a job index; `None` for poison.
    pub fn decode(payload: &[u8]) -> Option<u32> {
        std::str::from_utf8(payload)
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

    /// The result bytes an attempt produces.
    pub fn result_of(job: u64, token: u64) -> Vec<u8> {
        format!("result:{job}:{token}").into_bytes()
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
        };
        assert_eq!(WorkloadPlan::decode(&j.payload()), Some(7));
        j.poison = true;
        assert_eq!(WorkloadPlan::decode(&j.payload()), None);
        assert_eq!(j.key(), "job-7");
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
