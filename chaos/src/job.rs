//! The chaos jobs: a typed payload (serde JSON), and the exact result bytes
//! a correct run must store for it.
//!
//! Jobs are drawn from the seed, so a seed names the whole job mix. The
//! handler (`leasehold-chaos-worker`) decodes the payload, does `steps`
//! side effects spread over `work_ms`, fails the first `fail_attempts`
//! attempts on purpose (retries under faults), then answers
//! [`ChaosJob::expected_result`].

use crate::rng::Rng;
use serde::{Deserialize, Serialize};

/// The queue every chaos job goes to.
pub const QUEUE: &str = "chaos";
/// Longest piece of work a payload may ask for (the handler refuses more).
pub const MAX_WORK_MS: u32 = 10_000;
/// Most side effects a payload may ask for.
pub const MAX_STEPS: u32 = 16;
/// Attempt budget of every chaos job: faults must never spend it (each
/// fault costs a job at most one attempt), so every job must succeed.
pub const MAX_ATTEMPTS: u32 = 1_000;
/// Shortest and longest drawn work per job (the single shape).
pub const DRAWN_WORK_MS: (u64, u64) = (5, 60);
/// Shortest and longest drawn work per job in the production shape: long
/// enough that a process's jobs spread over its Workers instead of one
/// Worker's slots absorbing them all, and that many leases renew.
pub const DRAWN_WORK_MS_PRODUCTION: (u64, u64) = (20, 1_000);
/// Per-mille of jobs whose first attempt fails on purpose.
pub const FAIL_FIRST_PERMILLE: u64 = 20;

const _: () = assert!(DRAWN_WORK_MS.1 <= MAX_WORK_MS as u64);
const _: () = assert!(DRAWN_WORK_MS_PRODUCTION.1 <= MAX_WORK_MS as u64);

/// The payload of one chaos job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChaosJob {
    /// Its number in the run (0-based).
    pub n: u64,
    /// Milliseconds of work, spread over the steps.
    pub work_ms: u32,
    /// Side effects to record (at least 1).
    pub steps: u32,
    /// Attempts that fail on purpose (retryably) before one succeeds.
    pub fail_attempts: u32,
}

/// Why a payload was refused by the handler.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    /// Not a JSON [`ChaosJob`].
    #[error("not a chaos job: {0}")]
    Json(#[from] serde_json::Error),
    /// A field outside its bound.
    #[error("{field} = {value} is outside 1..={max}")]
    OutOfBounds {
        /// Which field.
        field: &'static str,
        /// Its value.
        value: u64,
        /// Its largest allowed value.
        max: u64,
    },
}

impl ChaosJob {
    /// Job `n` of the mix drawn from `rng` (work in [`DRAWN_WORK_MS`]).
    pub fn draw(rng: &mut Rng, n: u64) -> ChaosJob {
        ChaosJob::draw_in(rng, n, DRAWN_WORK_MS)
    }

    /// Job `n` of the mix drawn from `rng`, its work in `work_ms` (ms, inclusive).
    pub fn draw_in(rng: &mut Rng, n: u64, work_ms: (u64, u64)) -> ChaosJob {
        ChaosJob {
            n,
            work_ms: rng.range(work_ms.0, work_ms.1.min(u64::from(MAX_WORK_MS))) as u32,
            steps: rng.range(1, 4) as u32,
            fail_attempts: u32::from(rng.chance(FAIL_FIRST_PERMILLE)),
        }
    }

    /// The payload bytes.
    pub fn to_payload(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Decodes and bounds-checks a payload.
    pub fn from_payload(bytes: &[u8]) -> Result<ChaosJob, PayloadError> {
        let job: ChaosJob = serde_json::from_slice(bytes)?;
        if job.steps == 0 || job.steps > MAX_STEPS {
            return Err(PayloadError::OutOfBounds {
                field: "steps",
                value: job.steps.into(),
                max: MAX_STEPS.into(),
            });
        }
        if job.work_ms > MAX_WORK_MS {
            return Err(PayloadError::OutOfBounds {
                field: "work_ms",
                value: job.work_ms.into(),
                max: MAX_WORK_MS.into(),
            });
        }
        Ok(job)
    }

    /// The exact result bytes a correct run stores for this job: a
    /// function of the payload alone, whichever worker ran it.
    pub fn expected_result(&self) -> Vec<u8> {
        // FNV-1a over the payload, so a result from another job's payload
        // (or a truncated one) never matches by accident.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.to_payload() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        format!("job {} done in {} steps: {h:016x}", self.n, self.steps).into_bytes()
    }
}

/// A bug planted in the chaos worker on purpose, to show that the checks
/// catch it. Compiled into `leasehold-chaos-worker` only; never in the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PlantedBug {
    /// The handler runs its work in a detached task (`tokio::spawn`), so
    /// self-fencing and `Lost` drop only the handle: the work goes on after
    /// the lease is gone, and its side effects overlap the next holder's.
    DetachedHandler,
    /// Each handler records its side effects as the next `Worker` of its
    /// process: what a merger handing claim answers to the wrong callers
    /// (the catalogue's `merged-answers-misrouted`) makes of a process, a
    /// Worker running a lease the store granted to its neighbour. Needs at
    /// least two Workers per process.
    WrongWorker,
}

impl PlantedBug {
    /// The flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            PlantedBug::DetachedHandler => "detached-handler",
            PlantedBug::WrongWorker => "wrong-worker",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_round_trips_and_results_differ_per_job() {
        let mut rng = Rng::new(3, 0);
        let a = ChaosJob::draw(&mut rng, 0);
        let b = ChaosJob::draw(&mut rng, 1);
        assert_eq!(ChaosJob::from_payload(&a.to_payload()).unwrap(), a);
        assert_ne!(a.expected_result(), b.expected_result());
    }

    #[test]
    fn out_of_bounds_payloads_are_refused_with_the_field() {
        let bad = ChaosJob {
            n: 1,
            work_ms: 10,
            steps: 0,
            fail_attempts: 0,
        };
        let e = ChaosJob::from_payload(&bad.to_payload()).unwrap_err();
        assert!(e.to_string().contains("steps"), "{e}");
        assert!(ChaosJob::from_payload(b"{}").is_err());
    }
}
