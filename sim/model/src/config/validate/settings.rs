//! The checks of the plain settings: `[topology]`, the run's own keys
//! (`seeds`, `tick`, `duration`), `[protocol]`, `[workload]` and
//! `[network]`, each setting on its own or against its neighbours.

use super::{check_range, Bad};
use crate::config::{SimConfig, MAX_VALUE_BYTES};

/// The hosts, and how many queues each worker serves with what limit.
pub(super) fn topology(cfg: &SimConfig, bad: &mut Bad) {
    let t = &cfg.topology;
    if t.workers == 0 {
        bad("topology.workers", "at least one worker is needed".into());
    }
    if t.workers_per_process == 0 {
        bad(
            "topology.workers_per_process",
            "at least one worker per process is needed".into(),
        );
    }
    let queues = cfg.workload.queues.len();
    if t.queues_per_worker == 0 || t.queues_per_worker as usize > queues.max(1) {
        bad(
            "topology.queues_per_worker",
            format!(
                "{} must be between 1 and the {queues} queue(s) of workload.queues",
                t.queues_per_worker
            ),
        );
    }
    // A worker's per-queue limit belongs with the queues it serves.
    if let Some(limit) = cfg.protocol.queue_limit {
        if limit == 0 || limit > cfg.protocol.concurrency {
            bad(
                "protocol.queue_limit",
                format!(
                    "{limit} must be between 1 and protocol.concurrency {}",
                    cfg.protocol.concurrency
                ),
            );
        }
    }
    // Each queue's own limits, worker-side and store-side: only for a queue
    // the scenario has, never zero (a queue no one may run).
    let known = |q: &str| cfg.workload.queues.iter().any(|w| w == q);
    for (q, &limit) in &cfg.protocol.queue_limits {
        let path = format!("protocol.queue_limits.{q}");
        if !known(q) {
            bad(&path, format!("queue {q:?} is not one of workload.queues"));
        } else if limit == 0 || limit > cfg.protocol.concurrency {
            bad(
                &path,
                format!(
                    "{limit} must be between 1 and protocol.concurrency {}",
                    cfg.protocol.concurrency
                ),
            );
        }
    }
    for (q, &limit) in &cfg.protocol.queue_parallelism {
        let path = format!("protocol.queue_parallelism.{q}");
        if !known(q) {
            bad(&path, format!("queue {q:?} is not one of workload.queues"));
        } else if limit == 0 {
            bad(&path, "must be at least 1".into());
        }
    }
}

/// The run itself: how many seeds, the delivery quantum, and a duration
/// that leaves a healing phase after the fault window.
pub(super) fn run(cfg: &SimConfig, bad: &mut Bad) {
    if cfg.seeds == 0 {
        bad("seeds", "must be at least 1".into());
    }
    if cfg.tick.as_ms() == 0 {
        bad("tick", "must be greater than zero".into());
    }
    if cfg.duration <= cfg.faults.window {
        bad(
            "duration",
            format!(
                "{} must be longer than faults.window {} to leave a healing phase",
                cfg.duration, cfg.faults.window
            ),
        );
    }
}

/// The lease protocol's settings.
pub(super) fn protocol(cfg: &SimConfig, bad: &mut Bad) {
    let p = &cfg.protocol;
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
    if p.release_tries == 0 {
        bad("protocol.release_tries", "must be at least 1".into());
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
}

/// The workload: its queues, its probabilities, its run times and the
/// sizes of what it carries against the store's limits.
pub(super) fn workload(cfg: &SimConfig, bad: &mut Bad) {
    let (w, p) = (&cfg.workload, &cfg.protocol);
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
    // `faults.oneway_share` is a plain probability too, and has always been
    // reported with these (the order of problems is part of the output).
    for (path, v) in cfg.plain_probabilities() {
        if !(0.0..=1.0).contains(&v) {
            bad(path, format!("{v} is not a probability in [0, 1]"));
        }
    }
    check_range(bad, "workload.run_time", &w.run_time);
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
}

/// The network outside of faults.
pub(super) fn network(cfg: &SimConfig, bad: &mut Bad) {
    check_range(bad, "network.latency", &cfg.network.latency);
}
