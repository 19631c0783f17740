//! A scope: how big the world is and which faults it may suffer.
//!
//! Times are milliseconds of true time (the store's clock runs at true
//! time; each worker's monotonic clock drifts by its host's `drift_ppm`).
//! Only the instants where something can change are visited (see
//! `world.rs`), so the magnitudes cost nothing; the counts (workers, jobs,
//! faults) and the horizon bound the state space.

use leasehold_core::Millis;
use std::fmt;

/// Default lease asked for on claim and renew.
pub const DEFAULT_LEASE: Millis = Millis(1_000);
/// Default renew interval.
pub const DEFAULT_RENEW_INTERVAL: Millis = Millis(300);
/// Default declared drift bound ρ, in ppm; the hosts drift at exactly ±ρ.
pub const DEFAULT_DRIFT_PPM: u32 = 10_000;
/// Default longest one-way network delay of a message that is not lost.
pub const DEFAULT_MAX_DELAY: Millis = Millis(100);
/// Default request timeout (a lost message is seen as `Unavailable` then).
/// A round trip of 2 x [`DEFAULT_MAX_DELAY`] reads 202 ms on a clock at
/// +ρ; 205 ms fits it with room for the simulator's 1 ms hops when a
/// counterexample is replayed (`docs/EXHAUSTIVE.md`).
pub const DEFAULT_REQUEST_TIMEOUT: Millis = Millis(205);
/// Default longest handler run.
pub const DEFAULT_MAX_JOB_TIME: Millis = Millis(700);
/// Default sweeper period: an expired lease is swept at most this late.
pub const DEFAULT_SWEEP_INTERVAL: Millis = Millis(100);
/// Default idle poll of a worker whose claim came back short.
pub const DEFAULT_POLL_INTERVAL: Millis = Millis(100);
/// Default release tries.
pub const DEFAULT_RELEASE_TRIES: u32 = 3;
/// Default instant after which no fault is injected.
pub const DEFAULT_FAULTS_UNTIL: Millis = Millis(1_200);
/// Default attempt budget of every job.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
/// Most workers a scope may have (state hashing tries every permutation).
pub const MAX_WORKERS: u8 = 4;
/// Most jobs a scope may have.
pub const MAX_JOBS: u8 = 3;

/// A validated scope. Build one with [`Scope::builder`], or take
/// [`Scope::s1`], [`Scope::s1_crash`] or [`Scope::s2`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope {
    /// Worker hosts (each restarts with a fresh identity after a crash).
    pub workers: u8,
    /// Jobs, all enqueued at time 0 on one queue.
    pub jobs: u8,
    /// Most worker crashes in a run.
    pub crashes: u8,
    /// Most messages lost (a request, or its answer after it applied).
    pub lost: u8,
    /// Most requests the store answers `Conflict` (nothing applied).
    pub conflicts: u8,
    /// Most requests the store answers `Unavailable` at once (nothing applied).
    pub unavailable: u8,
    /// Most client cancels.
    pub cancels: u8,
    /// Lease asked for.
    pub lease: Millis,
    /// Renew interval.
    pub renew_interval: Millis,
    /// ρ in ppm: every host's clock runs at exactly 1−ρ or 1+ρ.
    pub drift_ppm: u32,
    /// Longest one-way delay.
    pub max_delay: Millis,
    /// Request timeout.
    pub request_timeout: Millis,
    /// Longest handler run.
    pub max_job_time: Millis,
    /// Sweeper period.
    pub sweep_interval: Millis,
    /// Idle poll.
    pub poll_interval: Millis,
    /// Release tries.
    pub release_tries: u32,
    /// Attempt budget per job.
    pub max_attempts: u32,
    /// No fault after this instant.
    pub faults_until: Millis,
    /// The last instant of a run: every job must be terminal by then (I6).
    pub horizon: Millis,
}

/// A scope that cannot be checked, and which field says why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeError {
    /// The field.
    pub field: &'static str,
    /// Why.
    pub reason: String,
}

impl fmt::Display for ScopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "scope.{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for ScopeError {}

impl Scope {
    /// A builder with the named defaults, one worker, one job, no faults.
    pub fn builder() -> ScopeBuilder {
        ScopeBuilder {
            scope: Scope {
                workers: 1,
                jobs: 1,
                crashes: 0,
                lost: 0,
                conflicts: 0,
                unavailable: 0,
                cancels: 0,
                lease: DEFAULT_LEASE,
                renew_interval: DEFAULT_RENEW_INTERVAL,
                drift_ppm: DEFAULT_DRIFT_PPM,
                max_delay: DEFAULT_MAX_DELAY,
                request_timeout: DEFAULT_REQUEST_TIMEOUT,
                max_job_time: DEFAULT_MAX_JOB_TIME,
                sweep_interval: DEFAULT_SWEEP_INTERVAL,
                poll_interval: DEFAULT_POLL_INTERVAL,
                release_tries: DEFAULT_RELEASE_TRIES,
                max_attempts: DEFAULT_MAX_ATTEMPTS,
                faults_until: DEFAULT_FAULTS_UNTIL,
                horizon: Millis::ZERO,
            },
            horizon: None,
        }
    }

    /// S1 as pinned in CI, first half: 2 workers, 1 job, 1 lost message,
    /// 1 `Conflict`, drift at the bound. The S1 also has a crash
    /// and a second lost message, which do not fit 60 s together even
    /// with the search's reductions (`reduce.rs`): the whole S1
    /// is 12.7 M states, about 200 CPU-s, 22 minutes on the shared 2-core
    /// machine (`docs/EXHAUSTIVE.md`). The crash is pinned in
    /// [`Scope::s1_crash`].
    pub fn s1() -> Scope {
        Scope::builder()
            .workers(2)
            .jobs(1)
            .lost(1)
            .conflicts(1)
            .build()
            .expect("S1 is valid")
    }

    /// S1 as pinned in CI, second half: 2 workers, 1 job, 1 crash (with a
    /// restart under a fresh identity), 1 `Conflict`, drift at the bound.
    pub fn s1_crash() -> Scope {
        Scope::builder()
            .workers(2)
            .jobs(1)
            .crashes(1)
            .conflicts(1)
            .build()
            .expect("S1 with a crash is valid")
    }

    /// The whole S1: 2 workers, 1 job, at most 1 crash, 2 lost
    /// messages, 1 `Conflict`, drift at the bound (both halves' faults
    /// together; pinned by hand, `tests/s1.rs`).
    pub fn s1_full() -> Scope {
        Scope::builder()
            .workers(2)
            .jobs(1)
            .crashes(1)
            .lost(2)
            .conflicts(1)
            .build()
            .expect("the whole S1 is valid")
    }

    /// S2: 3 workers, 2 jobs, at most 1 crash, 2 lost messages, 1
    /// `Conflict`, 1 prompt `Unavailable`, 1 cancel.
    pub fn s2() -> Scope {
        Scope::builder()
            .workers(3)
            .jobs(2)
            .crashes(1)
            .lost(2)
            .conflicts(1)
            .unavailable(1)
            .cancels(1)
            .build()
            .expect("S2 is valid")
    }
}

/// Builds a [`Scope`]; see the `DEFAULT_*` constants.
#[derive(Clone, Debug)]
pub struct ScopeBuilder {
    scope: Scope,
    horizon: Option<Millis>,
}

macro_rules! setter {
    ($($(#[$doc:meta])* $name:ident: $ty:ty),* $(,)?) => {$(
        $(#[$doc])*
        pub fn $name(mut self, v: $ty) -> Self {
            self.scope.$name = v;
            self
        }
    )*};
}

impl ScopeBuilder {
    setter! {
        /// Worker hosts.
        workers: u8,
        /// Jobs.
        jobs: u8,
        /// Most crashes.
        crashes: u8,
        /// Most lost messages.
        lost: u8,
        /// Most `Conflict` answers.
        conflicts: u8,
        /// Most prompt `Unavailable` answers.
        unavailable: u8,
        /// Most client cancels.
        cancels: u8,
        /// Lease.
        lease: Millis,
        /// Renew interval.
        renew_interval: Millis,
        /// Drift bound in ppm.
        drift_ppm: u32,
        /// Longest one-way delay.
        max_delay: Millis,
        /// Request timeout.
        request_timeout: Millis,
        /// Longest handler run.
        max_job_time: Millis,
        /// Sweeper period.
        sweep_interval: Millis,
        /// Idle poll.
        poll_interval: Millis,
        /// Release tries.
        release_tries: u32,
        /// Attempt budget.
        max_attempts: u32,
        /// No fault after this instant.
        faults_until: Millis,
    }

    /// The last instant, where I6 asks every job to be terminal (default:
    /// [`default_horizon`], the end of the longest chain the faults can
    /// start).
    pub fn horizon(mut self, h: Millis) -> Self {
        self.horizon = Some(h);
        self
    }

    /// Validates the scope.
    pub fn build(self) -> Result<Scope, ScopeError> {
        let mut s = self.scope;
        let err = |field, reason: String| Err(ScopeError { field, reason });
        if s.workers == 0 || s.workers > MAX_WORKERS {
            return err("workers", format!("{} (1 to {MAX_WORKERS})", s.workers));
        }
        if s.jobs == 0 || s.jobs > MAX_JOBS {
            return err("jobs", format!("{} (1 to {MAX_JOBS})", s.jobs));
        }
        if s.drift_ppm >= 100_000 {
            return err("drift_ppm", format!("{} (below 100,000)", s.drift_ppm));
        }
        // Every answer that is not lost reaches its worker before the
        // worker gives up: the world delivers an answer as late as
        // `max_delay`, and a real worker past its timeout sees the timeout,
        // not the answer. The round trip is measured on the fastest clock
        // the scope allows (1 + ρ), where the timeout comes soonest, rounded
        // up (two readings of that clock differ by at most that much), and
        // must end before the timeout: at the same instant both would race.
        let round_trip = u64::try_from(
            (u128::from(s.max_delay.0) * 2 * (1_000_000 + u128::from(s.drift_ppm)))
                .div_ceil(1_000_000),
        )
        .unwrap_or(u64::MAX);
        if round_trip >= s.request_timeout.0 {
            return err(
                "max_delay",
                format!(
                    "a round trip of 2 x {} reads {round_trip}ms on a clock at +{}ppm and must \
                     end before the request timeout {}",
                    s.max_delay, s.drift_ppm, s.request_timeout
                ),
            );
        }
        // A handler's run is one of the world's instants after its grant
        // (`handler_by`), and the default horizon grows with it: a zero
        // run has no instant of its own, and a run past the cap (60 leases
        // of the default scope) only stretches the horizon, and the
        // states, with nothing new for a 1,000 ms lease to show.
        if s.max_job_time.0 == 0 || s.max_job_time > MAX_JOB_TIME_CAP {
            return err(
                "max_job_time",
                format!(
                    "{} (1ms to {MAX_JOB_TIME_CAP}: the longest a handler runs)",
                    s.max_job_time
                ),
            );
        }
        if s.renew_interval >= s.lease || s.release_tries == 0 || s.max_attempts == 0 {
            return err(
                "renew_interval",
                "must be below the lease; release_tries and max_attempts at least 1".into(),
            );
        }
        s.horizon = self.horizon.unwrap_or_else(|| default_horizon(&s));
        if s.horizon < s.faults_until {
            return err("horizon", "must not end before the faults do".into());
        }
        Ok(s)
    }
}

/// The longest handler run a scope may ask for (`max_job_time`).
pub const MAX_JOB_TIME_CAP: Millis = Millis(60_000);

/// Shortest wait before a renew whose outcome was unknown is sent again
/// (`MIN` of the renew schedule, docs/PROTOCOL.md §3; read from the
/// protocol, not from the worker's code).
const RENEW_RETRY_MIN: u64 = 100;

/// The longest true time a span of `local` ms lasts on a clock running at
/// 1-ρ: a reading is `floor(t·(1-ρ))`, so from any instant `t0` the
/// clock reads `local` more by `t0 + ceil(local/(1-ρ))` at the latest.
fn on_slowest_clock(local: u64, drift_ppm: u32) -> u64 {
    let rate = 1_000_000 - u128::from(drift_ppm.min(999_999));
    u64::try_from((u128::from(local) * 1_000_000).div_ceil(rate)).unwrap_or(u64::MAX)
}

/// The shortest true time a span of `local` ms lasts on a clock running
/// at 1+ρ (rounded down).
fn on_fastest_clock(local: u64, drift_ppm: u32) -> u64 {
    let rate = 1_000_000 + u128::from(drift_ppm);
    u64::try_from(u128::from(local) * 1_000_000 / rate).unwrap_or(u64::MAX)
}

/// The default horizon: the latest instant a job can still need to become
/// terminal, plus one (at the horizon itself no step is taken).
///
/// Faults end at `F` (`faults_until`). What can leave a job unfinished
/// after `F` is a lease whose holder stopped caring for it: the world
/// then waits for the lease to expire, the sweeper to reclaim it and a
/// new run to finish. The longest such chain, each step at its bound
/// (`d` = `max_delay`; a local span is read on the slowest clock, 1-ρ,
/// where it lasts longest in true time):
///
/// 1. **The last renew of an abandoned lease is sent by `F + A (+ W)`.**
///    A holder abandons a lease only on a fault. A crash strikes by `F`.
///    A release is given up only when its last try failed: lost (decided
///    as it leaves, by `F`, and seen at its request timeout, so by
///    `F + A` with `A` = the timeout on the slowest clock) or refused
///    (answered by `F + d`, sooner: a round trip fits the timeout). A try
///    sent after `F` reaches the store and commits. The releasing
///    heartbeat renews until the release ends, so its last renew leaves
///    by `F + A` (the probe's path: the give-up at 1,320 ms, its renew
///    sent at 1,313 ms). A running handler is abandoned at its fence;
///    that can happen only to a handler that can outlive its first fence
///    (`max_job_time + 2d` reaches the safe lease, `L·(1-ρ)/(1+ρ)` on the
///    fastest clock): after the last lost renew is seen (by `F + A`) the
///    renew schedule retries within `W` = `max(MIN, renew_interval/2)`,
///    and that renew applies even if its answer comes after the fence.
/// 2. **It reaches the store `d` later and sets the expiry a `lease`
///    after.** A claim from a holder that crashed, or whose grant was
///    lost, is applied by `F + d` with the same lease: no later.
/// 3. **The sweeper reclaims it within `sweep_interval`.**
/// 4. **A host claims the job within `d + poll_interval`.** A host free
///    to take it claims at once, unless its last claim met no pending job
///    just before the reclaim: that answer comes `d` late and the host
///    waits a poll. With more jobs than workers, every host may be busy:
///    the job waits at most `ceil(jobs/workers) - 1` runs of other jobs
///    (a claim's round trip and a handler each; a host claims again as
///    its handler returns).
/// 5. **The claim's round trip (`2d`), the handler (`max_job_time`) and
///    the release's trip to the store (`d`).** This run starts after `F`
///    (the expiry in 2 is past `F`), so no fault touches it and its
///    release needs no retry. A release retried earlier either commits
///    by `F + A + renew_interval + d` (the retry wait is at most an
///    interval), well within the chain, or is given up: step 1.
///
/// So the horizon is `F + A (+ W) + d + lease + sweep_interval + d +
/// poll + (ceil(jobs/workers) - 1)·(2d + max_job_time) + 2d +
/// max_job_time + d + 1`. With the defaults: 1,200 + 208 + 100 +
/// 1,000 + 100 + 202 + 200 + 700 + 100 + 1 = 3,811 ms. The formula it
/// replaces (3,510 ms: faults end, lease, sweep, poll, job, two request
/// timeouts) left out the renew sent by the releasing heartbeat just
/// before the give-up and the claim's round trip: the full S1
/// met a run that finished at 3,513 ms (docs/EXHAUSTIVE.md).
pub fn default_horizon(s: &Scope) -> Millis {
    let rho = s.drift_ppm;
    let d = s.max_delay.0;
    let slow = |local: u64| on_slowest_clock(local, rho);
    let give_up = slow(s.request_timeout.0).max(d);
    let safe_lease = u128::from(s.lease.0) * (1_000_000 - u128::from(rho).min(999_999))
        / (1_000_000 + u128::from(rho));
    let safe_lease = on_fastest_clock(u64::try_from(safe_lease).unwrap_or(u64::MAX), rho);
    let fenced_retry = if s.max_job_time.0.saturating_add(2 * d) >= safe_lease {
        slow(RENEW_RETRY_MIN.max(s.renew_interval.0 / 2))
    } else {
        0
    };
    let run = d.saturating_mul(2).saturating_add(s.max_job_time.0);
    let queued = u64::from(s.jobs.div_ceil(s.workers.max(1)).saturating_sub(1));
    let steps = [
        s.faults_until.0,
        give_up,
        fenced_retry,
        d,
        s.lease.0,
        s.sweep_interval.0,
        d,
        slow(s.poll_interval.0),
        queued.saturating_mul(run),
        run,
        d,
        1,
    ];
    Millis(steps.iter().fold(0, |at, step| at.saturating_add(*step)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_must_end_before_the_timeout_on_the_fastest_clock() {
        // 2 x 100 ms reads 202 ms at +1%: a 202 ms timeout would race it.
        let e = Scope::builder()
            .request_timeout(Millis(202))
            .build()
            .unwrap_err();
        assert_eq!(e.field, "max_delay");
        assert!(e.reason.contains("reads 202ms"), "{e}");
        assert!(Scope::builder()
            .request_timeout(Millis(203))
            .build()
            .is_ok());
        // Without drift, 2 x 100 ms before 201 ms is enough.
        assert!(Scope::builder()
            .drift_ppm(0)
            .request_timeout(Millis(201))
            .build()
            .is_ok());
        assert_eq!(Scope::s1().request_timeout, DEFAULT_REQUEST_TIMEOUT);
    }

    #[test]
    fn the_default_horizon_ends_the_longest_chain_after_the_faults() {
        // 1,200 + 208 (a 205 ms timeout at -1%) + 100 + 1,000 + 100 + 100
        // + 102 (a 100 ms poll at -1%) + 200 + 700 + 100 + 1.
        assert_eq!(Scope::s1().horizon, Millis(3_811));
        assert_eq!(Scope::s1_crash().horizon, Millis(3_811));
        // The run the full S1 met finished at 3,513 ms.
        assert!(Scope::s1().horizon > Millis(3_513));
        assert_eq!(on_slowest_clock(205, 10_000), 208);
        assert_eq!(on_slowest_clock(100, 10_000), 102);
        // A clock at -1% that reads 1,188 at 1,200 ms reads 1,393 first
        // at 1,408 ms: the bound is reached.
        assert_eq!(
            crate::clock::true_at(-10_000, crate::clock::local_at(-10_000, 1_200) + 205),
            1_200 + 208
        );
        // An explicit horizon is kept.
        let s = Scope::builder().horizon(Millis(5_000)).build().unwrap();
        assert_eq!(s.horizon, Millis(5_000));
    }

    #[test]
    fn a_handler_that_can_outlive_its_fence_adds_a_renew_retry() {
        let short = Scope::builder().build().unwrap().horizon;
        // 900 ms of handler and round trip stay under the 970 ms a safe
        // lease (980 ms local) lasts at +1%; 2,500 ms do not.
        let long = Scope::builder()
            .max_job_time(Millis(2_500))
            .build()
            .unwrap()
            .horizon;
        // The longer handler (1,800 ms), and a retry half an interval
        // (150 ms, 152 at -1%) after the last lost renew is seen.
        assert_eq!(long.0 - short.0, 1_800 + 152);
    }

    /// A handler's longest run is validated: a zero run and one past the
    /// cap are refused on `max_job_time`, the bounds themselves accepted.
    #[test]
    fn a_handler_length_outside_its_range_is_refused() {
        for bad in [Millis(0), Millis(MAX_JOB_TIME_CAP.0 + 1)] {
            let e = Scope::builder().max_job_time(bad).build().unwrap_err();
            assert_eq!(e.field, "max_job_time");
            assert!(
                e.reason.starts_with(&format!("{bad} (1ms to")),
                "{}",
                e.reason
            );
        }
        for ok in [Millis(1), MAX_JOB_TIME_CAP] {
            assert_eq!(
                Scope::builder()
                    .max_job_time(ok)
                    .build()
                    .unwrap()
                    .max_job_time,
                ok
            );
        }
    }

    #[test]
    fn more_jobs_than_workers_wait_for_the_runs_ahead_of_them() {
        let one = Scope::builder().workers(1).jobs(1).build().unwrap().horizon;
        let two = Scope::builder().workers(1).jobs(2).build().unwrap().horizon;
        let three = Scope::builder().workers(2).jobs(3).build().unwrap().horizon;
        let run = 2 * DEFAULT_MAX_DELAY.0 + DEFAULT_MAX_JOB_TIME.0;
        assert_eq!(two.0 - one.0, run);
        assert_eq!(three.0 - one.0, run);
        assert_eq!(
            Scope::builder().workers(3).jobs(2).build().unwrap().horizon,
            one
        );
    }
}
