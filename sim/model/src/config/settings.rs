//! The plain settings tables of a scenario file: `[topology]`,
//! `[protocol]`, `[workload]` and `[network]`, each with its named
//! defaults. Checked by [`SimConfig::validate`](super::SimConfig::validate).

use super::range::Range;
use crate::duration::Dur;
use crate::schedules::{DEFAULT_MISFIRE_GRACE, DEFAULT_SCHEDULER_TICK};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Default lease.
pub const DEFAULT_LEASE: Dur = Dur::secs(10);
/// Default renew interval.
pub const DEFAULT_RENEW: Dur = Dur::secs(3);
/// Default sweep interval.
pub const DEFAULT_SWEEP: Dur = Dur::secs(2);
/// Default declared drift bound (1 %).
pub const DEFAULT_MAX_DRIFT_PPM: u32 = 10_000;
/// Default self-fencing margin.
pub const DEFAULT_FENCE_MARGIN: Dur = Dur::ms(200);
/// Default request timeout on workers and sweepers.
pub const DEFAULT_REQUEST_TIMEOUT: Dur = Dur::secs(2);
/// Default idle poll interval.
pub const DEFAULT_POLL: Dur = Dur::ms(500);
/// Default attempt budget.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;
/// Default tries of a release before a worker gives it up: the protocol's
/// documented default (`docs/PROTOCOL.md`, "The renew schedule"), written
/// here rather than read from the core, which the checker judges.
pub const DEFAULT_RELEASE_TRIES: u32 = 10;
/// Default backoff base.
pub const DEFAULT_BACKOFF_BASE: Dur = Dur::ms(500);
/// Default backoff cap.
pub const DEFAULT_BACKOFF_CAP: Dur = Dur::secs(10);
/// Default number of jobs.
pub const DEFAULT_JOBS: u32 = 50;
/// Largest size limit a scenario may configure for payloads, results and
/// errors (the simulated network carries each value in one frame).
pub const MAX_VALUE_BYTES: u64 = 2 << 20;
/// Default queue name.
pub const DEFAULT_QUEUE: &str = "default";

/// Hosts of the simulated world.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Topology {
    /// Worker hosts (`worker-1` …).
    pub workers: u32,
    /// Sweeper hosts (`sweeper-1` …).
    pub sweepers: u32,
    /// Scheduler hosts (`scheduler-1` …), each running the real
    /// `leasehold_core::Scheduler` over every schedule of the scenario.
    pub schedulers: u32,
    /// Workers in each worker host's process (`worker-2.1`, `worker-2.2`
    /// … when above 1). They share one store client, whose batches are
    /// merged as production's adapters merge them, and die together.
    #[serde(skip_serializing_if = "is_one")]
    pub workers_per_process: u32,
    /// Queues each worker serves: worker `k` (counting every worker of
    /// every host from 0) serves the workload's queues `k`, `k + 1`, …
    /// (round the list), each with its limit ([`Protocol::worker_limit`]).
    #[serde(skip_serializing_if = "is_one")]
    pub queues_per_worker: u32,
    /// Each worker process's store client sends the parts of a batch as
    /// calls of their own (the `Store` trait's default `batch`), as a
    /// store client without batches, or a user's own claim-and-release
    /// loop, does: the store then serves single claims and releases (on
    /// PostgreSQL through its `Coalescing` wrapper).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub single_calls: bool,
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

fn is_default_release_tries(v: &u32) -> bool {
    *v == DEFAULT_RELEASE_TRIES
}

impl Default for Topology {
    fn default() -> Self {
        Topology {
            workers: 4,
            sweepers: 1,
            schedulers: 0,
            workers_per_process: 1,
            queues_per_worker: 1,
            single_calls: false,
        }
    }
}

/// Lease protocol settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Protocol {
    /// Lease duration.
    pub lease: Dur,
    /// Renew interval (must be below the lease's usable part).
    pub renew_interval: Dur,
    /// Sweep interval.
    pub sweep_interval: Dur,
    /// Declared drift bound ρ in ppm.
    pub max_drift_ppm: u32,
    /// Self-fencing margin.
    pub fence_margin: Dur,
    /// Jobs per worker at once.
    pub concurrency: u32,
    /// Attempt budget of every job.
    pub max_attempts: u32,
    /// Tries of a release before a worker gives it up (its outcome unknown
    /// or answered `Conflict` every time); the checker reads it to tell a
    /// release given up too early.
    #[serde(skip_serializing_if = "is_default_release_tries")]
    pub release_tries: u32,
    /// Retry backoff base.
    pub backoff_base: Dur,
    /// Retry backoff cap.
    pub backoff_cap: Dur,
    /// Most running jobs per queue (none = unlimited).
    pub parallelism: Option<u32>,
    /// Most handlers of one queue a worker runs at once, for every queue it
    /// serves (none = its concurrency): the worker's slot planner.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_limit: Option<u32>,
    /// A worker's own limit for some queues (`{ a = 1, b = 3 }`), each in
    /// place of `queue_limit` for that queue only, so that queues with
    /// different limits share workers. Every key must be a queue of
    /// `workload.queues`; every limit between 1 and `concurrency`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub queue_limits: BTreeMap<String, u32>,
    /// The store's parallelism limit for some queues (`{ a = 2 }`), each in
    /// place of `parallelism` for that queue only (a queue in neither is
    /// unlimited). Every key must be a queue of `workload.queues`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub queue_parallelism: BTreeMap<String, u32>,
    /// Request timeout on workers and sweepers.
    pub request_timeout: Dur,
    /// Idle poll interval of workers.
    pub poll_interval: Dur,
    /// Interval between two ticks of a scheduler (its own clock).
    pub scheduler_tick: Dur,
    /// Age past which a plan time is late for a scheduler (store time).
    pub misfire_grace: Dur,
    /// Largest payload the store accepts, in bytes.
    pub max_payload_bytes: u64,
    /// Largest result the store accepts, in bytes.
    pub max_result_bytes: u64,
    /// Error messages are truncated to this many bytes.
    pub max_error_bytes: u64,
}

impl Default for Protocol {
    fn default() -> Self {
        Protocol {
            lease: DEFAULT_LEASE,
            renew_interval: DEFAULT_RENEW,
            sweep_interval: DEFAULT_SWEEP,
            max_drift_ppm: DEFAULT_MAX_DRIFT_PPM,
            fence_margin: DEFAULT_FENCE_MARGIN,
            concurrency: 2,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            release_tries: DEFAULT_RELEASE_TRIES,
            backoff_base: DEFAULT_BACKOFF_BASE,
            backoff_cap: DEFAULT_BACKOFF_CAP,
            parallelism: None,
            queue_limit: None,
            queue_limits: BTreeMap::new(),
            queue_parallelism: BTreeMap::new(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            poll_interval: DEFAULT_POLL,
            scheduler_tick: DEFAULT_SCHEDULER_TICK,
            misfire_grace: DEFAULT_MISFIRE_GRACE,
            max_payload_bytes: leasehold_core::DEFAULT_MAX_PAYLOAD_BYTES as u64,
            max_result_bytes: leasehold_core::DEFAULT_MAX_RESULT_BYTES as u64,
            max_error_bytes: leasehold_core::DEFAULT_MAX_ERROR_BYTES as u64,
        }
    }
}

impl Protocol {
    /// The most handlers of `queue` a worker serving it runs at once, when
    /// limited below its concurrency: the queue's own entry in
    /// `queue_limits`, else `queue_limit`.
    pub fn worker_limit(&self, queue: &str) -> Option<u32> {
        self.queue_limits.get(queue).copied().or(self.queue_limit)
    }

    /// The most running jobs of `queue` the store allows, if limited: the
    /// queue's own entry in `queue_parallelism`, else `parallelism`.
    pub fn store_limit(&self, queue: &str) -> Option<u32> {
        self.queue_parallelism
            .get(queue)
            .copied()
            .or(self.parallelism)
    }

    /// Whether the store limits any queue's running jobs.
    pub fn store_limited(&self) -> bool {
        self.parallelism.is_some() || !self.queue_parallelism.is_empty()
    }
}

/// What the client enqueues and how handlers behave.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Workload {
    /// Number of jobs.
    pub jobs: u32,
    /// Queue names; jobs are spread over them round-robin.
    pub queues: Vec<String>,
    /// Enqueue times are spread uniformly over `[0, enqueue_over]`.
    pub enqueue_over: Dur,
    /// Handler run time, drawn per attempt.
    pub run_time: Range<Dur>,
    /// Probability an attempt fails.
    pub fail_rate: f64,
    /// Share of failures that are not retryable.
    pub permanent_share: f64,
    /// Probability a job's payload is poison (cannot be decoded).
    pub poison_rate: f64,
    /// Probability an attempt hangs until stopped.
    pub hang_rate: f64,
    /// Probability a job is cancelled by the client at a random time.
    pub cancel_rate: f64,
    /// Exact payload size in bytes: `job:<index>` padded with filler the
    /// handler's decoder skips (0 = the bare `job:<index>`). At most
    /// `protocol.max_payload_bytes`.
    pub payload_bytes: u64,
    /// Exact result size in bytes: deterministic binary bytes (NUL and
    /// high bytes included) derived from the job and token (0 = the short
    /// `result:<job>:<token>`). At most `protocol.max_result_bytes`.
    pub result_bytes: u64,
    /// Exact length of a failing attempt's error message in bytes (0 = the
    /// short message). May exceed `protocol.max_error_bytes`: the store then
    /// truncates it.
    pub error_bytes: u64,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            jobs: DEFAULT_JOBS,
            queues: vec![DEFAULT_QUEUE.to_string()],
            enqueue_over: Dur::secs(60),
            run_time: Range::new(Dur::ms(100), Dur::secs(5)),
            fail_rate: 0.0,
            permanent_share: 0.0,
            poison_rate: 0.0,
            hang_rate: 0.0,
            cancel_rate: 0.0,
            payload_bytes: 0,
            result_bytes: 0,
            error_bytes: 0,
        }
    }
}

/// Network behaviour outside of faults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Network {
    /// One-way message latency.
    pub latency: Range<Dur>,
}

impl Default for Network {
    fn default() -> Self {
        Network {
            latency: Range::new(Dur::ms(1), Dur::ms(10)),
        }
    }
}
