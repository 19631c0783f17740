//! Scheduler hosts: the real `leasehold_core::Scheduler` on a
//! [`RemoteStore`](crate::net::RemoteStore), putting every schedule of the scenario at its start and
//! firing their plan times on the store's clock.
//!
//! A scheduler host has its own clock like every host (offset, drift,
//! steps), crashes and restarts as a new process (its cursors are lost, so
//! it re-fires recent plan times: the store must answer them with the jobs
//! they already have), and can be paused or cut off. Several run at once
//! without any leader: that is the point (I12).
//!
//! A schedule with `remove_at` is removed by the operator (the client host)
//! at that true time; an operator takes it out of the schedulers'
//! configuration too, so an incarnation started at or after `remove_at`
//! does not put it (else every restart would bring it back).

use super::runtime::{sleep_until_true, HostRuntime};
use super::shared::Shared;
use leasehold_core::{shutdown_channel, Scheduler, SchedulerConfig};
use leasehold_model::catalogue;
use leasehold_model::history::Record;
use leasehold_model::timing::firing_stops_ms;
use std::sync::Arc;

/// The scheduler host's software: one incarnation.
pub async fn run_scheduler(shared: Arc<Shared>, host: String) -> Result<(), String> {
    let rt = HostRuntime::new(shared.clone(), &host);
    let incarnation = shared.next_incarnation(&host);
    let (t, _) = rt.times();
    shared.record(Record::HostStarted {
        t,
        host: host.clone(),
        incarnation,
        worker: None,
    });
    let cfg = &shared.cfg;
    let p = &cfg.protocol;
    let mut b = SchedulerConfig::builder(format!("{host}#{incarnation}"))
        .tick(p.scheduler_tick.0)
        .misfire_grace(p.misfire_grace.0)
        .request_timeout(p.request_timeout.0);
    for s in &cfg.schedules {
        if s.remove_at.is_some_and(|r| t >= r.as_ms()) {
            continue;
        }
        b = b.ensure(s.to_core(cfg));
    }
    b = catalogue::configure_scheduler(b, shared.variant);
    let sched_cfg = b.build().map_err(|e| format!("{host}: {e}"))?;
    let store = Arc::new(crate::net::remote_store(rt.clone(), false));
    let scheduler = Scheduler::new(store, rt, sched_cfg);
    let (stop, shutdown) = shutdown_channel();
    let stop_at = firing_stops_ms(cfg);
    tokio::join!(scheduler.run(shutdown), async {
        sleep_until_true(stop_at).await;
        stop.shutdown();
    });
    Ok(())
}
