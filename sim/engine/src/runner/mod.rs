//! Runs one seed of a scenario: builds the world, runs every host on the
//! seed's one executor while applying the fault schedule at its exact
//! instants, collects the history and checks it.
//!
//! ## Time
//! Time is event-driven ([`crate::exec`]): once no task is ready, true
//! time jumps to the earliest of the next timer of any host, the next
//! message arrival, the next fault and the next quiet-end check. Message
//! latency is drawn exactly, in milliseconds, within `network.latency`
//! (an exponential shape); a scenario's `tick`, if it sets one, is
//! only a delivery quantum (arrivals rounded up to it). Clocks, timers,
//! pauses, crashes and link changes are exact to the millisecond.
//!
//! ## Order within an instant
//! At each instant the runner applies the faults due, runs the quiet-end
//! check if due, fires the due events in (time, insertion) order, then
//! polls ready tasks first in, first out until none is left (tasks may
//! queue more events at the same instant, which fire next).
//!
//! ## Speed
//! A run costs one poll per task wake-up and one step of the loop per
//! distinct instant with something to do; an idle host costs nothing.
//! `examples/sim_speed.rs` and `docs/PERFORMANCE.md` give the figures
//! (against the previous engine, which stepped every host's own tokio
//! runtime by a fixed tick under turmoil).
//!
//! ## Quiet end
//! Once every fault has healed, the client has finished its schedule and
//! every job has been terminal for [`QUIET_GRACE_MS`], nothing can change
//! any more (terminal rows never change, and no request that could change
//! one is left to send), so the run stops early and says so in its `End`
//! record. This skips the idle tail of long scenarios.

mod collect;
mod error;
mod valid;
mod world;

pub use error::HarnessError;
pub use valid::PreparedConfig;

pub use crate::stores::Backend;
use collect::collect;
use world::{Starter, World};

use crate::coverage::{self, Coverage};
use crate::exec::executor::Executor;
use crate::faults::{self, FaultPlan, SwarmDraw};
use crate::hosts::client::ClientSettings;
use crate::hosts::software::{self, Settings};
use crate::machine::recorder::Recorder;
use crate::machine::HostRuntime;
use crate::net::fabric::Fabric;
use crate::stores::{SeedContext, StoreFactory};
use leasehold_check::checker::{self, Violation};
use leasehold_core::{list_all, Event, JobRecord};
use leasehold_model::catalogue::{self, Variant};
use leasehold_model::config::{Host, ScriptedFault, SimConfig};
use leasehold_model::history::{History, Record};
use leasehold_model::workload::WorkloadPlan;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long every job must have been terminal before a run may end early.
pub const QUIET_GRACE_MS: u64 = 10_000;
/// How often the runner checks for the quiet end.
const QUIET_CHECK_EVERY_MS: u64 = 1_000;
/// Most rounds of the loop at one instant (each fires events and polls
/// what they woke) before the run is declared live-locked.
const MAX_ROUNDS_PER_INSTANT: u64 = 1_000_000;
/// How many rounds pass between two reads of the wall clock for the run
/// timeout.
const DEADLINE_EVERY: u64 = 256;

/// What one seed leaves: the one type [`run_seed`] hands back and every
/// caller keeps (the harness and the CLI wrap it; none has its own).
#[derive(Clone, Debug)]
pub struct SeedOutcome {
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
    /// Distinct instants the simulated clock stopped at.
    pub steps: u64,
    /// The named situations the run reached ([`crate::coverage`]): the
    /// built-in ones read off the history, and the ones simulated code
    /// marked with [`crate::coverage::sometimes`]. Not part of the history
    /// or its hash.
    pub coverage: Coverage,
    /// With interleaving on, the statement order of each interleaved
    /// group of SQL transactions, in the order they ran (see
    /// [`crate::stores::interleave::Interleaver::orders`]); empty otherwise.
    pub statement_orders: Vec<String>,
}

impl SeedOutcome {
    /// Whether every invariant held.
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// Takes the history out (left empty), for callers that keep many
    /// outcomes but only need the history of the one they look at.
    pub fn take_history(&mut self) -> History {
        std::mem::take(&mut self.history)
    }
}

/// The concrete fault schedule `seed` draws for `cfg`.
pub fn fault_schedule(cfg: &SimConfig, seed: u64) -> Vec<ScriptedFault> {
    faults::fault_schedule(cfg, seed)
}

/// Whether every one of the `want` planned jobs exists and is terminal
/// (read through the open store; `false` while the store is down).
fn all_terminal<F: StoreFactory>(backend: &Backend<F>, want: usize) -> bool {
    let Some(store) = backend.current() else {
        return false;
    };
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

/// How one seed runs, besides its config, seed and store.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunOptions {
    /// Stopped with [`HarnessError::Timeout`] once this much wall time has
    /// passed (`None`: no limit). The wall clock is read between steps only
    /// to abort, never to decide anything the simulation sees, so a run
    /// that finishes in time has the same history with or without a limit.
    pub limit: Option<Duration>,
    /// Ready tasks run in an order drawn from the seed instead of first in,
    /// first out: other interleavings of the same faults, still one history
    /// per seed (off by default; the recorded hashes and the catalogue's
    /// seeds are FIFO's).
    pub explore: bool,
    /// The built-in situations are not observed ([`SeedOutcome::coverage`]
    /// then holds only what simulated code marked): for measuring what
    /// observing costs. Off by default; the history is the same either way.
    pub skip_coverage: bool,
    /// SQL transactions of one instant run interleaved at their statements,
    /// in an order drawn from the seed (see [`crate::stores::interleave`];
    /// also on when the scenario says `interleave = true`; the memory
    /// store ignores it).
    pub interleave: bool,
    /// The run is one side of a comparison between two different stores
    /// (`leasehold run --against`), whose answers must agree, so it draws
    /// only inputs both stores answer alike. Off by default. On:
    /// - no part gate ([`SimStore::part_gate`]): the SQL stores have none
    ///   (a batch is one transaction), so batch parts finish in list order
    ///   and no single part conflicts alone (`faults.batch_parts`, the part
    ///   conflicts of `faults.conflict_on`);
    /// - no `Conflict` on an enqueue (`faults.conflict_on = "every-write"`):
    ///   PostgreSQL spends sequence values on the rolled-back insert, so
    ///   its later jobs get other ids than the memory store's, and the
    ///   workload's results and retry jitter follow the ids.
    ///
    /// [`SimStore::part_gate`]: crate::stores::SimStore::part_gate
    pub differential: bool,
}

/// The one door into a seed: `seed` of `cfg` on a fresh store from
/// `factory` (one database for this seed, destroyed after), run in one
/// world, checked against every invariant at the end; one outcome out.
/// Every tool runs seeds through here: run, replay, shrink, explore,
/// export and the harness for a user's own store.
///
/// ```no_run
/// use leasehold_model::builtin;
/// use leasehold_sim::runner::{run_seed, RunOptions, PreparedConfig};
/// use leasehold_sim::stores::MemoryFactory;
/// use std::sync::Arc;
/// let cfg = PreparedConfig::new(builtin::small_swarm()).expect("a valid scenario");
/// let out = run_seed(&cfg, 7, &Arc::new(MemoryFactory), RunOptions::default())
///     .expect("the harness runs");
/// assert!(out.violations.is_empty());
/// ```
pub fn run_seed<F: StoreFactory>(
    cfg: &PreparedConfig,
    seed: u64,
    factory: &Arc<F>,
    opts: RunOptions,
) -> Result<SeedOutcome, HarnessError> {
    let deadline = opts.limit.map(|l| (std::time::Instant::now() + l, l));
    let variant = cfg.variant();
    if let Some(v) = variant {
        if catalogue::is_store_side(v) && !factory.carries_store_variant(v) {
            return Err(HarnessError::Store(format!(
                "variant {v} is a bug planted in another store; the {} store \
                 does not carry it",
                factory.name()
            )));
        }
    }
    let ctx = SeedContext {
        scenario: cfg.name.clone(),
        seed,
        policy: leasehold_model::protocol::policy_of(cfg, seed).map_err(HarnessError::Sim)?,
        variant,
        interleave: opts.interleave || cfg.interleave,
        differential: opts.differential,
    };
    let backend = Arc::new(
        Backend::create(factory.clone(), ctx).map_err(|e| HarnessError::Store(e.to_string()))?,
    );
    let out = run_world(cfg, seed, variant, &backend, deadline, opts);
    backend.destroy();
    out
}

fn run_world<F: StoreFactory>(
    cfg: &SimConfig,
    seed: u64,
    variant: Option<Variant>,
    backend: &Arc<Backend<F>>,
    deadline: Option<(std::time::Instant, Duration)>,
    opts: RunOptions,
) -> Result<SeedOutcome, HarnessError> {
    let schedule = fault_schedule(cfg, seed);
    let plan = FaultPlan::new(&schedule);
    let swarm = faults::draw_swarm(cfg, seed);
    let heal = faults::heal_time(cfg, &schedule);
    let broken = faults::timing_assumption_broken(cfg, &schedule);
    let workload = Arc::new(WorkloadPlan::new(cfg, seed));
    let jobs = workload.jobs.len();
    let client = Arc::new(ClientSettings::of(cfg, workload.clone()));
    let recorder = Arc::new(Recorder::default());
    // Every host of the one list, with its runtime and what it reads.
    let run = software::Run {
        cfg,
        seed,
        variant,
        draw: &swarm,
        heal_ms: heal,
        schedule: &schedule,
        plan: &plan,
        workload,
        client: client.clone(),
    };
    let contexts = software::contexts(&run, &recorder);
    recorder.record_runner(Record::Run {
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
        recorder.record_runner(Record::Fault {
            t: f.start().as_ms(),
            fault: f.clone(),
        });
    }

    // Registration order: the order hosts start in, and their numbers.
    let names: Vec<String> = contexts.iter().map(|(h, _, _)| h.name.clone()).collect();
    let lat = &cfg.network.latency;
    let fabric = Fabric::new(
        names.clone(),
        leasehold_model::rng::SimRng::derive(seed, "latency", &[]),
        lat.lo.as_ms(),
        lat.hi.as_ms(),
        cfg.tick.as_ms(),
    );
    let mut exec = Executor::new(names.len());
    if opts.explore {
        exec = exec.with_seeded_order(leasehold_model::rng::SimRng::derive(
            seed,
            "task-order",
            &[],
        ));
    }
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let hosts: Vec<(Host, Starter)> = contexts
        .into_iter()
        .map(|(h, rt, settings)| {
            let (b, errs) = (backend.clone(), errors.clone());
            let starter: Starter =
                Box::new(move |running| start(&rt, &settings, &b, &errs, running));
            (h, starter)
        })
        .collect();
    let b = backend.clone();
    let mut world = World::new(
        hosts,
        fabric,
        exec,
        plan,
        recorder.clone(),
        Box::new(move || b.close()),
    );
    // Declared before `world`'s tear-down guard and dropped after it: the
    // world's tasks and timers are dropped while it is still entered.
    let _entered = world.enter();
    // Dropped before `world` on every way out (a run timeout, a panic, a
    // harness error): tearing the world down drops every task, and their
    // guards must not record.
    let _teardown = SilentTeardown(&recorder);
    // What simulated code marks with `sometimes` during this run.
    let marked = coverage::enter();
    world.start_all();
    let end = cfg.duration.as_ms();
    let mut steps = 0u64;
    let mut rounds = 0u64;
    let mut same_instant = 0u64;
    let mut quiet_since: Option<u64> = None;
    let mut next_quiet_check = 0u64;
    let mut quiet_end = false;
    let outcome = loop {
        world.run_ready().map_err(HarnessError::Sim)?;
        if let Some(p) = recorder.panics().first() {
            break Err(HarnessError::Panic(p.clone()));
        }
        if let Some(e) = errors.lock().unwrap_or_else(|p| p.into_inner()).first() {
            break Err(HarnessError::Sim(e.clone()));
        }
        rounds += 1;
        if let Some((at, limit)) = deadline {
            if rounds % DEADLINE_EVERY == 0 && std::time::Instant::now() >= at {
                break Err(HarnessError::Timeout {
                    limit,
                    sim_ms: world.now(),
                    duration_ms: end,
                    steps,
                });
            }
        }
        let now = world.now();
        let next = [
            world.next_event(),
            world.next_fault(),
            Some(next_quiet_check),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(end)
        .max(now);
        if next >= end {
            world.advance_to(end.max(now));
            break Ok(());
        }
        if next == now {
            same_instant += 1;
            if same_instant > MAX_ROUNDS_PER_INSTANT {
                break Err(HarnessError::Sim(format!(
                    "{MAX_ROUNDS_PER_INSTANT} rounds at {now} ms without time moving: a live-lock"
                )));
            }
        } else {
            same_instant = 0;
            steps += 1;
            world.advance_to(next);
        }
        world.apply_due(next);
        if next >= next_quiet_check {
            next_quiet_check = next + QUIET_CHECK_EVERY_MS;
            // Schedulers never run out of work, and I12 judges the plan
            // times up to the end: a world with schedulers runs its length.
            let quiet = cfg.topology.schedulers == 0
                && next >= heal
                && world.faults_done()
                && client.is_done()
                && all_terminal(backend, jobs);
            match (quiet, quiet_since) {
                (false, _) => quiet_since = None,
                (true, None) => quiet_since = Some(next),
                (true, Some(since)) if next >= since + QUIET_GRACE_MS => {
                    quiet_end = true;
                    break Ok(());
                }
                _ => {}
            }
        }
        world.fire_due(next);
    };
    let now = world.now().min(end);
    // Tearing the world down drops every task; their guards must not record.
    world.tear_down();
    outcome?;
    let (rows, events) = read_final(backend)?;
    let history = collect(&recorder, cfg, now, quiet_end, rows, events);
    let violations = checker::check(&history, cfg);
    let mut reached = marked.finish();
    if !opts.skip_coverage {
        reached.merge(&coverage::observe(&history, cfg));
    }
    Ok(SeedOutcome {
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
        coverage: reached,
        statement_orders: backend.statement_orders(),
    })
}

/// A fresh incarnation of the software of the host of `rt`, gated; a host
/// that fails (its configuration rejected, its store not opened) reports
/// to `errors`, and `running` is cleared once the software returns.
fn start<F: StoreFactory>(
    rt: &HostRuntime,
    settings: &Settings,
    backend: &Arc<Backend<F>>,
    errors: &Arc<Mutex<Vec<String>>>,
    running: Arc<AtomicBool>,
) -> crate::exec::executor::TaskFuture {
    let g = settings.incarnation(rt, backend);
    let (host, errors) = (rt.host().to_string(), errors.clone());
    Box::pin(async move {
        let out = g.await;
        running.store(false, Ordering::SeqCst);
        if let Err(e) = out {
            errors
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(format!("{host}: {e}"));
        }
    })
}

/// Marks the run as tearing down when dropped (see its use in the run).
struct SilentTeardown<'a>(&'a Recorder);

impl Drop for SilentTeardown<'_> {
    fn drop(&mut self) {
        self.0.set_crashing(true);
    }
}
