//! I9 parallelism: a queue never has more running jobs than its limit.
//!
//! The same bound one level down, on the worker's own slot planner: a worker
//! never runs more handlers of one queue at once than its limit for that
//! queue (the queue's own `protocol.queue_limits` entry, else
//! `protocol.queue_limit`), nor more in all than its concurrency. Judged
//! on the handlers' ground truth (their start and return in true time),
//! not on anything the worker says about its slots. Each queue is judged
//! against its own limit on both levels: a store or worker that applied
//! another queue's limit is caught on the queue it let run over.

use super::facts::Facts;
use super::replay::Step;
use super::Violation;
use leasehold_core::{JobId, JobState, WorkerId};
use leasehold_model::config::InvariantId::I9;
use leasehold_model::config::SimConfig;
use leasehold_model::history::HandlerPhase;
use std::collections::{BTreeMap, BTreeSet};

/// Each worker's running handlers, per queue and in all, against its limits.
pub fn check_workers(facts: &Facts, cfg: &SimConfig) -> Vec<Violation> {
    let p = &cfg.protocol;
    let concurrency = p.concurrency as usize;
    // Read from the scenario here, not through the model's helpers the
    // hosts configure the workers with.
    let limit_of = |queue: &str| {
        let own = p.queue_limits.get(queue).copied().or(p.queue_limit);
        own.map_or(concurrency, |l| l as usize)
    };
    // (worker, time, starts?) per handler edge; an end sorts before a start
    // at the same millisecond (a slot freed, then taken).
    let mut edges: BTreeMap<&WorkerId, Vec<(u64, bool, JobId, &str)>> = BTreeMap::new();
    let pruned_queues: BTreeMap<JobId, &str> = facts
        .events
        .iter()
        .filter(|(_, _, e)| facts.pruned.contains_key(&e.job))
        .filter_map(|(_, _, e)| match &e.kind {
            leasehold_core::EventKind::Enqueued { queue, .. } => Some((e.job, queue.as_str())),
            _ => None,
        })
        .collect();
    for ((w, job, _), steps) in &facts.handlers {
        // A pruned job has no final row: its queue is in its enqueue event.
        let Some(queue) = facts
            .finals
            .get(job)
            .map(|r| r.queue.as_str())
            .or_else(|| pruned_queues.get(job).copied())
        else {
            continue;
        };
        let host = Facts::host_of(w);
        let mut open: Option<u64> = None;
        let e = edges.entry(w).or_default();
        for (t, phase) in steps {
            match phase {
                HandlerPhase::Start => open = Some(*t),
                HandlerPhase::Done { .. } | HandlerPhase::Dropped => {
                    // An empty run (a poison payload refused at once)
                    // overlaps nothing.
                    if let Some(from) = open.take().filter(|&from| from < *t) {
                        e.push((from, true, *job, queue));
                        e.push((*t, false, *job, queue));
                    }
                }
            }
        }
        if let Some(from) = open {
            // Never returned: it ran until its process died, or to the end.
            let death = facts
                .crashes
                .get(&host)
                .and_then(|v| v.iter().copied().find(|&c| c >= from))
                .unwrap_or(facts.end_ms);
            if from < death {
                e.push((from, true, *job, queue));
                e.push((death, false, *job, queue));
            }
        }
    }
    let mut out = Vec::new();
    for (w, mut e) in edges {
        e.sort_by_key(|&(t, starts, job, _)| (t, starts, job));
        let mut per: BTreeMap<&str, BTreeSet<JobId>> = BTreeMap::new();
        let mut all = 0usize;
        let mut flagged: BTreeSet<&str> = BTreeSet::new();
        for (t, starts, job, queue) in e {
            let running = per.entry(queue).or_default();
            if !starts {
                if running.remove(&job) {
                    all -= 1;
                }
                continue;
            }
            if running.insert(job) {
                all += 1;
            }
            let queue_limit = limit_of(queue);
            let over_queue = running.len() > queue_limit;
            let over_all = all > concurrency;
            if (over_queue || over_all) && flagged.insert(queue) {
                let what = if over_queue {
                    format!(
                        "{} handlers of queue {queue:?} at once, its limit is {queue_limit}",
                        running.len()
                    )
                } else {
                    format!("{all} handlers at once, its concurrency is {concurrency}")
                };
                out.push(
                    Violation::new(I9, format!("worker {w} runs {what}"))
                        .job(job)
                        .hosts([w.as_str()])
                        .at(t),
                );
            }
        }
    }
    out
}

/// On events alone, with the per-queue `limit` (none = unlimited).
pub fn check_events(steps: &[Step<'_>], limit: Option<u32>) -> Vec<Violation> {
    check_events_per_queue(steps, |_| limit)
}

/// On events alone, each queue against its own limit (`limit_of` the
/// queue; none = unlimited).
pub fn check_events_per_queue(
    steps: &[Step<'_>],
    limit_of: impl Fn(&str) -> Option<u32>,
) -> Vec<Violation> {
    let mut running: BTreeMap<&str, BTreeSet<JobId>> = BTreeMap::new();
    let mut out = Vec::new();
    for s in steps {
        let Some(limit) = limit_of(s.before.queue.as_str()) else {
            continue;
        };
        let q = running.entry(s.before.queue.as_str()).or_default();
        if s.event.to == JobState::Running {
            q.insert(s.event.job);
        } else {
            q.remove(&s.event.job);
        }
        if q.len() > limit as usize {
            out.push(
                Violation::new(
                    I9,
                    format!(
                        "queue {:?} has {} running jobs, limit {limit}",
                        s.before.queue,
                        q.len()
                    ),
                )
                .on_step(s),
            );
        }
    }
    out
}
