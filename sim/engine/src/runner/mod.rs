//! Runs one seed of a scenario: builds the world, steps turmoil while
//! applying the fault schedule, collects the history and checks it.
//!
//! ## Time resolution
//! turmoil advances every host by a fixed tick per step and delivers
//! messages only between steps, so one network hop takes at least one tick
//! (plus the scenario's latency, rounded up to ticks); clocks, timers and
//! pauses inside a host are exact to the millisecond. Crashes, restarts and
//! link changes are applied at the first tick boundary at or after their
//! scheduled time, and the history records when they were applied. The
//! cost of a run is dominated by the number of steps (every host with
//! something to do is polled each tick), so the tick is the
//! speed/resolution trade-off: 10 ms keeps a request/answer round trip
//! near 20–30 ms. Message latency is turmoil's own (an exponential draw
//! within `network.latency`), also rounded up to ticks.
//!
//! ## Speed
//! Nearly all the time of a run is turmoil's per-step cost: stock turmoil
//! polls every host's tokio runtime in every step and scans every link
//! (about 1.8 µs per host per step, quadratic in hosts through the links),
//! whether or not anything happens. The simulator's own work (requests, store, history,
//! checks) is a small share. Measured with `examples/sim_speed` on the
//! standard scenario (13 runtimes; quiet end after about 5.2 simulated
//! minutes), 2 threads on this 2-core machine:
//!
//! | tick | steps/seed | seeds/s | simulated/wall |
//! |---|---|---|---|
//! | 10 ms (default), stock turmoil | 31,000 | 2.9 | 920x |
//! | 10 ms (default), vendored turmoil (below) | 31,000 | 4.6 | 1,424x |
//! | 10 ms (default), vendored turmoil, idle hosts skipped (below) | 31,000 | see below | see below |
//! | 20 ms, stock turmoil | 15,600 | 5.2 | 1,640x |
//! | 50 ms, stock turmoil | 6,300 | 10 | 3,120x |
//! | 100 ms, stock turmoil | 3,100 | 15 | 4,720x |
//!
//! A coarser tick only coarsens network delivery (a hop takes one to two
//! ticks); leases, renewals, fencing and pauses stay exact.
//!
//! Where the instructions go (callgrind, standard scenario, seed 1, 31,001
//! steps, 5.36 G instructions): turmoil's `Sim::step` 98%, of which
//! `Topology::deliver_messages` 39% (for every host it walks all 66 links
//! and, on each of its 11, does a SipHash `IndexMap::entry` and collects a
//! `Vec` even when nothing is queued), the per-host tokio `block_on` 40%,
//! `Topology::tick_by` 12% (it ticks the topology's own runtime and calls
//! `Rt::now` once per link). The simulator's own code is small: every host's
//! software together (core worker loops, store, wire, history) about 6%,
//! and apply-faults, quiet-end checks, collection and the checker about 1%.
//! Three behaviour-preserving changes inside turmoil 0.7.2 (skip links with
//! nothing deliverable, a fast hasher for its `IndexMap`s, one `Rt::now` per
//! `tick_by`) cut a seed to 2.76 G instructions with identical history
//! hashes; the workspace uses them through a vendored, patched turmoil
//! (`vendor/turmoil/LEASEHOLD_PATCH.md`).
//!
//! Skipping idle hosts ([`Stepping`], the default): a host with no task
//! woken, nothing delivered and no timer due in a step is not polled, and
//! its runtime is caught up exactly before it next runs (identical history
//! hashes on all 809 runs of the library on memory and on 108 runs on
//! SQLite, and `tests/engine_stepping.rs`). On the standard scenario about
//! two thirds of the host-steps are skipped: 2.12 G instructions per seed
//! (seed 1, callgrind), of which polling the hosts that do run is 1.15 G
//! (tokio's fixed cost per poll, about 7,000 instructions, is most of it),
//! catching up 0.20 G, the delivery checks 0.12 G and every host's software
//! 0.36 G. Over the whole library (`leasehold run scenarios/`, 809 runs,
//! 2 threads, machine shared, load average 2-5): 655-676x simulated/wall
//! before, 1,024-1,363x after. The standard scenario with `sim_speed`, 20
//! seeds, 2 threads, runs alternated at load average 4 (the table's rows
//! above were measured on a quieter machine): 1.78-1.89 seeds/s (557-591x)
//! before, 2.66-2.67 seeds/s (832-836x) after. The store host polls only the connections
//! woken since their last poll (it polled every open one on each wake):
//! 3.07 -> 3.31 seeds/s on the standard scenario (10 seeds, 1 thread),
//! identical hashes on the 809 runs on memory and 108 on SQLite. What
//! remains: the hosts that are busy in a step still pay tokio's full cost
//! per poll (a `block_on`, its park, and two wall-clock reads of tokio's
//! busy-time metrics, about 7% of a seed), and the store host is woken by
//! almost every step of a busy run. Jumping time over idle steps would
//! gain little: on the standard scenario only 4.5% of the steps have
//! every host idle (13,369 of 300,000 steps, seeds 1-10).
//!
//! Later, with identical history hashes on the 809 library runs: frames in
//! bincode instead of JSON (the size-limit scenario's seed 1: 9.59 G ->
//! 3.42 G instructions), the network walking only a host's own links and
//! the links with messages in flight, with a per-host count of deliverable
//! messages (the 54-host fifty-workers seed 1: 5.88 G -> 2.87 G), and a
//! fat-LTO release build: the library 2,393-2,402x -> 3,008-3,058x
//! simulated/wall, the standard scenario 6.7-6.8 seeds/s on 2 threads.
//! Where a library run's time goes now (perf, 1 thread): turmoil's
//! `Rt::tick` 49% (nearly all of it tokio's `block_on`: entering the
//! runtime, the `LocalSet` tick, parking the time driver, the busy-time
//! metrics' two wall-clock reads per scheduler loop), `Rt::catch_up` 18%,
//! the topology 8%, every host's software, the checker and the history
//! hash most of the rest. Replacing the catch-up's yields by queued no-op
//! tasks (the same scheduler ticks without parking) measured no gain.
//! Finding hosts by index instead of hashing their address in every step,
//! and a catch-up in one `block_on` instead of two (identical hashes on the
//! 809 library runs and 108 on SQLite): the library 2,975-3,025x ->
//! 3,145-3,223x, the standard scenario 6.6-6.7 -> 7.1 seeds/s (2 threads);
//! keeping each runtime's metrics handle and borrowing the tick's waker
//! instead of cloning it added 0.6-5% (the library 3,063-3,250x, the
//! standard scenario 6.9-7.3 seeds/s).
//! A single-threaded perf profile after that: `Sim::step` 80% of the run,
//! of which the hosts' `block_on`s 48% and catch-up 19%; inside them
//! tokio's time driver and parking 17%, the `LocalSet` tick 13% (the
//! hosts' software about 10% of the run), reading the paused and wall
//! clocks 13%; the history hash 4% and the checker 3%. No single part is
//! large enough for a tenfold gain while each host keeps its own tokio
//! runtime, and that runtime's task order is what the history hashes pin.
//!
//! ## Quiet end
//! Once every fault has healed, the client has finished its schedule and
//! every job has been terminal for [`QUIET_GRACE_MS`], nothing can change
//! any more (terminal rows never change, and no request that could change
//! one is left to send), so the run stops early and says so in its `End`
//! record. This skips the idle tail of long scenarios.

pub use leasehold_model::builtin;
mod collect;
mod stepping;
mod world;

pub use crate::stores::Backend;
use collect::collect;
pub use stepping::Stepping;
use world::World;

use crate::catalogue::{self, Variant};
use crate::checker::{self, Violation};
use crate::clock::{ClockModel, EPOCH_MS};
use crate::config::{ScriptedFault, SimConfig};
use crate::faults::{self, FaultPlan, SwarmDraw};
use crate::history::{History, Record};
use crate::hosts::workload::WorkloadPlan;
use crate::hosts::{client, store, worker, Shared};
use crate::stores::{MemoryFactory, SeedContext, StoreFactory};
use leasehold_core::{list_all, Event, JobRecord};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// How long every job must have been terminal before a run may end early.
pub const QUIET_GRACE_MS: u64 = 10_000;
/// How often the runner checks for the quiet end.
const QUIET_CHECK_EVERY_MS: u64 = 1_000;
/// SYN backlog and socket buffers of every simulated host (a paused store
/// accumulates connection attempts; turmoil panics when the backlog is full).
const TCP_CAPACITY: usize = 1 << 14;

/// The result of one seed.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// Scenario name.
    pub scenario: String,
    /// Seed.
    pub seed: u64,
    /// Invariant violations (empty = every invariant held).
    pub violations: Vec<Violation>,
    /// I10: FNV-1a of the canonical history bytes.
    pub history_hash: u64,
    /// Simulated time covered.
    pub sim_time_ms: u64,
    /// A drift beyond ρ or a store clock step happened: I3 not asserted.
    pub timing_assumption_broken: bool,
    /// The full history.
    pub history: History,
    /// The concrete fault schedule of this seed.
    pub schedule: Vec<ScriptedFault>,
    /// The rates this seed drew.
    pub swarm: SwarmDraw,
    /// The run stopped early because nothing could change any more.
    pub quiet_end: bool,
    /// turmoil steps taken.
    pub steps: u64,
}

/// A bug or misconfiguration of the harness (never an invariant violation).
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The scenario is invalid.
    #[error("invalid scenario: {}", .0.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("; "))]
    Config(Vec<crate::config::ConfigProblem>),
    /// The variant name is unknown.
    #[error("unknown variant {name:?}; known variants: {known}")]
    UnknownVariant {
        /// The name given.
        name: String,
        /// The known names.
        known: String,
    },
    /// A host's software failed (for example its configuration was rejected).
    #[error("simulation failed: {0}")]
    Sim(String),
    /// Simulated code panicked.
    #[error("simulated code panicked: {0}")]
    Panic(String),
    /// The store could not be set up or read (bad URL, unreachable database,
    /// a schema that holds data, a variant the store does not carry).
    #[error("store: {0}")]
    Store(String),
    /// The run used up its wall-clock limit and was stopped between two
    /// steps: nothing was judged (it is neither a pass nor a violation).
    #[error(
        "stopped by the run timeout of {}s of wall time, after {} of {} simulated ({steps} steps); \
         raise --run-timeout or shorten the scenario",
        limit.as_secs_f64(),
        crate::duration::format_ms(*sim_ms),
        crate::duration::format_ms(*duration_ms)
    )]
    Timeout {
        /// The wall-clock limit.
        limit: Duration,
        /// Simulated time reached.
        sim_ms: u64,
        /// The scenario's duration.
        duration_ms: u64,
        /// Steps taken.
        steps: u64,
    },
}

/// The concrete fault schedule `seed` draws for `cfg`.
pub fn fault_schedule(cfg: &SimConfig, seed: u64) -> Vec<ScriptedFault> {
    faults::fault_schedule(cfg, seed)
}

/// Parses the scenario's variant.
pub fn variant_of(cfg: &SimConfig) -> Result<Option<Variant>, HarnessError> {
    match &cfg.variant {
        None => Ok(None),
        Some(name) => Variant::parse(name)
            .map(Some)
            .ok_or_else(|| HarnessError::UnknownVariant {
                name: name.clone(),
                known: Variant::names(),
            }),
    }
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

/// Whether every planned job exists and is terminal (read through the
/// open store; `false` while the store is down).
fn all_terminal<F: StoreFactory>(backend: &Backend<F>, shared: &Shared) -> bool {
    let Some(store) = backend.current() else {
        return false;
    };
    let want = shared.workload.jobs.len();
    match backend.block_on(async move { list_all(&*store).await }) {
        Ok(Ok(rows)) => rows.len() >= want && rows.iter().all(|r| r.state.is_terminal()),
        _ => false,
    }
}

/// The final rows and the audit log (if the store keeps one).
type FinalState = (Vec<JobRecord>, Option<Vec<Event>>);

fn read_final<F: StoreFactory>(backend: &Backend<F>) -> Result<FinalState, HarnessError> {
    use crate::stores::SimStore;
    let read = backend
        .read_final(|store| async move {
            let rows = list_all(&*store).await?;
            let events = store.audit_log().await?;
            Ok::<_, leasehold_core::StoreError>((rows, events))
        })
        .map_err(|e| HarnessError::Store(e.to_string()))?;
    read.map_err(|e| HarnessError::Store(format!("reading the final state: {e}")))
}

/// Runs `cfg` with `seed` on the memory store and checks every invariant
/// (`SeedRun::new(cfg, seed).run()`).
pub fn run_seed(cfg: &SimConfig, seed: u64) -> Result<RunOutcome, HarnessError> {
    SeedRun::new(cfg, seed).run()
}

/// One seed of a scenario, to run and check: on the memory store unless
/// [`SeedRun::on`] names another, with no wall-clock limit unless
/// [`SeedRun::within`] sets one, stepped as [`Stepping::default`] unless
/// [`SeedRun::stepping`] says otherwise.
///
/// ```no_run
/// use leasehold_sim::runner::{builtin, SeedRun};
/// use std::time::Duration;
/// let cfg = builtin::small_swarm();
/// let out = SeedRun::new(&cfg, 7)
///     .within(Some(Duration::from_secs(60)))
///     .run()
///     .expect("the harness runs");
/// assert!(out.violations.is_empty());
/// ```
#[must_use = "a SeedRun does nothing until `run`"]
pub struct SeedRun<'a, F: StoreFactory = MemoryFactory> {
    cfg: &'a SimConfig,
    seed: u64,
    factory: Arc<F>,
    limit: Option<Duration>,
    stepping: Stepping,
}

impl<'a> SeedRun<'a, MemoryFactory> {
    /// `seed` of `cfg`, on the memory store.
    pub fn new(cfg: &'a SimConfig, seed: u64) -> Self {
        SeedRun {
            cfg,
            seed,
            factory: Arc::new(MemoryFactory),
            limit: None,
            stepping: Stepping::default(),
        }
    }
}

impl<'a, F: StoreFactory> SeedRun<'a, F> {
    /// On a fresh store (one database for this seed) from `factory`.
    pub fn on<G: StoreFactory>(self, factory: &Arc<G>) -> SeedRun<'a, G> {
        SeedRun {
            cfg: self.cfg,
            seed: self.seed,
            factory: factory.clone(),
            limit: self.limit,
            stepping: self.stepping,
        }
    }

    /// Stopped with [`HarnessError::Timeout`] once `limit` of wall time has
    /// passed (`None`: no limit). The wall clock is read between steps only
    /// to abort, never to decide anything the simulation sees, so a run
    /// that finishes in time has the same history with or without a limit.
    pub fn within(mut self, limit: Option<Duration>) -> Self {
        self.limit = limit;
        self
    }

    /// With turmoil stepping the hosts as `stepping` says (speed only:
    /// every stepping gives the same history, see [`Stepping`]).
    pub fn stepping(mut self, stepping: Stepping) -> Self {
        self.stepping = stepping;
        self
    }

    /// Runs the seed and checks every invariant.
    pub fn run(self) -> Result<RunOutcome, HarnessError> {
        run_seed_with(
            self.cfg,
            self.seed,
            &self.factory,
            self.limit,
            self.stepping,
        )
    }
}

fn run_seed_with<F: StoreFactory>(
    cfg: &SimConfig,
    seed: u64,
    factory: &Arc<F>,
    limit: Option<Duration>,
    stepping: Stepping,
) -> Result<RunOutcome, HarnessError> {
    let deadline = limit.map(|l| (std::time::Instant::now() + l, l));
    cfg.validate().map_err(HarnessError::Config)?;
    let variant = variant_of(cfg)?;
    if let Some(v) = variant {
        if catalogue::is_store_side(v) && !factory.carries_store_variants() {
            return Err(HarnessError::Store(format!(
                "variant {v} is a bug of the memory store; the {} store does not carry it",
                factory.name()
            )));
        }
    }
    let ctx = SeedContext {
        scenario: cfg.name.clone(),
        seed,
        policy: crate::protocol::policy_of(cfg, seed).map_err(HarnessError::Sim)?,
        variant,
    };
    let backend = Arc::new(
        Backend::create(factory.clone(), ctx).map_err(|e| HarnessError::Store(e.to_string()))?,
    );
    let out = run_world(cfg, seed, variant, &backend, deadline, stepping);
    backend.destroy();
    out
}

fn run_world<F: StoreFactory>(
    cfg: &SimConfig,
    seed: u64,
    variant: Option<Variant>,
    backend: &Arc<Backend<F>>,
    deadline: Option<(std::time::Instant, Duration)>,
    stepping: Stepping,
) -> Result<RunOutcome, HarnessError> {
    let schedule = fault_schedule(cfg, seed);
    let plan = FaultPlan::new(&schedule);
    let swarm = faults::draw_swarm(cfg, seed);
    let heal = faults::heal_time(cfg, &schedule);
    let broken = faults::timing_assumption_broken(cfg, &schedule);
    let hosts = cfg.host_names();
    let clocks: BTreeMap<String, Arc<ClockModel>> = hosts
        .iter()
        .map(|h| (h.clone(), Arc::new(ClockModel::of_host(h, &schedule))))
        .collect();
    let shared = Arc::new(Shared::new(
        Arc::new(cfg.clone()),
        seed,
        variant,
        swarm.clone(),
        heal,
        clocks,
        plan.clone(),
        WorkloadPlan::new(cfg, seed),
    ));
    shared.record_runner(Record::Run {
        scenario: cfg.name.clone(),
        seed,
        variant: cfg.variant.clone(),
        heal_ms: heal,
        duration_ms: cfg.duration.as_ms(),
        tick_ms: cfg.tick.as_ms(),
        message_loss: swarm.message_loss,
        answer_loss: swarm.answer_loss,
        store_conflict: swarm.store_conflict,
        wake_loss: swarm.wake_loss,
        store_cancel: swarm.store_cancel,
        timing_assumption_broken: broken,
    });
    for f in &schedule {
        shared.record_runner(Record::Fault {
            t: f.start().as_ms(),
            fault: f.clone(),
        });
    }

    let lat = &cfg.network.latency;
    let mut sim = turmoil::Builder::new()
        .rng_seed(crate::rng::SimRng::derive(seed, "turmoil", &[]).next_u64())
        .epoch(std::time::UNIX_EPOCH + Duration::from_millis(EPOCH_MS as u64))
        .tick_duration(Duration::from_millis(cfg.tick.as_ms()))
        .simulation_duration(Duration::from_millis(cfg.duration.as_ms() + 1))
        .min_message_latency(Duration::from_millis(lat.lo.as_ms()))
        .max_message_latency(Duration::from_millis(lat.hi.as_ms()))
        .tcp_capacity(TCP_CAPACITY)
        // Speed only (see `Stepping`).
        .skip_idle_hosts(stepping.skips_idle_hosts())
        .build();

    // Registration order is also the order hosts run in each step.
    {
        let (s, b) = (shared.clone(), backend.clone());
        sim.host("store", move || {
            gated(s.clone(), "store", store::run(s.clone(), b.clone()))
        });
    }
    for i in 1..=cfg.topology.workers {
        let (s, h) = (shared.clone(), format!("worker-{i}"));
        sim.host(h.clone(), move || {
            gated(
                s.clone(),
                &h,
                worker::run_worker(s.clone(), h.clone(), i - 1),
            )
        });
    }
    for i in 1..=cfg.topology.sweepers {
        let (s, h) = (shared.clone(), format!("sweeper-{i}"));
        sim.host(h.clone(), move || {
            gated(s.clone(), &h, worker::run_sweeper(s.clone(), h.clone()))
        });
    }
    for i in 1..=cfg.topology.schedulers {
        let (s, h) = (shared.clone(), format!("scheduler-{i}"));
        sim.host(h.clone(), move || {
            gated(
                s.clone(),
                &h,
                crate::hosts::scheduler::run_scheduler(s.clone(), h.clone()),
            )
        });
    }
    {
        let s = shared.clone();
        sim.host("client", move || {
            gated(s.clone(), "client", client::run(s.clone()))
        });
    }

    // Declared after `sim`, so dropped before it on every way out (a run
    // timeout, a panic, a turmoil error): tearing the world down drops
    // every task, and their guards must not record (nor read true time
    // outside a host).
    let _teardown = SilentTeardown(&shared);
    let b = backend.clone();
    let mut world = World {
        shared: shared.clone(),
        plan,
        next_process: 0,
        next_link_time: 0,
        links: BTreeMap::new(),
        on_store_down: Box::new(move || b.close()),
    };
    let end = cfg.duration.as_ms();
    let max_steps = end / cfg.tick.as_ms().max(1) + 2;
    let mut steps = 0u64;
    let mut quiet_since: Option<u64> = None;
    let mut next_quiet_check = 0u64;
    let mut quiet_end = false;
    let mut now = 0;
    while steps < max_steps {
        now = ms(sim.elapsed());
        if now >= end {
            break;
        }
        world.apply_due(&mut sim, now);
        sim.step().map_err(|e| HarnessError::Sim(e.to_string()))?;
        steps += 1;
        if let Some(p) = shared.panics().first() {
            return Err(HarnessError::Panic(p.clone()));
        }
        // Between steps, so the overshoot is at most one step (or one
        // store call, which the SQL driver bounds).
        if let Some((at, limit)) = deadline {
            if std::time::Instant::now() >= at {
                return Err(HarnessError::Timeout {
                    limit,
                    sim_ms: ms(sim.elapsed()),
                    duration_ms: end,
                    steps,
                });
            }
        }
        if now >= next_quiet_check {
            next_quiet_check = now + QUIET_CHECK_EVERY_MS;
            // Schedulers never run out of work, and I12 judges the plan
            // times up to the end: a world with schedulers runs its length.
            let quiet = cfg.topology.schedulers == 0
                && now >= heal
                && world.faults_done()
                && shared.client_done()
                && all_terminal(backend, &shared);
            match (quiet, quiet_since) {
                (false, _) => quiet_since = None,
                (true, None) => quiet_since = Some(now),
                (true, Some(since)) if now >= since + QUIET_GRACE_MS => {
                    quiet_end = true;
                    now = ms(sim.elapsed());
                    break;
                }
                _ => {}
            }
        }
    }
    if !quiet_end {
        now = ms(sim.elapsed()).min(end);
    }
    // Tearing the world down drops every task; their guards must not record.
    shared.set_crashing(true);
    drop(sim);
    let (rows, events) = read_final(backend)?;
    let history = collect(&shared, cfg, now, quiet_end, rows, events);
    let violations = checker::check(&history, cfg);
    Ok(RunOutcome {
        scenario: cfg.name.clone(),
        seed,
        violations,
        history_hash: history.hash(),
        sim_time_ms: now,
        timing_assumption_broken: broken,
        history,
        schedule,
        swarm,
        quiet_end,
        steps,
    })
}

/// A host's software wrapped in its pause gate.
fn gated<F>(
    shared: Arc<Shared>,
    host: &str,
    fut: F,
) -> impl std::future::Future<Output = turmoil::Result> + 'static
where
    F: std::future::Future<Output = turmoil::Result> + Send + 'static,
{
    let rt = crate::hosts::HostRuntime::new(shared, host);
    let g = rt.gate(async move { fut.await.map_err(|e| e.to_string()) });
    async move {
        match g.await {
            Some(Ok(())) | None => Ok(()),
            Some(Err(e)) => Err(e.into()),
        }
    }
}

/// Marks the run as tearing down when dropped (see its use in the run).
struct SilentTeardown<'a>(&'a Shared);

impl Drop for SilentTeardown<'_> {
    fn drop(&mut self) {
        self.0.set_crashing(true);
    }
}
