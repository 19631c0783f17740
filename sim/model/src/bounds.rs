//! Upper bounds of every count and size a scenario may set.
//!
//! A scenario is user input: a count or a size with no bound turns into an
//! allocation the machine cannot make (`jobs = 4000000000` asked for
//! 224 GB and aborted the process), a loop that never ends, or arithmetic
//! that overflows. Each bound here is a named constant, checked by
//! [`problems`] (called first by [`SimConfig::validate`], before any check
//! that allocates per host, job or event) so the loader reports
//! it at the key's file:line:col. The bounds are generous: far above any
//! scenario the simulator runs in reasonable time, far below what breaks it.
//!
//! Bounds that come from the store or the worker runtime (the claim cap,
//! the longest lease, the attempt cap) are checked against the real
//! settings in [`crate::feasible`].

use crate::config::{ConfigProblem, Range, ScriptedFault, SimConfig};
use crate::duration::{Dur, SignedDur};
use std::collections::BTreeSet;

/// Most seeds a scenario may ask for.
pub const MAX_SEEDS: u64 = 1_000_000;
/// Longest simulated time of anything in a scenario: the run, every
/// interval, every fault length and time (7 days; a run this long takes
/// hours of wall time, and the run timeout stops it first).
pub const MAX_DURATION: Dur = Dur::secs(7 * 24 * 3600);
/// Largest clock offset or step, either way (10 years): a host whose
/// clock is a decade off is a test; larger only overflows store times.
pub const MAX_CLOCK_OFFSET_MS: u64 = 10 * 365 * 24 * 3600 * 1000;
/// Most worker hosts (a bound on the world's size: hosts, links and
/// per-host state grow with it).
pub const MAX_WORKERS: u32 = 1000;
/// Most workers in one simulated process (production's bench runs 16).
pub const MAX_WORKERS_PER_PROCESS: u32 = 64;
/// Most sweeper hosts.
pub const MAX_SWEEPERS: u32 = 100;
/// Most jobs: the workload plan, the store and the history hold every one.
pub const MAX_JOBS: u32 = 100_000;
/// Most queues.
pub const MAX_QUEUES: usize = 1000;
/// Most scripted events.
pub const MAX_EVENTS: usize = 10_000;
/// Largest parallelism limit (above workers × concurrency it limits nothing).
pub const MAX_PARALLELISM: u32 = 1_000_000;
/// Most bytes the store may have to hold for the workload's payloads,
/// results and errors together (1 GiB).
pub const MAX_WORKLOAD_BYTES: u64 = 1 << 30;
/// Most swarm faults a seed may be expected to draw (each host's kinds are
/// Poisson arrivals over the fault window; the schedule is held in memory
/// and applied step by step).
pub const MAX_EXPECTED_SWARM_FAULTS: f64 = 100_000.0;
/// Largest drift of a clock, either way, in ppm, exclusive: at −100 % a
/// clock stops. The swarm's `faults.clock_drift_ppm` and every scripted
/// `drift` share it (the clock model has no meaning for anything beyond).
pub const DRIFT_PPM_LIMIT: i64 = 1_000_000;

const _: () = assert!(MAX_CLOCK_OFFSET_MS < crate::clock::EPOCH_MS as u64);
const _: () = assert!(MAX_DURATION.as_ms() < MAX_CLOCK_OFFSET_MS);

/// Every count and size of `cfg` beyond its bound.
pub fn problems(cfg: &SimConfig) -> Vec<ConfigProblem> {
    let mut out = Vec::new();
    let mut bad = |path: &str, message: String| {
        out.push(ConfigProblem {
            path: path.to_string(),
            message,
        })
    };
    counts(cfg, &mut bad);
    durations(cfg, &mut bad);
    clocks(cfg, &mut bad);
    floats(cfg, &mut bad);
    workload_bytes(cfg, &mut bad);
    swarm_size(cfg, &mut bad);
    out
}

fn over(bad: &mut impl FnMut(&str, String), path: &str, v: u64, max: u64, what: &str) {
    if v > max {
        bad(path, format!("{v} is above the bound of {max} {what}"));
    }
}

fn counts(cfg: &SimConfig, bad: &mut impl FnMut(&str, String)) {
    over(bad, "seeds", cfg.seeds, MAX_SEEDS, "seeds");
    let t = &cfg.topology;
    over(
        bad,
        "topology.workers",
        t.workers.into(),
        MAX_WORKERS.into(),
        "workers",
    );
    over(
        bad,
        "topology.workers_per_process",
        t.workers_per_process.into(),
        MAX_WORKERS_PER_PROCESS.into(),
        "workers in one process",
    );
    over(
        bad,
        "topology.sweepers",
        t.sweepers.into(),
        MAX_SWEEPERS.into(),
        "sweepers",
    );
    over(
        bad,
        "topology.schedulers",
        t.schedulers.into(),
        crate::schedules::MAX_SCHEDULERS.into(),
        "schedulers",
    );
    over(
        bad,
        "schedules",
        cfg.schedules.len() as u64,
        crate::schedules::MAX_SCHEDULES as u64,
        "schedules",
    );
    let w = &cfg.workload;
    over(bad, "workload.jobs", w.jobs.into(), MAX_JOBS.into(), "jobs");
    over(
        bad,
        "workload.queues",
        w.queues.len() as u64,
        MAX_QUEUES as u64,
        "queues",
    );
    over(
        bad,
        "events",
        cfg.events.len() as u64,
        MAX_EVENTS as u64,
        "scripted events",
    );
    if let Some(p) = cfg.protocol.parallelism {
        over(
            bad,
            "protocol.parallelism",
            p.into(),
            MAX_PARALLELISM.into(),
            "running jobs per queue",
        );
    }
    for (path, n) in [
        ("protocol.queue_limits", cfg.protocol.queue_limits.len()),
        (
            "protocol.queue_parallelism",
            cfg.protocol.queue_parallelism.len(),
        ),
    ] {
        over(bad, path, n as u64, MAX_QUEUES as u64, "queues");
    }
    for (q, &p) in &cfg.protocol.queue_parallelism {
        over(
            bad,
            &format!("protocol.queue_parallelism.{q}"),
            p.into(),
            MAX_PARALLELISM.into(),
            "running jobs per queue",
        );
    }
}

/// Every duration of the scenario with its field path.
fn all_durations(cfg: &SimConfig) -> Vec<(String, Dur)> {
    let p = &cfg.protocol;
    let w = &cfg.workload;
    let f = &cfg.faults;
    let mut v: Vec<(String, Dur)> = [
        ("duration", cfg.duration),
        ("tick", cfg.tick),
        ("protocol.lease", p.lease),
        ("protocol.renew_interval", p.renew_interval),
        ("protocol.sweep_interval", p.sweep_interval),
        ("protocol.fence_margin", p.fence_margin),
        ("protocol.backoff_base", p.backoff_base),
        ("protocol.backoff_cap", p.backoff_cap),
        ("protocol.request_timeout", p.request_timeout),
        ("protocol.poll_interval", p.poll_interval),
        ("protocol.scheduler_tick", p.scheduler_tick),
        ("protocol.misfire_grace", p.misfire_grace),
        ("workload.enqueue_over", w.enqueue_over),
        ("faults.window", f.window),
    ]
    .into_iter()
    .map(|(k, d)| (k.to_string(), d))
    .collect();
    let ranges: [(&str, &Range<Dur>); 6] = [
        ("workload.run_time", &w.run_time),
        ("network.latency", &cfg.network.latency),
        ("faults.restart_after", &f.restart_after),
        ("faults.partition_len", &f.partition_len),
        ("faults.pause_len", &f.pause_len),
        ("faults.hold_len", &f.hold_len),
    ];
    for (k, r) in ranges {
        v.push((k.to_string(), r.lo));
        v.push((k.to_string(), r.hi));
    }
    for (i, s) in cfg.schedules.iter().enumerate() {
        for (field, d) in [("every", s.every), ("jitter", s.jitter)] {
            if let Some(d) = d {
                v.push((format!("schedules[{i}].{field}"), d));
            }
        }
    }
    for (i, e) in cfg.events.iter().enumerate() {
        let path = format!("events[{i}]");
        match e {
            ScriptedFault::Partition { from, to, .. } | ScriptedFault::Hold { from, to, .. } => {
                v.push((path.clone(), *from));
                v.push((path, *to));
            }
            ScriptedFault::Pause { at, len, .. } => {
                v.push((path.clone(), *at));
                v.push((path, *len));
            }
            other => v.push((path, other.start())),
        }
    }
    v
}

fn durations(cfg: &SimConfig, bad: &mut impl FnMut(&str, String)) {
    let mut reported = BTreeSet::new();
    for (path, d) in all_durations(cfg) {
        if d > MAX_DURATION && reported.insert(path.clone()) {
            bad(
                &path,
                format!("{d} is above the longest duration a scenario may use, {MAX_DURATION}"),
            );
        }
    }
}

fn clocks(cfg: &SimConfig, bad: &mut impl FnMut(&str, String)) {
    let f = &cfg.faults;
    let offset_bad = |d: SignedDur| d.0.unsigned_abs() > MAX_CLOCK_OFFSET_MS;
    let limit = SignedDur(MAX_CLOCK_OFFSET_MS as i64);
    for (path, r) in [
        ("faults.clock_offset", &f.clock_offset),
        ("faults.clock_step", &f.clock_step),
    ] {
        if offset_bad(r.lo) || offset_bad(r.hi) {
            bad(
                path,
                format!("clock offsets and steps must stay within ±{limit} (10 years)"),
            );
        }
    }
    for (i, e) in cfg.events.iter().enumerate() {
        match e {
            ScriptedFault::Skew { by, .. } if offset_bad(*by) => bad(
                &format!("events[{i}]"),
                format!("`{e}`: a clock step must stay within ±{limit} (10 years)"),
            ),
            ScriptedFault::Drift { ppm, .. } if ppm.abs() >= DRIFT_PPM_LIMIT => bad(
                &format!("events[{i}]"),
                format!(
                    "`{e}`: a drift must stay strictly within ±{DRIFT_PPM_LIMIT}ppm, the bound \
                     faults.clock_drift_ppm enforces (at −100 % a clock stops; beyond, it runs \
                     backwards). A drift beyond protocol.max_drift_ppm is allowed: it breaks \
                     the timing assumption on purpose"
                ),
            ),
            _ => {}
        }
    }
}

/// NaN and infinity pass every `<` and `>` test, so each float is checked
/// to be finite on its own.
fn floats(cfg: &SimConfig, bad: &mut impl FnMut(&str, String)) {
    let f = &cfg.faults;
    let mut all: Vec<(&str, f64)> = cfg.plain_probabilities().to_vec();
    for (path, r) in f.rates().into_iter().chain(f.probabilities()) {
        all.push((path, r.lo));
        all.push((path, r.hi));
    }
    let mut reported = BTreeSet::new();
    for (path, v) in all {
        if !v.is_finite() && reported.insert(path) {
            bad(path, format!("{v} is not a finite number"));
        }
    }
}

fn workload_bytes(cfg: &SimConfig, bad: &mut impl FnMut(&str, String)) {
    let w = &cfg.workload;
    let err = w.error_bytes.min(cfg.protocol.max_error_bytes);
    let per_job = w
        .payload_bytes
        .saturating_add(w.result_bytes)
        .saturating_add(err);
    let total = per_job.saturating_mul(w.jobs.into());
    if total > MAX_WORKLOAD_BYTES {
        let path = if w.result_bytes >= w.payload_bytes {
            "workload.result_bytes"
        } else {
            "workload.payload_bytes"
        };
        bad(
            path,
            format!(
                "{} jobs of {per_job} bytes (payload, result and error) are {total} bytes, above \
                 the bound of {MAX_WORKLOAD_BYTES} bytes the store may hold",
                w.jobs
            ),
        );
    }
}

/// The swarm's expected fault count: rate × hosts × window minutes for each
/// kind (a crash brings its restart).
fn swarm_size(cfg: &SimConfig, bad: &mut impl FnMut(&str, String)) {
    let f = &cfg.faults;
    let minutes = f.window.as_ms().min(cfg.duration.as_ms()) as f64 / 60_000.0;
    let workers = f64::from(cfg.topology.workers);
    let sweepers = f64::from(cfg.topology.sweepers);
    let schedulers = f64::from(cfg.topology.schedulers);
    // Every host but the store: the hosts partitioned, paused and held.
    let movable = workers + sweepers + schedulers + 1.0;
    let kinds = [
        (
            "faults.worker_crash_rate",
            f.worker_crash_rate.hi,
            2.0 * workers,
        ),
        (
            "faults.sweeper_crash_rate",
            f.sweeper_crash_rate.hi,
            2.0 * sweepers,
        ),
        (
            "faults.scheduler_crash_rate",
            f.scheduler_crash_rate.hi,
            2.0 * schedulers,
        ),
        ("faults.store_crash_rate", f.store_crash_rate.hi, 2.0),
        ("faults.partition_rate", f.partition_rate.hi, movable),
        ("faults.pause_rate", f.pause_rate.hi, movable),
        ("faults.hold_rate", f.hold_rate.hi, movable),
        (
            "faults.clock_step_rate",
            f.clock_step_rate.hi,
            movable + 1.0,
        ),
    ];
    let each: Vec<(&str, f64)> = kinds
        .iter()
        .map(|(path, rate, hosts)| (*path, rate.max(0.0) * hosts * minutes))
        .collect();
    let total: f64 = each.iter().map(|e| e.1).sum();
    if total > MAX_EXPECTED_SWARM_FAULTS {
        let (path, _) =
            each.iter()
                .copied()
                .fold(("faults.window", 0.0), |a, b| if b.1 > a.1 { b } else { a });
        bad(
            path,
            format!(
                "the swarm would draw about {total:.0} faults per seed (rates × hosts × {minutes:.1} \
                 window minutes), above the bound of {MAX_EXPECTED_SWARM_FAULTS:.0}; lower the \
                 rates, the hosts or faults.window"
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::{assert_defaults_and_builtins_pass, paths_of};

    #[test]
    fn defaults_and_builtin_scenarios_are_within_every_bound() {
        assert_defaults_and_builtins_pass(problems);
    }

    #[test]
    fn each_bound_is_inclusive() {
        let mut cfg = SimConfig::default();
        cfg.workload.jobs = MAX_JOBS;
        cfg.seeds = MAX_SEEDS;
        cfg.duration = MAX_DURATION;
        assert_eq!(paths_of(problems(&cfg)), Vec::<String>::new());
        cfg.workload.jobs += 1;
        cfg.seeds += 1;
        cfg.duration = Dur(leasehold_core::Millis(MAX_DURATION.as_ms() + 1));
        assert_eq!(
            paths_of(problems(&cfg)),
            vec!["seeds", "workload.jobs", "duration"]
        );
    }

    #[test]
    fn nan_rates_are_refused() {
        let mut cfg = SimConfig::default();
        cfg.faults.pause_rate = Range::new(f64::NAN, 1.0);
        cfg.workload.fail_rate = f64::INFINITY;
        assert_eq!(
            paths_of(problems(&cfg)),
            vec!["workload.fail_rate", "faults.pause_rate"]
        );
    }

    #[test]
    fn a_swarm_too_large_is_located_at_its_largest_rate() {
        let mut cfg = SimConfig::default();
        cfg.topology.workers = MAX_WORKERS;
        cfg.faults.window = Dur::secs(3600);
        cfg.faults.pause_rate = Range::new(0.0, 10.0);
        cfg.faults.hold_rate = Range::new(0.0, 1.0);
        assert_eq!(paths_of(problems(&cfg)), vec!["faults.pause_rate"]);
    }
}
