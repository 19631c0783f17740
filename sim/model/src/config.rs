//! The simulation configuration: what one scenario file describes.
//!
//! Everything here is plain data with serde derives and `deny_unknown_fields`
//! so a scenario file maps onto it directly (`scenarios/README.md` documents
//! the TOML form). Defaults are named constants. [`SimConfig::validate`]
//! rejects impossible settings (min > max, renew ≥ lease, a host that does
//! not exist) naming the field path, which the scenario loader turns into a
//! file:line:column.

use crate::duration::{Dur, SignedDur};
use serde::{de, Deserialize, Deserializer, Serialize};
use std::fmt;

/// Default simulated time of one run (fault window, then healing and liveness).
pub const DEFAULT_DURATION: Dur = Dur::secs(600);
/// Default seeds per scenario for `leasehold run`.
pub const DEFAULT_SEEDS: u64 = 20;
/// Default delivery quantum (`tick`): 1 ms, the simulator's resolution, so
/// every message arrives at the exact millisecond its latency says. Time
/// is event-driven; a scenario that sets a coarser `tick` (files written
/// for the stepped engine set 10 ms) has its arrivals rounded up to it.
pub const DEFAULT_TICK: Dur = Dur::ms(1);
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

/// A closed range `[lo, hi]`, written as a two-element array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Range<T> {
    /// Lower bound (inclusive).
    pub lo: T,
    /// Upper bound (inclusive).
    pub hi: T,
}

impl<T: Copy> Range<T> {
    /// The range holding exactly `v`.
    pub const fn exactly(v: T) -> Self {
        Range { lo: v, hi: v }
    }
    /// `[lo, hi]`.
    pub const fn new(lo: T, hi: T) -> Self {
        Range { lo, hi }
    }
}

impl<'de, T: Deserialize<'de> + Copy> Deserialize<'de> for Range<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form<T> {
            Pair([T; 2]),
            One(T),
        }
        match Form::<T>::deserialize(d) {
            Ok(Form::Pair([lo, hi])) => Ok(Range { lo, hi }),
            Ok(Form::One(v)) => Ok(Range { lo: v, hi: v }),
            Err(_) => Err(de::Error::custom("expected a value or a [min, max] pair")),
        }
    }
}

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
    /// (round the list), each with [`Protocol::queue_limit`].
    #[serde(skip_serializing_if = "is_one")]
    pub queues_per_worker: u32,
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

fn is_never(r: &Range<f64>) -> bool {
    r.lo == 0.0 && r.hi == 0.0
}

impl Default for Topology {
    fn default() -> Self {
        Topology {
            workers: 4,
            sweepers: 1,
            schedulers: 0,
            workers_per_process: 1,
            queues_per_worker: 1,
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
            backoff_base: DEFAULT_BACKOFF_BASE,
            backoff_cap: DEFAULT_BACKOFF_CAP,
            parallelism: None,
            queue_limit: None,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            poll_interval: DEFAULT_POLL,
            scheduler_tick: crate::schedules::DEFAULT_SCHEDULER_TICK,
            misfire_grace: crate::schedules::DEFAULT_MISFIRE_GRACE,
            max_payload_bytes: leasehold_core::DEFAULT_MAX_PAYLOAD_BYTES as u64,
            max_result_bytes: leasehold_core::DEFAULT_MAX_RESULT_BYTES as u64,
            max_error_bytes: leasehold_core::DEFAULT_MAX_ERROR_BYTES as u64,
        }
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

/// Swarm fault ranges: each seed draws its own rate from every range, then
/// faults happen only inside `[0, window)`; after it everything heals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Faults {
    /// Faults happen only before this time.
    pub window: Dur,
    /// Worker crashes per worker per minute.
    pub worker_crash_rate: Range<f64>,
    /// Sweeper crashes per sweeper per minute.
    pub sweeper_crash_rate: Range<f64>,
    /// Scheduler crashes per scheduler per minute.
    pub scheduler_crash_rate: Range<f64>,
    /// Time until a crashed host restarts.
    pub restart_after: Range<Dur>,
    /// Store crashes per minute.
    pub store_crash_rate: Range<f64>,
    /// Partitions per non-store host per minute (from the store).
    pub partition_rate: Range<f64>,
    /// Partition length.
    pub partition_len: Range<Dur>,
    /// Share of partitions that are one-way.
    pub oneway_share: f64,
    /// Pauses per non-store host per minute.
    pub pause_rate: Range<f64>,
    /// Pause length.
    pub pause_len: Range<Dur>,
    /// Probability a message is lost.
    pub message_loss: Range<f64>,
    /// Probability the store's answer is lost after the request committed.
    pub answer_loss: Range<f64>,
    /// Probability the store answers a renew, release or cancel `Conflict`
    /// without applying it: contention that the adapter's own retries could
    /// not clear, as PostgreSQL answers it. Never twice in a row to one
    /// host for one job (contention passes), so a worker that retries
    /// promptly always gets through; one that gives up loses its lease.
    pub store_conflict: Range<f64>,
    /// Probability a wake-up the store host sends a worker process (work
    /// became available) is lost (inside the window). Workers must find the
    /// work by polling.
    #[serde(skip_serializing_if = "is_never")]
    pub wake_loss: Range<f64>,
    /// Probability a worker's batch is cancelled by its caller while the
    /// store is inside its transaction, just before the commit (inside the
    /// window). Nothing of it may commit, and later writers must get
    /// through; the caller gets no answer.
    #[serde(skip_serializing_if = "is_never")]
    pub store_cancel: Range<f64>,
    /// Extra delay of held (late, reordered) messages, per host per minute.
    pub hold_rate: Range<f64>,
    /// How long messages are held.
    pub hold_len: Range<Dur>,
    /// Wall-clock offset of each host at start.
    pub clock_offset: Range<SignedDur>,
    /// Drift of each host's clocks, in ppm (negative = slow).
    pub clock_drift_ppm: Range<i64>,
    /// Wall-clock steps per host per minute.
    pub clock_step_rate: Range<f64>,
    /// Size of a wall-clock step.
    pub clock_step: Range<SignedDur>,
}

impl Default for Faults {
    fn default() -> Self {
        let none = Range::exactly(0.0);
        Faults {
            window: Dur::secs(300),
            worker_crash_rate: none,
            sweeper_crash_rate: none,
            scheduler_crash_rate: none,
            restart_after: Range::new(Dur::secs(1), Dur::secs(30)),
            store_crash_rate: none,
            partition_rate: none,
            partition_len: Range::new(Dur::secs(1), Dur::secs(60)),
            oneway_share: 0.0,
            pause_rate: none,
            pause_len: Range::new(Dur::secs(1), Dur::secs(30)),
            message_loss: none,
            answer_loss: none,
            store_conflict: none,
            wake_loss: none,
            store_cancel: none,
            hold_rate: none,
            hold_len: Range::new(Dur::ms(100), Dur::secs(5)),
            clock_offset: Range::exactly(SignedDur(0)),
            clock_drift_ppm: Range::exactly(0),
            clock_step_rate: none,
            clock_step: Range::new(SignedDur(-30_000), SignedDur(30_000)),
        }
    }
}

/// A fault at a scripted time, written as a sentence in `events = [...]`.
///
/// Forms (hosts: `store`, `client`, `worker-N`, `sweeper-N`):
/// - `crash HOST at T` and `restart HOST at T`
/// - `shutdown worker-N at T` (graceful: the worker stops claiming, gives its
///   handlers the grace time, returns unfinished leases, and its process
///   ends; a later `restart` starts a new incarnation)
/// - `partition A B FROM..TO` (both directions), `partition A -> B FROM..TO`
///   (only messages from A to B are dropped)
/// - `hold A B FROM..TO` (messages delayed until TO, then delivered)
/// - `pause HOST for LEN at T`
/// - `skew HOST +OFFSET at T` (a step of the host's wall clock)
/// - `drift HOST PPM at T` (for example `drift worker-1 20000ppm at 0s`)
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(missing_docs)] // fields are named by the sentence forms above
pub enum ScriptedFault {
    /// The host's process dies, losing its memory.
    Crash { host: String, at: Dur },
    /// A crashed (or shut down) host starts again as a new process identity.
    Restart { host: String, at: Dur },
    /// A worker shuts down gracefully: it stops claiming, returns its
    /// unfinished leases (`Returned`, attempt refunded) and its process ends.
    Shutdown { host: String, at: Dur },
    /// Messages between `a` and `b` are dropped during `[from, to)`.
    Partition {
        a: String,
        b: String,
        from: Dur,
        to: Dur,
        oneway: bool,
    },
    /// Messages between `a` and `b` are held during `[from, to)` and then delivered.
    Hold {
        a: String,
        b: String,
        from: Dur,
        to: Dur,
    },
    /// The host stops running for `len`, then resumes with stale beliefs.
    Pause { host: String, at: Dur, len: Dur },
    /// The host's wall clock steps by `by`.
    Skew {
        host: String,
        at: Dur,
        by: SignedDur,
    },
    /// The host's clocks drift by `ppm` from `at` on.
    Drift { host: String, at: Dur, ppm: i64 },
}

impl ScriptedFault {
    /// When the fault starts.
    pub fn start(&self) -> Dur {
        match self {
            ScriptedFault::Crash { at, .. }
            | ScriptedFault::Restart { at, .. }
            | ScriptedFault::Shutdown { at, .. }
            | ScriptedFault::Pause { at, .. }
            | ScriptedFault::Skew { at, .. }
            | ScriptedFault::Drift { at, .. } => *at,
            ScriptedFault::Partition { from, .. } | ScriptedFault::Hold { from, .. } => *from,
        }
    }

    /// The hosts it names.
    pub fn hosts(&self) -> Vec<&str> {
        match self {
            ScriptedFault::Crash { host, .. }
            | ScriptedFault::Restart { host, .. }
            | ScriptedFault::Shutdown { host, .. }
            | ScriptedFault::Pause { host, .. }
            | ScriptedFault::Skew { host, .. }
            | ScriptedFault::Drift { host, .. } => vec![host],
            ScriptedFault::Partition { a, b, .. } | ScriptedFault::Hold { a, b, .. } => vec![a, b],
        }
    }
}

impl fmt::Display for ScriptedFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScriptedFault::Crash { host, at } => write!(f, "crash {host} at {at}"),
            ScriptedFault::Restart { host, at } => write!(f, "restart {host} at {at}"),
            ScriptedFault::Shutdown { host, at } => write!(f, "shutdown {host} at {at}"),
            ScriptedFault::Partition {
                a,
                b,
                from,
                to,
                oneway,
            } => {
                let arrow = if *oneway { " ->" } else { "" };
                write!(f, "partition {a}{arrow} {b} {from}..{to}")
            }
            ScriptedFault::Hold { a, b, from, to } => write!(f, "hold {a} {b} {from}..{to}"),
            ScriptedFault::Pause { host, at, len } => write!(f, "pause {host} for {len} at {at}"),
            ScriptedFault::Skew { host, at, by } => write!(f, "skew {host} {by} at {at}"),
            ScriptedFault::Drift { host, at, ppm } => write!(f, "drift {host} {ppm}ppm at {at}"),
        }
    }
}

impl std::str::FromStr for ScriptedFault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let words: Vec<&str> = s.split_whitespace().collect();
        let dur = |w: &str| w.parse::<Dur>();
        let span = |w: &str| -> Result<(Dur, Dur), String> {
            let (a, b) = w
                .split_once("..")
                .ok_or_else(|| format!("expected FROM..TO, got {w:?}"))?;
            let (from, to) = (dur(a)?, dur(b)?);
            if from >= to {
                return Err(format!("window {w:?} is empty: FROM must be before TO"));
            }
            Ok((from, to))
        };
        let h = |w: &str| w.to_string();
        let partition = |a: &str, b: &str, w: &str, oneway: bool| {
            let (from, to) = span(w)?;
            Ok(ScriptedFault::Partition {
                a: h(a),
                b: h(b),
                from,
                to,
                oneway,
            })
        };
        let usage = || {
            format!(
                "cannot read fault {s:?}; expected one of: `crash HOST at T`, `restart HOST at T`, \
                 `shutdown WORKER at T`, `partition A B FROM..TO`, `partition A -> B FROM..TO`, `hold A B FROM..TO`, \
                 `pause HOST for LEN at T`, `skew HOST +OFFSET at T`, `drift HOST PPMppm at T`"
            )
        };
        match words.as_slice() {
            ["crash", host, "at", t] => Ok(ScriptedFault::Crash {
                host: h(host),
                at: dur(t)?,
            }),
            ["restart", host, "at", t] => Ok(ScriptedFault::Restart {
                host: h(host),
                at: dur(t)?,
            }),
            ["shutdown", host, "at", t] => Ok(ScriptedFault::Shutdown {
                host: h(host),
                at: dur(t)?,
            }),
            ["shutdown", ..] => Err(format!(
                "cannot read fault {s:?}; a graceful shutdown is written `shutdown worker-N at T`, \
                 for example `shutdown worker-2 at 40s`"
            )),
            ["partition", a, "->", b, w] => partition(a, b, w, true),
            ["partition", a, b, w] => partition(a, b, w, false),
            ["hold", a, b, w] => {
                let (from, to) = span(w)?;
                Ok(ScriptedFault::Hold {
                    a: h(a),
                    b: h(b),
                    from,
                    to,
                })
            }
            ["pause", host, "for", len, "at", t] => Ok(ScriptedFault::Pause {
                host: h(host),
                at: dur(t)?,
                len: dur(len)?,
            }),
            ["skew", host, by, "at", t] => Ok(ScriptedFault::Skew {
                host: h(host),
                at: dur(t)?,
                by: by.parse()?,
            }),
            ["drift", host, ppm, "at", t] => {
                let n = ppm
                    .strip_suffix("ppm")
                    .ok_or_else(|| format!("drift {ppm:?} needs the unit ppm, like 20000ppm"))?;
                let ppm = n
                    .parse::<i64>()
                    .map_err(|_| format!("drift {n:?} is not a whole number of ppm"))?;
                Ok(ScriptedFault::Drift {
                    host: h(host),
                    at: dur(t)?,
                    ppm,
                })
            }
            _ => Err(usage()),
        }
    }
}

impl<'de> Deserialize<'de> for ScriptedFault {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(de::Error::custom)
    }
}

/// An invariant id, `I1` … `I10`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum InvariantId {
    /// Single grant.
    I1,
    /// Single winner.
    I2,
    /// Exclusive belief.
    I3,
    /// No lost results.
    I4,
    /// No false crash reports.
    I5,
    /// Liveness.
    I6,
    /// Cancel.
    I7,
    /// Retry budget.
    I8,
    /// Parallelism.
    I9,
    /// Determinism.
    I10,
    /// Answers: every store answer equals the reference model's.
    I11,
    /// Schedules: at most one job per plan time; exactly one once healed.
    I12,
}

impl InvariantId {
    /// Every invariant, in order.
    pub const ALL: [InvariantId; 12] = [
        InvariantId::I1,
        InvariantId::I2,
        InvariantId::I3,
        InvariantId::I4,
        InvariantId::I5,
        InvariantId::I6,
        InvariantId::I7,
        InvariantId::I8,
        InvariantId::I9,
        InvariantId::I10,
        InvariantId::I11,
        InvariantId::I12,
    ];

    /// The spec's name for it.
    pub fn name(self) -> &'static str {
        match self {
            InvariantId::I1 => "single grant",
            InvariantId::I2 => "single winner",
            InvariantId::I3 => "exclusive belief",
            InvariantId::I4 => "no lost results",
            InvariantId::I5 => "no false crash reports",
            InvariantId::I6 => "liveness",
            InvariantId::I7 => "cancel",
            InvariantId::I8 => "retry budget",
            InvariantId::I9 => "parallelism",
            InvariantId::I10 => "determinism",
            InvariantId::I11 => "answers",
            InvariantId::I12 => "schedules",
        }
    }
}

impl fmt::Display for InvariantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

/// What a run must show.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Expect {
    /// A violation of this invariant must be found within the seed budget
    /// (for buggy variants). When unset, every invariant must hold on every seed.
    pub violation: Option<InvariantId>,
}

/// One scenario: the world, the workload, the faults and the expectation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimConfig {
    /// Name (defaults to the file name).
    pub name: String,
    /// What the scenario tells.
    pub description: String,
    /// Default number of seeds for `leasehold run`.
    pub seeds: u64,
    /// The first of those seeds: `leasehold run` runs
    /// `first_seed..first_seed+seeds` (default 0). A regression case that
    /// `leasehold explore` wrote pins its failing seed here.
    pub first_seed: u64,
    /// Simulated time of one run.
    pub duration: Dur,
    /// Delivery quantum: message arrivals are rounded up to a multiple of
    /// it (default 1 ms: exact).
    pub tick: Dur,
    /// A deliberately buggy protocol variant (bug catalogue), by name.
    pub variant: Option<String>,
    /// The store this scenario runs on unless `--store` says otherwise
    /// (default: memory).
    pub store: Option<crate::store_kind::StoreKind>,
    /// Hosts.
    pub topology: Topology,
    /// Protocol settings.
    pub protocol: Protocol,
    /// Workload.
    pub workload: Workload,
    /// Network.
    pub network: Network,
    /// Swarm fault ranges.
    pub faults: Faults,
    /// Scripted faults.
    pub events: Vec<ScriptedFault>,
    /// Expectation.
    pub expect: Expect,
    /// Schedules (periodic jobs), put by every scheduler host at its start.
    pub schedules: Vec<crate::schedules::ScheduleSpec>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            name: String::new(),
            description: String::new(),
            seeds: DEFAULT_SEEDS,
            first_seed: 0,
            duration: DEFAULT_DURATION,
            tick: DEFAULT_TICK,
            variant: None,
            store: None,
            topology: Topology::default(),
            protocol: Protocol::default(),
            workload: Workload::default(),
            network: Network::default(),
            faults: Faults::default(),
            events: Vec::new(),
            expect: Expect::default(),
            schedules: Vec::new(),
        }
    }
}

/// A setting that cannot work, with the dotted path of the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ConfigProblem {
    /// Dotted field path, like `protocol.renew_interval` or `events[2]`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl SimConfig {
    /// The names of every host in the world.
    pub fn host_names(&self) -> Vec<String> {
        let mut v = vec!["store".to_string(), "client".to_string()];
        v.extend((1..=self.topology.workers).map(|i| format!("worker-{i}")));
        v.extend((1..=self.topology.sweepers).map(|i| format!("sweeper-{i}")));
        v.extend((1..=self.topology.schedulers).map(|i| format!("scheduler-{i}")));
        v
    }

    /// Checks the settings; answers every problem found.
    pub fn validate(&self) -> Result<(), Vec<ConfigProblem>> {
        // Bounds first: the checks below allocate per host, job and event.
        let beyond = crate::bounds::problems(self);
        if !beyond.is_empty() {
            return Err(beyond);
        }
        let mut out = Vec::new();
        let mut bad = |path: &str, message: String| {
            out.push(ConfigProblem {
                path: path.to_string(),
                message,
            })
        };
        let p = &self.protocol;
        if self.topology.workers == 0 {
            bad("topology.workers", "at least one worker is needed".into());
        }
        if self.topology.workers_per_process == 0 {
            bad(
                "topology.workers_per_process",
                "at least one worker per process is needed".into(),
            );
        }
        let queues = self.workload.queues.len();
        if self.topology.queues_per_worker == 0
            || self.topology.queues_per_worker as usize > queues.max(1)
        {
            bad(
                "topology.queues_per_worker",
                format!(
                    "{} must be between 1 and the {queues} queue(s) of workload.queues",
                    self.topology.queues_per_worker
                ),
            );
        }
        if let Some(limit) = self.protocol.queue_limit {
            if limit == 0 || limit > self.protocol.concurrency {
                bad(
                    "protocol.queue_limit",
                    format!(
                        "{limit} must be between 1 and protocol.concurrency {}",
                        self.protocol.concurrency
                    ),
                );
            }
        }
        if self.seeds == 0 {
            bad("seeds", "must be at least 1".into());
        }
        if self.tick.as_ms() == 0 {
            bad("tick", "must be greater than zero".into());
        }
        if self.duration <= self.faults.window {
            bad(
                "duration",
                format!(
                    "{} must be longer than faults.window {} to leave a healing phase",
                    self.duration, self.faults.window
                ),
            );
        }
        if p.lease.as_ms() == 0 {
            bad("protocol.lease", "must be greater than zero".into());
        }
        if p.renew_interval >= p.lease {
            bad(
                "protocol.renew_interval",
                format!(
                    "{} must be shorter than the lease {}",
                    p.renew_interval, p.lease
                ),
            );
        }
        for (path, v) in [
            ("protocol.renew_interval", p.renew_interval),
            ("protocol.sweep_interval", p.sweep_interval),
            ("protocol.request_timeout", p.request_timeout),
            ("protocol.poll_interval", p.poll_interval),
            ("protocol.backoff_base", p.backoff_base),
        ] {
            if v.as_ms() == 0 {
                bad(path, "must be greater than zero".into());
            }
        }
        if p.backoff_cap < p.backoff_base {
            bad(
                "protocol.backoff_cap",
                format!(
                    "{} must be at least backoff_base {}",
                    p.backoff_cap, p.backoff_base
                ),
            );
        }
        if p.max_attempts == 0 {
            bad("protocol.max_attempts", "must be at least 1".into());
        }
        if p.concurrency == 0 {
            bad("protocol.concurrency", "must be at least 1".into());
        }
        if p.parallelism == Some(0) {
            bad("protocol.parallelism", "must be at least 1 when set".into());
        }
        for (path, v) in [
            ("protocol.max_payload_bytes", p.max_payload_bytes),
            ("protocol.max_result_bytes", p.max_result_bytes),
            ("protocol.max_error_bytes", p.max_error_bytes),
        ] {
            if v == 0 || v > MAX_VALUE_BYTES {
                bad(
                    path,
                    format!("{v} must be between 1 and {MAX_VALUE_BYTES} bytes"),
                );
            }
        }
        if p.max_drift_ppm >= 1_000_000 {
            bad(
                "protocol.max_drift_ppm",
                "must be below 1000000 (100 %)".into(),
            );
        }
        let w = &self.workload;
        if w.queues.is_empty() {
            bad("workload.queues", "at least one queue is needed".into());
        }
        for (i, q) in w.queues.iter().enumerate() {
            if q.is_empty() || q.chars().any(|c| c.is_control() || c.is_whitespace()) {
                bad(
                    &format!("workload.queues[{i}]"),
                    format!("bad queue name {q:?}"),
                );
            }
        }
        for (path, v) in [
            ("workload.fail_rate", w.fail_rate),
            ("workload.permanent_share", w.permanent_share),
            ("workload.poison_rate", w.poison_rate),
            ("workload.hang_rate", w.hang_rate),
            ("workload.cancel_rate", w.cancel_rate),
            ("faults.oneway_share", self.faults.oneway_share),
        ] {
            if !(0.0..=1.0).contains(&v) {
                bad(path, format!("{v} is not a probability in [0, 1]"));
            }
        }
        check_range(&mut bad, "workload.run_time", &w.run_time);
        for (path, v, limit, what) in [
            (
                "workload.payload_bytes",
                w.payload_bytes,
                p.max_payload_bytes,
                "protocol.max_payload_bytes",
            ),
            (
                "workload.result_bytes",
                w.result_bytes,
                p.max_result_bytes,
                "protocol.max_result_bytes",
            ),
        ] {
            if v > limit {
                bad(
                    path,
                    format!("{v} is above {what} {limit}: the store would refuse every one"),
                );
            }
        }
        let min_payload = crate::workload::min_payload_bytes(w.jobs);
        if w.payload_bytes > 0 && w.payload_bytes < min_payload {
            bad(
                "workload.payload_bytes",
                format!(
                    "{} is too short to carry `job:<index>` and its padding separator for {} jobs; \
                     use 0 (unpadded) or at least {min_payload}",
                    w.payload_bytes, w.jobs
                ),
            );
        }
        if w.error_bytes > MAX_VALUE_BYTES {
            bad(
                "workload.error_bytes",
                format!(
                    "{} is above {MAX_VALUE_BYTES} bytes (it may exceed protocol.max_error_bytes, \
                     which the store truncates to, but not the largest value a scenario carries)",
                    w.error_bytes
                ),
            );
        }
        for (path, need) in wire_needs(self) {
            if need > crate::wire::MAX_FRAME as u64 {
                bad(
                    path,
                    format!(
                        "a message would need about {need} bytes on the simulated wire, above its \
                         {} byte frame; lower the size or protocol.concurrency",
                        crate::wire::MAX_FRAME
                    ),
                );
            }
        }
        check_range(&mut bad, "network.latency", &self.network.latency);
        let f = &self.faults;
        for (path, r) in [
            ("faults.worker_crash_rate", &f.worker_crash_rate),
            ("faults.sweeper_crash_rate", &f.sweeper_crash_rate),
            ("faults.scheduler_crash_rate", &f.scheduler_crash_rate),
            ("faults.store_crash_rate", &f.store_crash_rate),
            ("faults.partition_rate", &f.partition_rate),
            ("faults.pause_rate", &f.pause_rate),
            ("faults.hold_rate", &f.hold_rate),
            ("faults.clock_step_rate", &f.clock_step_rate),
        ] {
            check_range(&mut bad, path, r);
            if r.lo < 0.0 || !r.hi.is_finite() || r.hi > 60.0 {
                bad(path, "rates are per minute, between 0 and 60".into());
            }
        }
        for (path, r) in [
            ("faults.message_loss", &f.message_loss),
            ("faults.answer_loss", &f.answer_loss),
            ("faults.store_conflict", &f.store_conflict),
            ("faults.wake_loss", &f.wake_loss),
            ("faults.store_cancel", &f.store_cancel),
        ] {
            check_range(&mut bad, path, r);
            if r.lo < 0.0 || r.hi > 1.0 {
                bad(path, "probabilities must lie in [0, 1]".into());
            }
        }
        for (path, r) in [
            ("faults.restart_after", &f.restart_after),
            ("faults.partition_len", &f.partition_len),
            ("faults.pause_len", &f.pause_len),
            ("faults.hold_len", &f.hold_len),
        ] {
            check_range(&mut bad, path, r);
        }
        check_range(&mut bad, "faults.clock_offset", &f.clock_offset);
        check_range(&mut bad, "faults.clock_drift_ppm", &f.clock_drift_ppm);
        check_range(&mut bad, "faults.clock_step", &f.clock_step);
        if f.clock_drift_ppm.lo <= -1_000_000 || f.clock_drift_ppm.hi >= 1_000_000 {
            bad(
                "faults.clock_drift_ppm",
                "drift must stay within ±1000000 ppm".into(),
            );
        }
        let hosts = self.host_names();
        for (i, ev) in self.events.iter().enumerate() {
            for h in ev.hosts() {
                if !hosts.iter().any(|n| n == h) {
                    bad(
                        &format!("events[{i}]"),
                        format!(
                            "unknown host {h:?} in `{ev}`; hosts are {}",
                            hosts.join(", ")
                        ),
                    );
                }
            }
            if ev.start() >= self.duration {
                bad(
                    &format!("events[{i}]"),
                    format!("`{ev}` starts after the run ends at {}", self.duration),
                );
            }
            if let ScriptedFault::Shutdown { host, .. } = ev {
                let worker = host
                    .strip_prefix("worker-")
                    .and_then(|n| n.parse::<u32>().ok())
                    .is_some_and(|n| (1..=self.topology.workers).contains(&n));
                if !worker && hosts.iter().any(|n| n == host) {
                    bad(
                        &format!("events[{i}]"),
                        format!(
                            "`{ev}`: only a worker shuts down gracefully (worker-1 .. worker-{}); \
                             {host} can crash and restart",
                            self.topology.workers
                        ),
                    );
                }
            }
        }
        out.extend(crate::schedules::problems(self));
        // Settings the correct core cannot work under are judged once each
        // setting is valid on its own, so one mistake is reported once.
        if out.is_empty() {
            out.extend(crate::feasible::problems(self));
        }
        if out.is_empty() {
            Ok(())
        } else {
            Err(out)
        }
    }
}

/// Upper bounds of the simulated wire's largest messages for the
/// workload's sizes (JSON bodies: a byte of a byte string takes up to 4
/// characters, a byte of the simulator's payload padding (0x00..=0x09) 2, a
/// character of its printable error text 1): a claim answer carrying `concurrency`
/// leases, and a reader's row (payload, result and error), the largest of
/// all. `(field, bytes)`, only when some size is set.
fn wire_needs(cfg: &SimConfig) -> Vec<(&'static str, u64)> {
    const ROW_OVERHEAD: u64 = 4096;
    let w = &cfg.workload;
    let err = w.error_bytes.min(cfg.protocol.max_error_bytes);
    let mut out = Vec::new();
    if w.payload_bytes > 0 {
        let lease = 2 * w.payload_bytes + ROW_OVERHEAD;
        out.push((
            "workload.payload_bytes",
            lease * u64::from(cfg.protocol.concurrency.max(1)),
        ));
    }
    if w.payload_bytes > 0 || w.result_bytes > 0 || w.error_bytes > 0 {
        let row = 2 * w.payload_bytes + 4 * w.result_bytes + err + ROW_OVERHEAD;
        let field = if w.result_bytes > 0 {
            "workload.result_bytes"
        } else if w.payload_bytes > 0 {
            "workload.payload_bytes"
        } else {
            "workload.error_bytes"
        };
        out.push((field, row));
    }
    out
}

fn check_range<T: PartialOrd + fmt::Display>(
    bad: &mut impl FnMut(&str, String),
    path: &str,
    r: &Range<T>,
) {
    if r.lo > r.hi {
        bad(path, format!("min {} is greater than max {}", r.lo, r.hi));
    }
}
