//! Worker and sweeper hosts: the real `leasehold_core::Worker` and
//! `Sweeper`, on a [`RemoteStore`](crate::net::RemoteStore), reporting every lease milestone.
//!
//! A scripted `shutdown worker-N at T` is carried out by the worker host
//! itself: the incarnation running at T raises its shutdown handle at true
//! time T (later if the host is paused then), so the core worker stops
//! claiming, gives its handlers the grace time, returns their leases
//! (`Returned`, attempt refunded), and `run` returns; the host's software
//! then ends. A later scripted `restart` starts a new incarnation.

use super::handler::SimHandler;
use super::runtime::{sleep_until_true, HostRuntime};
use super::shared::Shared;
use crate::catalogue::{self, Variant};
use crate::history::{record_of_event, Record};
use leasehold_core::worker::RuntimeEvent;
use leasehold_core::{shutdown_channel, Sweeper, SweeperConfig, Worker};
use std::sync::Arc;

/// Most reclaims per sweep call.
pub const SWEEP_BATCH: u32 = 100;

/// The worker identity of an incarnation: `worker-2` first, then
/// `worker-2#1`, ... (the same name every time under
/// `restart-reuses-identity`).
pub fn worker_identity(host: &str, incarnation: u32, variant: Option<Variant>) -> String {
    if incarnation == 0 || catalogue::reuses_identity(variant) {
        host.to_string()
    } else {
        format!("{host}#{incarnation}")
    }
}

/// Turns a runtime event into a history record.
fn observe(rt: &HostRuntime, e: &RuntimeEvent) {
    let (t, _) = rt.times();
    let r = record_of_event(e, t, rt.host(), |local| rt.true_of_local(local));
    rt.shared().record(r);
}

/// The worker host's software: one incarnation.
pub async fn run_worker(shared: Arc<Shared>, host: String, index: u32) -> turmoil::Result {
    let rt = HostRuntime::new(shared.clone(), &host);
    let incarnation = shared.next_incarnation(&host);
    let id = worker_identity(&host, incarnation, shared.variant);
    let (t, _) = rt.times();
    shared.record(Record::HostStarted {
        t,
        host: host.clone(),
        incarnation,
        worker: Some(leasehold_core::WorkerId::new(id.clone())),
    });
    let queues = &shared.cfg.workload.queues;
    let queue = queues[index as usize % queues.len().max(1)].clone();
    let b = crate::protocol::worker_config(&shared.cfg, id.clone(), queue, shared.variant);
    let cfg = b.build().map_err(|e| format!("{host}: {e}"))?;
    let store = Arc::new(crate::net::remote_store(rt.clone(), false));
    let handler = SimHandler::new(rt.clone(), leasehold_core::WorkerId::new(id));
    let obs_rt = rt.clone();
    let worker = Worker::new(store, handler, rt.clone(), cfg)
        .with_observer(move |e: &RuntimeEvent| observe(&obs_rt, e));
    let (handle, shutdown) = shutdown_channel();
    match shared.plan.shutdown_after(&host, t) {
        None => {
            let _keep = handle;
            worker.run(shutdown).await;
        }
        Some(at) => {
            // The timer first: a host resuming from a pause past `at` raises
            // the shutdown before the worker acts on anything else.
            let run = worker.run(shutdown);
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
pub async fn run_sweeper(shared: Arc<Shared>, host: String) -> turmoil::Result {
    let rt = HostRuntime::new(shared.clone(), &host);
    let incarnation = shared.next_incarnation(&host);
    let (t, _) = rt.times();
    shared.record(Record::HostStarted {
        t,
        host: host.clone(),
        incarnation,
        worker: None,
    });
    let own_clock = catalogue::sweeper_sends_wall(shared.variant);
    let store = Arc::new(crate::net::remote_store(rt.clone(), own_clock));
    let cfg = SweeperConfig::new(shared.cfg.protocol.sweep_interval.0, SWEEP_BATCH)
        .map_err(|e| format!("{host}: {e}"))?;
    let obs_rt = rt.clone();
    let sweeper = Sweeper::new(store, rt.clone(), cfg)
        .with_observer(move |e: &RuntimeEvent| observe(&obs_rt, e));
    let (_keep, shutdown) = shutdown_channel();
    sweeper.run(shutdown).await;
    Ok(())
}
