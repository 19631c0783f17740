//! State shared by every host of one run and by the runner: the history
//! being recorded, clocks, pauses and the network drop generator.
//!
//! Everything runs on one thread (the seed's executor), so
//! the locks are never contended; they exist because the core's `Runtime`
//! and `Store` must be `Send + Sync`.

use crate::faults::{FaultPlan, SwarmDraw};
use leasehold_core::JobId;
use leasehold_model::catalogue::Variant;
use leasehold_model::clock::ClockModel;
use leasehold_model::config::SimConfig;
use leasehold_model::history::Record;
use leasehold_model::rng::SimRng;
use leasehold_model::workload::WorkloadPlan;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Where a store-event's true time comes from: the first request after which
/// the row had this version.
pub type Anchors = BTreeMap<(JobId, u64), (u64, u64)>;

/// The state of one run shared by all hosts.
pub struct Shared {
    /// The scenario.
    pub cfg: Arc<SimConfig>,
    /// The seed.
    pub seed: u64,
    /// The buggy variant in force.
    pub variant: Option<Variant>,
    /// The rates this seed drew.
    pub draw: SwarmDraw,
    /// Faults happen before this true time (message loss, hangs).
    pub window_ms: u64,
    /// Every fault has healed by this true time.
    pub heal_ms: u64,
    /// Clocks by host.
    pub clocks: BTreeMap<String, Arc<ClockModel>>,
    /// The fault plan (pauses by host).
    pub plan: FaultPlan,
    /// The workload.
    pub workload: WorkloadPlan,
    records: Mutex<Vec<Record>>,
    anchors: Mutex<Anchors>,
    net_rng: Mutex<SimRng>,
    conflicts: Mutex<Conflicts>,
    wake_rng: Mutex<SimRng>,
    cancel_rng: Mutex<SimRng>,
    transient_rng: Mutex<SimRng>,
    interleave_rng: Mutex<SimRng>,
    incarnations: Mutex<BTreeMap<String, u32>>,
    panics: Mutex<Vec<String>>,
    next_req: AtomicU64,
    crashing: AtomicBool,
    client_done: AtomicBool,
}

/// The store's injected conflicts: their generator, and the (host, job)
/// pairs whose last request was answered `Conflict`.
struct Conflicts {
    rng: SimRng,
    last: BTreeSet<(String, JobId)>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// A fresh run state.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cfg: Arc<SimConfig>,
        seed: u64,
        variant: Option<Variant>,
        draw: SwarmDraw,
        heal_ms: u64,
        clocks: BTreeMap<String, Arc<ClockModel>>,
        plan: FaultPlan,
        workload: WorkloadPlan,
    ) -> Self {
        Shared {
            window_ms: cfg.faults.window.as_ms(),
            cfg,
            seed,
            variant,
            draw,
            heal_ms,
            clocks,
            plan,
            workload,
            records: Mutex::new(Vec::with_capacity(1 << 14)),
            anchors: Mutex::default(),
            net_rng: Mutex::new(SimRng::derive(seed, "network", &[])),
            conflicts: Mutex::new(Conflicts {
                rng: SimRng::derive(seed, "store-conflict", &[]),
                last: BTreeSet::new(),
            }),
            wake_rng: Mutex::new(SimRng::derive(seed, "wake-loss", &[])),
            cancel_rng: Mutex::new(SimRng::derive(seed, "store-cancel", &[])),
            transient_rng: Mutex::new(SimRng::derive(seed, "store-transient", &[])),
            interleave_rng: Mutex::new(SimRng::derive(seed, "store-interleave", &[])),
            incarnations: Mutex::default(),
            panics: Mutex::default(),
            next_req: AtomicU64::new(1),
            crashing: AtomicBool::new(false),
            client_done: AtomicBool::new(false),
        }
    }

    /// Appends a record, unless a host is being torn down (its drop guards
    /// run outside simulated time and must not write history).
    pub fn record(&self, r: Record) {
        if !self.is_crashing() {
            lock(&self.records).push(r);
        }
    }

    /// Appends a record from the runner (always kept).
    pub fn record_runner(&self, r: Record) {
        lock(&self.records).push(r);
    }

    /// Takes the records out.
    pub fn take_records(&self) -> Vec<Record> {
        std::mem::take(&mut *lock(&self.records))
    }

    /// A fresh request id (global, in execution order).
    pub fn next_request_id(&self) -> u64 {
        self.next_req.fetch_add(1, Ordering::Relaxed)
    }

    /// Marks the start or end of a host tear-down by the runner.
    pub fn set_crashing(&self, on: bool) {
        self.crashing.store(on, Ordering::Relaxed);
    }

    /// Whether a host is being torn down right now.
    pub fn is_crashing(&self) -> bool {
        self.crashing.load(Ordering::Relaxed)
    }

    /// The next incarnation number of `host` (0 on its first start).
    pub fn next_incarnation(&self, host: &str) -> u32 {
        let mut m = lock(&self.incarnations);
        let n = m.entry(host.to_string()).or_insert(0);
        let this = *n;
        *n += 1;
        this
    }

    /// Whether the store answers this request from `host` on `job`
    /// `Conflict` without applying it (the seed's `store_conflict` rate,
    /// inside the fault window). Never twice in a row for one host and job:
    /// the contention has passed by the next try. Draws from a generator of
    /// its own, and only when the rate is above zero, so a scenario without
    /// store conflicts draws exactly as before.
    pub fn store_conflict(&self, host: &str, job: JobId, in_window: bool) -> bool {
        let p = self.draw.store_conflict;
        if p <= 0.0 {
            return false;
        }
        let mut c = lock(&self.conflicts);
        let key = (host.to_string(), job);
        if c.last.remove(&key) || !in_window {
            return false;
        }
        let hit = c.rng.chance(p);
        if hit {
            c.last.insert(key);
        }
        hit
    }

    /// Whether one wake-up datagram is lost (the seed's `wake_loss` rate,
    /// inside the fault window). Draws from a generator of its own, and
    /// only when the rate is above zero.
    pub fn wake_lost(&self, in_window: bool) -> bool {
        let p = self.draw.wake_loss;
        in_window && p > 0.0 && lock(&self.wake_rng).chance(p)
    }

    /// Whether the caller of one worker batch drops it mid-transaction
    /// (the seed's `store_cancel` rate, inside the window). Draws from a
    /// generator of its own, and only when the rate is above zero.
    pub fn store_cancelled(&self, in_window: bool) -> bool {
        let p = self.draw.store_cancel;
        in_window && p > 0.0 && lock(&self.cancel_rng).chance(p)
    }

    /// Whether a write the store did not answer `Conflict` still meets one
    /// failure its adapter retries (the seed's `store_conflict` rate, from
    /// a generator of its own, inside the window). Only a store that raises
    /// injected failures itself (PostgreSQL) shows anything of it, and then
    /// only by retrying: its answer is the same.
    pub fn store_transient(&self, in_window: bool) -> bool {
        let p = self.draw.store_conflict;
        in_window && p > 0.0 && lock(&self.transient_rng).chance(p)
    }

    /// Whether the store host defers one poll of a store call (a coin per
    /// poll, from a generator of its own; see `hosts::store`).
    pub fn defer_store_poll(&self) -> bool {
        lock(&self.interleave_rng).chance(0.5)
    }

    /// Draws from the network drop generator.
    pub fn net_chance(&self, p: f64) -> bool {
        p > 0.0 && lock(&self.net_rng).chance(p)
    }

    /// Notes the true time and request after which `job` had `version`
    /// (the first note wins).
    pub fn anchor(&self, job: JobId, version: u64, t: u64, req: u64) {
        lock(&self.anchors)
            .entry((job, version))
            .or_insert((t, req));
    }

    /// The anchors noted so far.
    pub fn take_anchors(&self) -> Anchors {
        std::mem::take(&mut *lock(&self.anchors))
    }

    /// Reports a panic inside simulated code.
    pub fn report_panic(&self, msg: String) {
        lock(&self.panics).push(msg);
    }

    /// Panics reported so far.
    pub fn panics(&self) -> Vec<String> {
        lock(&self.panics).clone()
    }

    /// The client finished its schedule.
    pub fn set_client_done(&self) {
        self.client_done.store(true, Ordering::Relaxed);
    }

    /// Whether the client finished its schedule.
    pub fn client_done(&self) -> bool {
        self.client_done.load(Ordering::Relaxed)
    }

    /// The clock of `host`.
    pub fn clock(&self, host: &str) -> Arc<ClockModel> {
        self.clocks.get(host).cloned().unwrap_or_default()
    }
}
