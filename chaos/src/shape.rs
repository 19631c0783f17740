//! The shape of the worker processes.
//!
//! - `single`: one `Worker` per process at concurrency 8, one queue, a 50 ms
//!   poll: the shape `leasehold chaos` first ran.
//! - `production` (the default): the shape production and the bench run.
//!   Each process runs several `Worker`s on one shared store (so their
//!   `Store::batch` calls merge in the store's `BatchMerger`) at the
//!   default concurrency, each serving several queues with limits; idle
//!   Workers are woken by the store's LISTEN connection (PostgreSQL) and
//!   otherwise poll at the default interval; on PostgreSQL the store is
//!   wrapped in `Coalescing`, as a process with many Workers would run it.
//!   Jobs work longer (20 ms to 1 s), so they spread over the Workers and
//!   many renew their leases.

use crate::rng::Rng;
use leasehold_core::worker::config as defaults;
use leasehold_core::Millis;

/// How the worker processes are built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Shape {
    /// One `Worker` per process, one queue.
    Single,
    /// Several `Worker`s per process on one store, several queues with
    /// limits, the default concurrency and poll interval, `Coalescing` on
    /// PostgreSQL.
    Production,
}

/// The shape a run has unless told otherwise.
pub const DEFAULT_SHAPE: Shape = Shape::Production;
/// `Worker`s per process in the production shape.
pub const DEFAULT_WORKERS_PER_PROCESS: u32 = 4;
/// Most `Worker`s in one process (the in-flight board holds one bit each).
pub const MAX_WORKERS_PER_PROCESS: u32 = 64;
/// Jobs each `Worker` runs at once in the single shape.
pub const SINGLE_CONCURRENCY: u32 = 8;
/// Poll interval of the single shape: without wake-ups it must poll fast.
pub const SINGLE_POLL: Millis = Millis(50);

/// Period of the production shape's PostgreSQL vacuums, in ms (the store
/// looks this often, and vacuums after 1,000 dead rows; see
/// `PgStoreBuilder::vacuum_every`).
pub const PRODUCTION_VACUUM_EVERY_MS: u64 = 500;

/// The queues of the production shape: name, each Worker's limit on it
/// (`None`: the Worker's concurrency) and its share of the jobs (per mille).
pub const PRODUCTION_QUEUES: [(&str, Option<u32>, u64); 3] = [
    (crate::job::QUEUE, None, 600),
    ("chaos-b", Some(8), 300),
    ("chaos-c", Some(2), 100),
];

const _: () = assert!(
    PRODUCTION_QUEUES[0].2 + PRODUCTION_QUEUES[1].2 + PRODUCTION_QUEUES[2].2 == 1000,
    "the shares add up to 1000 per mille"
);

/// One queue a Worker serves and its limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueLimit {
    /// The queue.
    pub name: String,
    /// Most of its jobs one Worker runs at once (`None`: the concurrency).
    pub limit: Option<u32>,
}

impl Shape {
    /// The flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            Shape::Single => "single",
            Shape::Production => "production",
        }
    }

    /// `Worker`s per process when not given.
    pub fn default_workers_per_process(self) -> u32 {
        match self {
            Shape::Single => 1,
            Shape::Production => DEFAULT_WORKERS_PER_PROCESS,
        }
    }

    /// Jobs per `Worker` at once when not given.
    pub fn default_concurrency(self) -> u32 {
        match self {
            Shape::Single => SINGLE_CONCURRENCY,
            Shape::Production => defaults::DEFAULT_CONCURRENCY,
        }
    }

    /// The Workers' poll interval.
    pub fn poll(self) -> Millis {
        match self {
            Shape::Single => SINGLE_POLL,
            Shape::Production => defaults::DEFAULT_POLL_INTERVAL,
        }
    }

    /// The queues every Worker serves, limits capped at `concurrency` (a
    /// limit above it could never bind).
    pub fn queues(self, concurrency: u32) -> Vec<QueueLimit> {
        match self {
            Shape::Single => vec![QueueLimit {
                name: crate::job::QUEUE.into(),
                limit: None,
            }],
            Shape::Production => PRODUCTION_QUEUES
                .iter()
                .map(|(name, limit, _)| QueueLimit {
                    name: (*name).into(),
                    limit: limit.map(|l| l.min(concurrency)),
                })
                .collect(),
        }
    }

    /// Shortest and longest work of a job, in ms.
    pub fn work_ms(self) -> (u64, u64) {
        match self {
            Shape::Single => crate::job::DRAWN_WORK_MS,
            Shape::Production => crate::job::DRAWN_WORK_MS_PRODUCTION,
        }
    }

    /// Whether the PostgreSQL store is wrapped in `Coalescing`.
    pub fn coalesces(self) -> bool {
        self == Shape::Production
    }

    /// The period of the PostgreSQL store's own vacuums
    /// (`PgStoreBuilder::vacuum_every`), if it runs them: production runs
    /// them, so that they meet every fault too.
    pub fn vacuum_every_ms(self) -> Option<u64> {
        (self == Shape::Production).then_some(PRODUCTION_VACUUM_EVERY_MS)
    }

    /// The queue of each of `jobs` jobs, drawn from `seed` on a stream of
    /// its own (so the payloads, and the single shape's job mix, stay what
    /// they were for the seed).
    pub fn job_queues(self, seed: u64, jobs: u64) -> Vec<&'static str> {
        match self {
            Shape::Single => vec![crate::job::QUEUE; jobs as usize],
            Shape::Production => {
                let mut rng = Rng::new(seed, 3);
                (0..jobs)
                    .map(|_| {
                        let mut r = rng.range(0, 999);
                        for (name, _, share) in PRODUCTION_QUEUES {
                            if r < share {
                                return name;
                            }
                            r -= share;
                        }
                        crate::job::QUEUE
                    })
                    .collect()
            }
        }
    }
}

/// `NAME` or `NAME:LIMIT`, as the worker program's `--queue` reads it.
pub fn queue_arg(q: &QueueLimit) -> String {
    match q.limit {
        Some(l) => format!("{}:{l}", q.name),
        None => q.name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn production_spreads_jobs_over_its_queues_by_share() {
        let q = Shape::Production.job_queues(4, 10_000);
        for (name, _, share) in PRODUCTION_QUEUES {
            let n = q.iter().filter(|x| **x == name).count() as u64;
            assert!(n.abs_diff(share * 10) < 300, "{name}: {n} of 10000");
        }
        assert_eq!(q, Shape::Production.job_queues(4, 10_000), "replays");
        assert!(Shape::Single.job_queues(4, 3).iter().all(|x| *x == "chaos"));
    }

    #[test]
    fn limits_never_exceed_the_concurrency() {
        let q = Shape::Production.queues(4);
        assert_eq!(q[0].limit, None);
        assert_eq!(q[1].limit, Some(4));
        assert_eq!(q[2].limit, Some(2));
        assert_eq!(queue_arg(&q[1]), "chaos-b:4");
    }
}
