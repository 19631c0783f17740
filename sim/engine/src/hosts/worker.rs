//! Worker and sweeper hosts: the real `leasehold_core::Worker` and
//! `Sweeper`, on a [`RemoteStore`](crate::net::RemoteStore), reporting every lease milestone.
//!
//! A worker host is one process: `topology.workers_per_process` workers
//! share its store client (their batches merge into shared messages, as
//! `BatchMerger` merges them in production's adapters) and its wake-up
//! listener, and a crash takes them all down at once.
//!
//! A scripted `shutdown worker-N at T` is carried out by the worker host
//! itself: the incarnation running at T raises its shutdown handle at true
//! time T (later if the host is paused then), so the core worker stops
//! claiming, gives its handlers the grace time, returns their leases
//! (`Returned`, attempt refunded), and `run` returns; the host's software
//! then ends. A later scripted `restart` starts a new incarnation.

use super::handler::{HandlerSettings, SimHandler};
use super::single_calls::WorkerClient;
use crate::faults::Shutdowns;
use crate::machine::runtime::{sleep_until_true, HostRuntime};
use leasehold_core::worker::wake::WorkSignal;
use leasehold_core::worker::{RuntimeEvent, WorkerConfigBuilder};
use leasehold_core::{shutdown_channel, Millis, Sweeper, SweeperConfig, Worker};
use leasehold_model::catalogue::{self, Variant};
use leasehold_model::history::record_of_event;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

/// Most reclaims per sweep call.
pub const SWEEP_BATCH: u32 = 100;

/// The configuration of one worker under its identity, not yet built: the
/// scenario's protocol settings for the worker's queues, with the
/// catalogue's variant put in.
pub type ConfigureWorker = dyn Fn(&str, &[String]) -> WorkerConfigBuilder + Send + Sync;

/// What one worker host is given, for every incarnation.
pub struct WorkerSettings {
    /// The queues of each worker of the process, in slot order (one
    /// worker per entry: `topology.workers_per_process` of them).
    pub queues: Vec<Vec<String>>,
    /// The buggy variant in force (identities, merger).
    pub variant: Option<Variant>,
    /// Each worker's configuration.
    pub configure: Arc<ConfigureWorker>,
    /// The host's scripted graceful shutdowns.
    pub shutdowns: Shutdowns,
    /// What its handlers read.
    pub handler: Arc<HandlerSettings>,
    /// Whether its store client sends each part of a batch alone
    /// (`topology.single_calls`; see [`super::single_calls`]).
    pub single_calls: bool,
}

/// What a sweeper host is given.
#[derive(Clone, Copy, Debug)]
pub struct SweeperSettings {
    /// Interval between sweeps.
    pub interval: Millis,
    /// The buggy variant in force (whose clock a sweep carries).
    pub variant: Option<Variant>,
}

/// The worker identity of an incarnation: `worker-2` first, then
/// `worker-2#1`, ... (the same name every time under
/// `restart-reuses-identity`). With several workers per process, worker
/// `k` (from 1) of the host is `worker-2.k`, `worker-2.k#1`, ...
pub fn worker_identity(
    host: &str,
    slot: Option<u32>,
    incarnation: u32,
    variant: Option<Variant>,
) -> String {
    let base = match slot {
        Some(k) => format!("{host}.{k}"),
        None => host.to_string(),
    };
    if incarnation == 0 || catalogue::reuses_identity(variant) {
        base
    } else {
        format!("{base}#{incarnation}")
    }
}

/// Turns a runtime event into a history record.
fn observe(rt: &HostRuntime, e: &RuntimeEvent) {
    let (t, _) = rt.times();
    let r = record_of_event(e, t, rt.host(), |local| rt.true_of_local(local));
    rt.recorder().record(r);
}

/// Polls every future of `all` in index order until each has finished:
/// the workers of one process (and its wake-up listener) share the host's
/// main task, so the order they run in after a wake-up never depends on
/// which of them tokio woke first.
async fn join_in_order(mut all: Vec<Pin<Box<dyn Future<Output = ()> + Send + '_>>>) {
    let mut done = vec![false; all.len()];
    std::future::poll_fn(|cx| {
        for (f, d) in all.iter_mut().zip(done.iter_mut()) {
            if !*d && f.as_mut().poll(cx).is_ready() {
                *d = true;
            }
        }
        if done.iter().all(|d| *d) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// The worker host's software: one incarnation of a process running
/// `topology.workers_per_process` workers on one store client (one
/// [`RemoteStore`](crate::net::RemoteStore), whose batches merge as
/// production's adapters merge them) and one wake-up listener.
pub async fn run_worker(rt: HostRuntime, settings: Arc<WorkerSettings>) -> Result<(), String> {
    let host = rt.host().to_string();
    let incarnation = rt.next_incarnation();
    let per = settings.queues.len().max(1) as u32;
    let ids: Vec<String> = (1..=per)
        .map(|k| {
            let slot = (per > 1).then_some(k);
            worker_identity(&host, slot, incarnation, settings.variant)
        })
        .collect();
    let t = rt.started(
        incarnation,
        Some(leasehold_core::WorkerId::new(ids[0].clone())),
    );
    let wake = Arc::new(WorkSignal::new());
    let store = Arc::new(WorkerClient::new(
        crate::net::worker_store(rt.clone(), wake.clone(), settings.variant),
        settings.single_calls,
    ));
    let turns = SimHandler::new(
        rt.clone(),
        settings.handler.clone(),
        leasehold_core::WorkerId::new(ids[0].clone()),
    );
    let (handle, shutdown) = shutdown_channel();
    let mut workers: Vec<Pin<Box<dyn Future<Output = ()> + Send + '_>>> = Vec::new();
    for (id, queues) in ids.iter().zip(&settings.queues) {
        let b = (settings.configure)(id, queues);
        let cfg = b.build().map_err(|e| format!("{host}: {e}"))?;
        let handler = turns.for_worker(leasehold_core::WorkerId::new(id.clone()));
        let obs_rt = rt.clone();
        let worker = Worker::new(store.clone(), handler, rt.clone(), cfg)
            .with_observer(move |e: &RuntimeEvent| observe(&obs_rt, e));
        let sd = shutdown.clone();
        workers.push(Box::pin(async move {
            worker.run(sd).await;
        }));
    }
    crate::net::listen_for_wake_ups(&rt, wake);
    let run = join_in_order(workers);
    match settings.shutdowns.after(t) {
        None => {
            let _keep = handle;
            run.await;
        }
        Some(at) => {
            // The timer first: a host resuming from a pause past `at` raises
            // the shutdown before the workers act on anything else.
            tokio::pin!(run);
            tokio::select! {
                biased;
                _ = sleep_until_true(at) => handle.shutdown(),
                _ = &mut run => return Ok(()),
            }
            run.await;
        }
    }
    Ok(())
}

/// The sweeper host's software: one incarnation.
pub async fn run_sweeper(rt: HostRuntime, settings: SweeperSettings) -> Result<(), String> {
    rt.start();
    let own_clock = catalogue::sweeper_sends_wall(settings.variant);
    let store = Arc::new(crate::net::remote_store(rt.clone(), own_clock));
    let cfg = SweeperConfig::new(settings.interval, SWEEP_BATCH)
        .map_err(|e| format!("{}: {e}", rt.host()))?;
    let obs_rt = rt.clone();
    let sweeper = Sweeper::new(store, rt.clone(), cfg)
        .with_observer(move |e: &RuntimeEvent| observe(&obs_rt, e));
    let sweeper = catalogue::configure_sweeper(sweeper, settings.variant);
    let (_keep, shutdown) = shutdown_channel();
    sweeper.run(shutdown).await;
    Ok(())
}
