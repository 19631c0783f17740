//! A scenario's `[protocol]` as the core's own configuration: the store's
//! [`Policy`], a worker's [`WorkerConfig`] builder and each
//! `[[schedules]]` entry's [`Schedule`], built once here so that scenario
//! validation (`feasible`, the schedule checks), the simulated hosts and
//! the madsim nodes configure the core exactly alike.

use crate::catalogue::{self, Variant};
use crate::config::SimConfig;
use crate::schedules::{payload_of, ScheduleSpec};
use leasehold_core::worker::WorkerConfigBuilder;
use leasehold_core::{
    Backoff, CatchUp, Limits, Policy, Rule, Schedule, WorkerConfig, DEFAULT_JITTER_PERMILLE,
};

/// The store policy of a scenario and seed.
pub fn policy_of(cfg: &SimConfig, seed: u64) -> Result<Policy, String> {
    let p = &cfg.protocol;
    let limits = Limits {
        max_payload_bytes: p.max_payload_bytes as usize,
        max_result_bytes: p.max_result_bytes as usize,
        max_error_bytes: p.max_error_bytes as usize,
        ..Limits::default()
    };
    let mut b = Policy::builder().limits(limits).backoff(Backoff {
        base: p.backoff_base.0,
        cap: p.backoff_cap.0,
        jitter_permille: DEFAULT_JITTER_PERMILLE,
        seed: crate::rng::SimRng::derive(seed, "backoff", &[]).next_u64(),
    });
    for q in &cfg.workload.queues {
        if let Some(limit) = p.store_limit(q) {
            b = b.parallelism(q.clone(), limit);
        }
    }
    b.build().map_err(|e| e.to_string())
}

/// The queues worker number `k` serves (every worker of every host counted
/// from 0, host by host): `topology.queues_per_worker` of the workload's
/// queues from the `k`-th on, round the list, so that every queue is
/// served as soon as there are as many workers as queues.
pub fn queues_of(cfg: &SimConfig, k: usize) -> Vec<String> {
    let qs = &cfg.workload.queues;
    if qs.is_empty() {
        return Vec::new();
    }
    let n = (cfg.topology.queues_per_worker as usize).clamp(1, qs.len());
    (0..n).map(|i| qs[(k + i) % qs.len()].clone()).collect()
}

/// The worker configuration of a scenario for worker `id` on `queues` (the
/// first one first; each with its limit, `protocol.queue_limits` or
/// `protocol.queue_limit`, when set), with the
/// catalogue's worker-side `variant` (if any) put in. Not yet built: the
/// caller may add what only it knows.
pub fn worker_config(
    cfg: &SimConfig,
    id: impl Into<String>,
    queues: &[String],
    variant: Option<Variant>,
) -> WorkerConfigBuilder {
    let p = &cfg.protocol;
    let first = queues.first().cloned().unwrap_or_default();
    let mut b = WorkerConfig::builder(id, first)
        .concurrency(p.concurrency)
        .lease(p.lease.0)
        .renew_interval(p.renew_interval.0)
        .max_drift_ppm(p.max_drift_ppm)
        .fence_margin(p.fence_margin.0)
        .poll_interval(p.poll_interval.0)
        .release_tries(p.release_tries)
        .request_timeout(p.request_timeout.0);
    for q in queues.iter().skip(1) {
        b = b.queue(q.clone(), p.worker_limit(q).unwrap_or(p.concurrency));
    }
    if let Some((q, limit)) = queues.first().and_then(|q| Some((q, p.worker_limit(q)?))) {
        b = b.queue(q.clone(), limit);
    }
    catalogue::configure_worker(b, variant)
}

impl ScheduleSpec {
    /// The core's schedule for this spec in `cfg`.
    pub fn to_core(&self, cfg: &SimConfig) -> Schedule {
        let rule = match (&self.every, &self.cron) {
            (Some(d), _) => Rule::every(d.0),
            (None, Some(c)) => Rule::cron_in(
                c.clone(),
                self.time_zone.clone().unwrap_or_else(|| "UTC".into()),
            ),
            (None, None) => Rule::every(leasehold_core::Millis(0)),
        };
        let queue = self
            .queue
            .clone()
            .or_else(|| cfg.workload.queues.first().cloned())
            .unwrap_or_default();
        let mut s = Schedule::new(self.name.clone(), queue, payload_of(&self.name), rule)
            .max_attempts(cfg.protocol.max_attempts);
        if let Some(max) = self.catch_up_max {
            s = s.catch_up(CatchUp::Each { max });
        }
        if let Some(j) = self.jitter {
            s = s.jitter(j.0);
        }
        s
    }
}
