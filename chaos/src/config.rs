//! What a chaos run does: named defaults, bounds, and validation at build.

use crate::error::ChaosError;
pub use crate::fault_kind::FaultKind;
use crate::job::PlantedBug;
use crate::shape::{QueueLimit, Shape, MAX_WORKERS_PER_PROCESS};
pub use crate::store_target::{PgControl, StoreTarget};
use leasehold_core::{Millis, WorkerConfig};
use std::path::PathBuf;
use std::time::Duration;

/// Default number of jobs (the CI size).
pub const DEFAULT_JOBS: u64 = 3_000;
/// Default length of the fault window.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(40);
/// Default longest healing phase: after it, an unfinished job is a violation.
pub const DEFAULT_HEAL_TIMEOUT: Duration = Duration::from_secs(120);
/// Default number of worker processes.
pub const DEFAULT_WORKERS: u32 = 4;
/// Default lease.
pub const DEFAULT_LEASE: Millis = Millis(3_000);
/// Default renew interval.
pub const DEFAULT_RENEW: Millis = Millis(500);
/// Default sweep interval (every worker process also sweeps).
pub const DEFAULT_SWEEP: Millis = Millis(500);
/// Default mean gap between two faults.
pub const DEFAULT_FAULT_EVERY: Duration = Duration::from_millis(2_000);

/// Most jobs in one run.
pub const MAX_JOBS: u64 = 10_000_000;
/// Most worker processes.
pub const MAX_WORKERS: u32 = 64;
/// Most jobs per `Worker` at once.
pub const MAX_CONCURRENCY: u32 = 256;
/// Longest fault window or healing phase.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);
/// Shortest and longest lease a chaos run accepts.
pub const LEASE_BOUNDS: (Millis, Millis) = (Millis(200), Millis(60_000));
/// Shortest mean gap between faults.
pub const MIN_FAULT_EVERY: Duration = Duration::from_millis(50);

const _: () = assert!(DEFAULT_RENEW.0 < DEFAULT_LEASE.0);
const _: () = assert!(DEFAULT_JOBS <= MAX_JOBS);
const _: () = assert!(DEFAULT_WORKERS <= MAX_WORKERS);

/// A validated chaos run. Build it with [`ChaosConfig::builder`].
#[derive(Clone, Debug, PartialEq)]
pub struct ChaosConfig {
    /// The store.
    pub store: StoreTarget,
    /// The seed of the nemesis schedule and the job mix.
    pub seed: u64,
    /// Jobs to run.
    pub jobs: u64,
    /// The fault window: jobs are enqueued evenly over it, faults inside it.
    pub duration: Duration,
    /// Longest healing phase.
    pub heal_timeout: Duration,
    /// Worker processes.
    pub workers: u32,
    /// The shape of each process.
    pub shape: Shape,
    /// `Worker`s in each process, on one shared store.
    pub workers_per_process: u32,
    /// Jobs per `Worker` at once.
    pub concurrency: u32,
    /// Lease asked for.
    pub lease: Millis,
    /// Renew interval.
    pub renew: Millis,
    /// Sweep interval.
    pub sweep: Millis,
    /// Mean gap between faults.
    pub fault_every: Duration,
    /// The fault kinds in play.
    pub faults: Vec<FaultKind>,
    /// The bug planted in the workers, if any.
    pub planted_bug: Option<PlantedBug>,
    /// Shortest and longest work of a job in ms (default: the shape's).
    pub work_ms: (u64, u64),
    /// The worker program.
    pub worker_bin: PathBuf,
    /// Where to keep logs and the audit export (default: a temporary
    /// directory, removed after a passing run).
    pub work_dir: Option<PathBuf>,
}

/// Builds a [`ChaosConfig`].
#[derive(Clone, Debug)]
pub struct ChaosConfigBuilder {
    cfg: ChaosConfig,
    faults: Option<Vec<FaultKind>>,
    workers_per_process: Option<u32>,
    concurrency: Option<u32>,
    work_ms: Option<(u64, u64)>,
}

impl ChaosConfig {
    /// A run on `store` with seed `seed`, driving `worker_bin`, with the defaults.
    pub fn builder(store: StoreTarget, seed: u64, worker_bin: PathBuf) -> ChaosConfigBuilder {
        ChaosConfigBuilder {
            cfg: ChaosConfig {
                store,
                seed,
                jobs: DEFAULT_JOBS,
                duration: DEFAULT_DURATION,
                heal_timeout: DEFAULT_HEAL_TIMEOUT,
                workers: DEFAULT_WORKERS,
                shape: crate::shape::DEFAULT_SHAPE,
                workers_per_process: 0,
                concurrency: 0,
                lease: DEFAULT_LEASE,
                renew: DEFAULT_RENEW,
                sweep: DEFAULT_SWEEP,
                fault_every: DEFAULT_FAULT_EVERY,
                faults: Vec::new(),
                planted_bug: None,
                work_ms: (0, 0),
                worker_bin,
                work_dir: None,
            },
            faults: None,
            workers_per_process: None,
            concurrency: None,
            work_ms: None,
        }
    }

    /// The queues every `Worker` serves, with their limits.
    pub fn queues(&self) -> Vec<QueueLimit> {
        self.shape.queues(self.concurrency)
    }

    /// The configuration every `Worker` runs (validated by the core).
    pub fn worker_config(&self, id: &str) -> Result<WorkerConfig, ChaosError> {
        let mut b = WorkerConfig::builder(id, crate::job::QUEUE)
            .concurrency(self.concurrency)
            .lease(self.lease)
            .renew_interval(self.renew)
            .request_timeout(request_timeout(self.lease))
            .poll_interval(self.shape.poll())
            .grace(WORKER_GRACE);
        for q in self.queues() {
            if let Some(limit) = q.limit {
                b = b.queue(q.name, limit);
            }
        }
        b.build().map_err(|e| ChaosError::BadArg {
            flag: "--lease-ms/--renew-ms",
            reason: e.to_string(),
        })
    }
}

/// Time a worker's handlers get to finish after SIGTERM.
pub const WORKER_GRACE: Millis = Millis(2_000);

/// The request timeout workers use: a third of the lease, so an unknown
/// outcome is retried well before the worker must self-fence.
pub fn request_timeout(lease: Millis) -> Millis {
    Millis((lease.0 / 3).max(100))
}

impl ChaosConfigBuilder {
    leasehold_core::setter! {
        /// Jobs to run.
        jobs: u64,
        /// The fault window.
        duration: Duration,
        /// Longest healing phase.
        heal_timeout: Duration,
        /// Worker processes.
        workers: u32,
        /// The shape of each process.
        shape: Shape,
        /// Lease.
        lease: Millis,
        /// Renew interval.
        renew: Millis,
        /// Sweep interval.
        sweep: Millis,
        /// Mean gap between faults.
        fault_every: Duration,
        /// A planted bug.
        planted_bug: Option<PlantedBug>,
        /// Where to keep logs and the audit export.
        work_dir: Option<PathBuf>,
    }

    /// `Worker`s per process (default: the shape's).
    pub fn workers_per_process(mut self, n: u32) -> Self {
        self.workers_per_process = Some(n);
        self
    }

    /// Jobs per `Worker` at once (default: the shape's).
    pub fn concurrency(mut self, n: u32) -> Self {
        self.concurrency = Some(n);
        self
    }

    /// Shortest and longest work of a job in ms (default: the shape's).
    pub fn work_ms(mut self, min: u64, max: u64) -> Self {
        self.work_ms = Some((min, max));
        self
    }

    /// The fault kinds (default: every kind that applies to the store and
    /// the shape; the restart only with server control).
    pub fn faults(mut self, kinds: Vec<FaultKind>) -> Self {
        self.faults = Some(kinds);
        self
    }

    /// Validates and returns the configuration.
    pub fn build(self) -> Result<ChaosConfig, ChaosError> {
        let mut c = self.cfg;
        let bad = |flag: &'static str, reason: String| Err(ChaosError::BadArg { flag, reason });
        if c.jobs == 0 || c.jobs > MAX_JOBS {
            return bad("--jobs", format!("{} is outside 1..={MAX_JOBS}", c.jobs));
        }
        if c.workers == 0 || c.workers > MAX_WORKERS {
            return bad(
                "--workers",
                format!("{} is outside 1..={MAX_WORKERS}", c.workers),
            );
        }
        c.concurrency = self
            .concurrency
            .unwrap_or_else(|| c.shape.default_concurrency());
        c.workers_per_process = match (c.shape, self.workers_per_process) {
            (_, None) => c.shape.default_workers_per_process(),
            (Shape::Single, Some(n)) if n != 1 => {
                return bad(
                    "--workers-per-process",
                    format!("{n}: the single shape runs one Worker per process"),
                )
            }
            (_, Some(n)) => n,
        };
        if c.workers_per_process == 0 || c.workers_per_process > MAX_WORKERS_PER_PROCESS {
            return bad(
                "--workers-per-process",
                format!(
                    "{} is outside 1..={MAX_WORKERS_PER_PROCESS}",
                    c.workers_per_process
                ),
            );
        }
        c.work_ms = self.work_ms.unwrap_or_else(|| c.shape.work_ms());
        let (min, max) = c.work_ms;
        if min == 0 || min > max || max > u64::from(crate::job::MAX_WORK_MS) {
            return bad(
                "--work-ms",
                format!(
                    "{min}-{max} must be MIN-MAX with 1 <= MIN <= MAX <= {}",
                    crate::job::MAX_WORK_MS
                ),
            );
        }
        if c.concurrency == 0 || c.concurrency > MAX_CONCURRENCY {
            return bad(
                "--concurrency",
                format!("{} is outside 1..={MAX_CONCURRENCY}", c.concurrency),
            );
        }
        for (flag, d) in [
            ("--duration", c.duration),
            ("--heal-timeout", c.heal_timeout),
        ] {
            if d.is_zero() || d > MAX_DURATION {
                return bad(flag, format!("{d:?} is outside (0, 24h]"));
            }
        }
        if c.lease < LEASE_BOUNDS.0 || c.lease > LEASE_BOUNDS.1 {
            return bad(
                "--lease-ms",
                format!(
                    "{} is outside {}..={}",
                    c.lease, LEASE_BOUNDS.0, LEASE_BOUNDS.1
                ),
            );
        }
        if c.sweep == Millis::ZERO || c.sweep > c.lease {
            return bad(
                "--sweep-ms",
                format!("{} must be above zero and at most the lease", c.sweep),
            );
        }
        if c.fault_every < MIN_FAULT_EVERY {
            return bad(
                "--fault-every",
                format!("{:?} is below {MIN_FAULT_EVERY:?}", c.fault_every),
            );
        }
        c.worker_config("check")?;
        c.faults = match self.faults {
            Some(kinds) => {
                for k in &kinds {
                    if !k.applies_to(&c.store) {
                        return bad(
                            "--faults",
                            format!("{} does not apply to {}", k.as_str(), c.store.name()),
                        );
                    }
                    if k.needs_several_workers() && c.workers_per_process < 2 {
                        return bad(
                            "--faults",
                            format!(
                                "{} needs at least 2 Workers per process \
                                 (--shape production, --workers-per-process)",
                                k.as_str()
                            ),
                        );
                    }
                    if *k == FaultKind::Restart
                        && matches!(&c.store, StoreTarget::Postgres { control: None, .. })
                    {
                        return bad(
                            "--faults",
                            "restart needs --pg-ctl and --pg-data (or LEASEHOLD_PG_CTL and \
                             LEASEHOLD_PG_DATA, which scripts/with-postgres.sh exports)"
                                .into(),
                        );
                    }
                }
                let mut kinds = kinds;
                kinds.sort();
                kinds.dedup();
                kinds
            }
            None => default_faults(&c.store, c.workers_per_process),
        };
        if c.planted_bug == Some(PlantedBug::WrongWorker) && c.workers_per_process < 2 {
            return bad(
                "--planted-bug",
                "wrong-worker needs at least 2 Workers per process".into(),
            );
        }
        Ok(c)
    }
}

/// Every fault kind that applies to `store` and to processes of
/// `workers_per_process` Workers (the restart only with control).
pub fn default_faults(store: &StoreTarget, workers_per_process: u32) -> Vec<FaultKind> {
    FaultKind::ALL
        .into_iter()
        .filter(|k| k.applies_to(store))
        .filter(|k| !k.needs_several_workers() || workers_per_process >= 2)
        .filter(|k| {
            *k != FaultKind::Restart
                || matches!(
                    store,
                    StoreTarget::Postgres {
                        control: Some(_),
                        ..
                    }
                )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_core::worker::config as defaults;

    fn sqlite() -> ChaosConfigBuilder {
        ChaosConfig::builder(StoreTarget::Sqlite, 1, PathBuf::from("w"))
    }

    #[test]
    fn defaults_build_with_the_faults_of_the_store_and_shape() {
        let c = sqlite().build().unwrap();
        assert_eq!(c.shape, Shape::Production);
        assert_eq!(
            (c.workers_per_process, c.concurrency),
            (4, defaults::DEFAULT_CONCURRENCY)
        );
        assert_eq!(
            c.faults,
            [
                FaultKind::Kill,
                FaultKind::Pause,
                FaultKind::KillWriter,
                FaultKind::KillMerged,
                FaultKind::KillWriterQueued
            ]
        );
        assert_eq!(c.work_ms, Shape::Production.work_ms());
        let c = sqlite().shape(Shape::Single).build().unwrap();
        assert_eq!((c.workers_per_process, c.concurrency), (1, 8));
        assert_eq!(c.work_ms, Shape::Single.work_ms());
        assert_eq!(
            c.faults,
            [FaultKind::Kill, FaultKind::Pause, FaultKind::KillWriter]
        );
        let pg = StoreTarget::Postgres {
            url: "postgres://x".into(),
            control: None,
        };
        let c = ChaosConfig::builder(pg, 1, "w".into()).build().unwrap();
        assert_eq!(
            c.faults,
            [
                FaultKind::Kill,
                FaultKind::Pause,
                FaultKind::TerminateBackend,
                FaultKind::KillListener,
                FaultKind::KillMerged
            ]
        );
    }

    #[test]
    fn the_worker_config_serves_every_queue_with_its_limit() {
        let c = sqlite().build().unwrap();
        let w = c.worker_config("w").unwrap();
        let q: Vec<(&str, u32)> = w
            .queues
            .iter()
            .map(|q| (q.name.as_str(), q.limit))
            .collect();
        assert_eq!(
            q,
            [
                ("chaos", defaults::DEFAULT_CONCURRENCY),
                ("chaos-b", 8),
                ("chaos-c", 2)
            ]
        );
        assert_eq!(w.concurrency, defaults::DEFAULT_CONCURRENCY);
        assert_eq!(
            w.poll_interval,
            leasehold_core::worker::config::DEFAULT_POLL_INTERVAL
        );
    }

    #[test]
    fn nonsense_is_refused_naming_the_flag() {
        let flag = |b: ChaosConfigBuilder| match b.build() {
            Err(ChaosError::BadArg { flag, .. }) => flag,
            other => panic!("{other:?}"),
        };
        assert_eq!(flag(sqlite().jobs(0)), "--jobs");
        assert_eq!(flag(sqlite().jobs(MAX_JOBS + 1)), "--jobs");
        assert_eq!(flag(sqlite().workers(0)), "--workers");
        assert_eq!(flag(sqlite().duration(Duration::ZERO)), "--duration");
        assert_eq!(flag(sqlite().lease(Millis(50))), "--lease-ms");
        assert_eq!(flag(sqlite().renew(Millis(3_000))), "--lease-ms/--renew-ms");
        assert_eq!(flag(sqlite().faults(vec![FaultKind::Restart])), "--faults");
        assert_eq!(flag(sqlite().work_ms(0, 10)), "--work-ms");
        assert_eq!(flag(sqlite().work_ms(20, 10)), "--work-ms");
        let too_long = u64::from(crate::job::MAX_WORK_MS) + 1;
        assert_eq!(flag(sqlite().work_ms(1, too_long)), "--work-ms");
        assert_eq!(
            flag(sqlite().workers_per_process(0)),
            "--workers-per-process"
        );
        assert_eq!(
            flag(sqlite().shape(Shape::Single).workers_per_process(2)),
            "--workers-per-process"
        );
        assert_eq!(
            flag(
                sqlite()
                    .shape(Shape::Single)
                    .faults(vec![FaultKind::KillMerged])
            ),
            "--faults"
        );
        assert_eq!(
            flag(
                sqlite()
                    .shape(Shape::Single)
                    .planted_bug(Some(PlantedBug::WrongWorker))
            ),
            "--planted-bug"
        );
        assert_eq!(
            flag(sqlite().faults(vec![FaultKind::KillListener])),
            "--faults"
        );
        let pg = StoreTarget::Postgres {
            url: "postgres://x".into(),
            control: None,
        };
        let e = ChaosConfig::builder(pg, 1, "w".into())
            .faults(vec![FaultKind::Restart])
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("LEASEHOLD_PG_CTL"), "{e}");
    }
}
