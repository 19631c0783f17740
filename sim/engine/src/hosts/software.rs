//! What each host of a world runs and is given: the one place where a
//! scenario and a seed are cut into the narrow contexts of its hosts.
//!
//! A host's software sees its [`HostRuntime`] (its name, number, clock,
//! pauses, incarnations and the run's recorder) and its own [`Settings`]:
//! the slice of the scenario it reads, the part of the fault plan it
//! obeys, and the generators it draws from. Nothing else of the run.
//!
//! Everything here is computed before the world starts and is a pure
//! function of the scenario and the seed: what a host draws, spawns and
//! records, and in what order, is decided by its software alone.

use super::client::{self, ClientSettings};
use super::handler::HandlerSettings;
use super::pruner::{run_pruner, PrunerSettings};
use super::scheduler::{run_scheduler, SchedulerSettings};
use super::store::{self, StoreSettings};
use super::store_faults::StoreFaults;
use super::worker::{run_sweeper, run_worker, ConfigureWorker, SweeperSettings, WorkerSettings};
use crate::faults::{FaultPlan, SwarmDraw};
use crate::machine::recorder::Recorder;
use crate::machine::runtime::HostRuntime;
use crate::stores::{Backend, StoreFactory};
use leasehold_model::catalogue::Variant;
use leasehold_model::clock::ClockModel;
use leasehold_model::config::{Host, HostKind, ScriptedFault, SimConfig};
use leasehold_model::protocol::{queues_of, worker_config};
use leasehold_model::workload::WorkloadPlan;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// One incarnation of a host's software.
pub type HostFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// What one host's software reads besides its runtime, by kind.
#[derive(Clone)]
pub enum Settings {
    /// The store host's.
    Store(Arc<StoreSettings>),
    /// A worker host's.
    Worker(Arc<WorkerSettings>),
    /// A sweeper host's.
    Sweeper(SweeperSettings),
    /// A scheduler host's.
    Scheduler(Arc<SchedulerSettings>),
    /// The client's.
    Client(Arc<ClientSettings>),
    /// A pruner host's.
    Pruner(Arc<PrunerSettings>),
}

impl Settings {
    /// A fresh incarnation of the software of the host of `rt`, in its
    /// pause gate; the store host serves `backend`'s store.
    pub fn incarnation<F: StoreFactory>(
        &self,
        rt: &HostRuntime,
        backend: &Arc<Backend<F>>,
    ) -> HostFuture {
        let r = rt.clone();
        let fut: HostFuture = match self {
            Settings::Store(s) => Box::pin(store::run(r, s.clone(), backend.clone())),
            Settings::Worker(s) => Box::pin(run_worker(r, s.clone())),
            Settings::Sweeper(s) => Box::pin(run_sweeper(r, *s)),
            Settings::Scheduler(s) => Box::pin(run_scheduler(r, s.clone())),
            Settings::Client(s) => Box::pin(client::run(r, s.clone())),
            Settings::Pruner(s) => Box::pin(run_pruner(r, s.clone())),
        };
        let gated = rt.gate(fut);
        Box::pin(async move {
            match gated.await {
                // A panic was reported to the recorder.
                Some(Ok(())) | None => Ok(()),
                Some(Err(e)) => Err(e),
            }
        })
    }
}

/// What a run of one seed is, that the hosts' settings are cut from.
pub struct Run<'a> {
    /// The scenario.
    pub cfg: &'a SimConfig,
    /// The seed.
    pub seed: u64,
    /// The buggy variant in force.
    pub variant: Option<Variant>,
    /// The rates the seed drew.
    pub draw: &'a SwarmDraw,
    /// When every fault has healed (true time).
    pub heal_ms: u64,
    /// The seed's concrete fault schedule (clocks are read from it).
    pub schedule: &'a [ScriptedFault],
    /// Its plan (pauses and shutdowns).
    pub plan: &'a FaultPlan,
    /// The workload.
    pub workload: Arc<WorkloadPlan>,
    /// The client's settings (the runner reads when it is done).
    pub client: Arc<ClientSettings>,
}

/// Every host of the world with its runtime and settings, in registration
/// order, all recording to `recorder`.
pub fn contexts(run: &Run<'_>, recorder: &Arc<Recorder>) -> Vec<(Host, HostRuntime, Settings)> {
    let cfg = run.cfg;
    let window_ms = cfg.faults.window.as_ms();
    let handler = Arc::new(HandlerSettings {
        workload: run.workload.clone(),
        window_ms,
        heal_ms: run.heal_ms,
        schedule_run_ms: cfg.workload.run_time.lo.as_ms(),
    });
    let store = Arc::new(StoreSettings::of(
        cfg,
        run.seed,
        StoreFaults::new(
            run.seed,
            run.draw.clone(),
            window_ms,
            run.plan.conflict_windows(),
        ),
    ));
    let sweeper = SweeperSettings {
        interval: cfg.protocol.sweep_interval.0,
        variant: run.variant,
    };
    let scheduler = Arc::new(SchedulerSettings::of(cfg, run.variant));
    let pruner = Arc::new(PrunerSettings::of(cfg));
    let (shared_cfg, variant) = (Arc::new(cfg.clone()), run.variant);
    let configure: Arc<ConfigureWorker> =
        Arc::new(move |id, queues| worker_config(&shared_cfg, id, queues, variant));
    let per = cfg.topology.workers_per_process.max(1) as usize;
    cfg.hosts()
        .registration()
        .iter()
        .map(|h| {
            let settings = match h.kind {
                HostKind::Store => Settings::Store(store.clone()),
                HostKind::Worker(n) => Settings::Worker(Arc::new(WorkerSettings {
                    // Worker `k` counts every worker of every host from 0.
                    queues: (0..per)
                        .map(|j| queues_of(cfg, (n as usize - 1) * per + j))
                        .collect(),
                    variant,
                    configure: configure.clone(),
                    shutdowns: run.plan.shutdowns_of(&h.name),
                    handler: handler.clone(),
                    single_calls: cfg.topology.single_calls,
                })),
                HostKind::Sweeper(_) => Settings::Sweeper(sweeper),
                HostKind::Scheduler(_) => Settings::Scheduler(scheduler.clone()),
                HostKind::Client => Settings::Client(run.client.clone()),
                HostKind::Pruner(_) => Settings::Pruner(pruner.clone()),
            };
            let clock = Arc::new(ClockModel::of_host(&h.name, run.schedule));
            let pauses = run.plan.pauses_of(&h.name);
            let rt = HostRuntime::new(h, clock, pauses, recorder.clone());
            (h.clone(), rt, settings)
        })
        .collect()
}
