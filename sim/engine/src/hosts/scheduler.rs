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

use crate::machine::runtime::{sleep_until_true, HostRuntime};
use leasehold_core::{shutdown_channel, Millis, Schedule, Scheduler, SchedulerConfig};
use leasehold_model::catalogue::{self, Variant};
use leasehold_model::config::SimConfig;
use leasehold_model::timing::firing_stops_ms;
use std::sync::Arc;

/// What a scheduler host is given, for every incarnation.
#[derive(Clone, Debug)]
pub struct SchedulerSettings {
    /// Interval between the scheduler's ticks.
    pub tick: Millis,
    /// How late a plan time may still fire.
    pub misfire_grace: Millis,
    /// Timeout of each store call.
    pub request_timeout: Millis,
    /// Every schedule, with the true time the operator removes it at.
    pub schedules: Vec<(Option<u64>, Schedule)>,
    /// The buggy variant in force.
    pub variant: Option<Variant>,
    /// The true time firing stops (the liveness bound before the end).
    pub stop_at: u64,
}

impl SchedulerSettings {
    /// The scheduler settings of `cfg` under `variant`.
    pub fn of(cfg: &SimConfig, variant: Option<Variant>) -> Self {
        let p = &cfg.protocol;
        SchedulerSettings {
            tick: p.scheduler_tick.0,
            misfire_grace: p.misfire_grace.0,
            request_timeout: p.request_timeout.0,
            schedules: cfg
                .schedules
                .iter()
                .map(|s| (s.remove_at.map(|r| r.as_ms()), s.to_core(cfg)))
                .collect(),
            variant,
            stop_at: firing_stops_ms(cfg),
        }
    }
}

/// The scheduler host's software: one incarnation.
pub async fn run_scheduler(
    rt: HostRuntime,
    settings: Arc<SchedulerSettings>,
) -> Result<(), String> {
    let (incarnation, t) = rt.start();
    let s = &settings;
    let mut b = SchedulerConfig::builder(format!("{}#{incarnation}", rt.host()))
        .tick(s.tick)
        .misfire_grace(s.misfire_grace)
        .request_timeout(s.request_timeout);
    for (remove_at, schedule) in &s.schedules {
        if remove_at.is_some_and(|r| t >= r) {
            continue;
        }
        b = b.ensure(schedule.clone());
    }
    b = catalogue::configure_scheduler(b, s.variant);
    let sched_cfg = b.build().map_err(|e| format!("{}: {e}", rt.host()))?;
    let store = Arc::new(crate::net::remote_store(rt.clone(), false));
    let scheduler = Scheduler::new(store, rt, sched_cfg);
    let (stop, shutdown) = shutdown_channel();
    tokio::join!(scheduler.run(shutdown), async {
        sleep_until_true(s.stop_at).await;
        stop.shutdown();
    });
    Ok(())
}
