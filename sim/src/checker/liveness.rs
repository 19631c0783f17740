//! I6 liveness: once faults have healed for long enough, every job reaches
//! a terminal state before the scenario ends.
//!
//! "Long enough" is the spec's bound, lease + sweep interval + longest
//! backoff + longest job, plus the protocol's own delays (a poll interval, a
//! renew interval, two request timeouts), counted from the healing time or
//! from the job's enqueue if later. Every attempt of the job that ended in a
//! retry after that point (a retryable failure, a return, a reclaim) earns
//! it one more bound: failures are part of the workload, not faults. A job
//! whose deadline falls after the end of the run is not judged. A backlog
//! is not a wedge: when more jobs of a queue are unfinished at healing than
//! the queue has slots (workers × concurrency, capped by its parallelism),
//! each further round of slots adds one bound.

use super::facts::Facts;
use super::Violation;
use crate::config::{InvariantId::I6, SimConfig};
use crate::history::{Op, Reply};
use crate::hosts::workload::KEY_PREFIX;
use leasehold_core::{EventKind, JobId, JobState};
use std::collections::{BTreeMap, BTreeSet};

/// How long after healing (or its enqueue) a job may take, per attempt.
pub fn liveness_bound_ms(cfg: &SimConfig) -> u64 {
    let p = &cfg.protocol;
    p.lease.as_ms()
        + p.sweep_interval.as_ms()
        + p.backoff_cap.as_ms()
        + cfg.workload.run_time.hi.as_ms()
        + p.poll_interval.as_ms()
        + p.renew_interval.as_ms()
        + 2 * p.request_timeout.as_ms()
}

/// Each job's deadline: `(base, retries after base)`.
fn deadlines(facts: &Facts) -> BTreeMap<JobId, (u64, u64)> {
    let mut m: BTreeMap<JobId, (u64, u64)> = BTreeMap::new();
    for (t, _, e) in &facts.events {
        let t = t.unwrap_or(0);
        match &e.kind {
            EventKind::Enqueued { .. } => {
                m.insert(e.job, (facts.heal_ms.max(t), 0));
            }
            EventKind::Released { .. } | EventKind::Swept { .. } if e.to == JobState::Pending => {
                if let Some(d) = m.get_mut(&e.job) {
                    if t >= d.0 {
                        d.1 += 1;
                    }
                }
            }
            _ => {}
        }
    }
    m
}

/// Extra time per queue for the backlog unfinished at healing.
fn backlog_allowance(facts: &Facts, cfg: &SimConfig, bound: u64) -> BTreeMap<String, u64> {
    let queues = &cfg.workload.queues;
    let mut queue_of: BTreeMap<JobId, &str> = BTreeMap::new();
    let mut open: BTreeMap<&str, BTreeSet<JobId>> = BTreeMap::new();
    for (t, _, e) in &facts.events {
        if let EventKind::Enqueued { queue, .. } = &e.kind {
            queue_of.insert(e.job, queue.as_str());
            open.entry(queue.as_str()).or_default().insert(e.job);
        } else if e.to.is_terminal() && t.unwrap_or(0) <= facts.heal_ms {
            if let Some(q) = queue_of.get(&e.job) {
                open.entry(q).or_default().remove(&e.job);
            }
        }
    }
    let per_worker = u64::from(cfg.protocol.concurrency);
    open.into_iter()
        .map(|(q, jobs)| {
            let workers = (0..cfg.topology.workers as usize)
                .filter(|i| queues.get(i % queues.len().max(1)).map(String::as_str) == Some(q))
                .count() as u64;
            let slots = (workers * per_worker)
                .min(cfg.protocol.parallelism.map_or(u64::MAX, u64::from))
                .max(1);
            let rounds = (jobs.len() as u64).div_ceil(slots).saturating_sub(1);
            (q.to_string(), rounds * bound)
        })
        .collect()
}

/// Checks that every job ended.
pub fn check(facts: &Facts, cfg: &SimConfig) -> Vec<Violation> {
    let bound = liveness_bound_ms(cfg);
    let due = |base: u64, retries: u64| base + (1 + retries) * bound;
    let judged = |deadline: u64| facts.quiet || facts.end_ms >= deadline;
    let jobs = deadlines(facts);
    let backlog = backlog_allowance(facts, cfg, bound);
    let mut out = Vec::new();
    if facts.client_done.is_none() && judged(due(facts.heal_ms, 0)) {
        out.push(
            Violation::new(I6, "the client never finished enqueueing its jobs")
                .hosts(["client"])
                .at(facts.end_ms),
        );
    } else if facts.client_done.is_some() {
        let keys: BTreeSet<&str> = facts
            .requests
            .values()
            .filter(|q| matches!(q.answer, Some((_, Reply::Job(_)))))
            .filter_map(|q| match &q.op {
                Op::Enqueue { key: Some(k), .. } => Some(k.as_str()),
                _ => None,
            })
            .collect();
        for i in 0..cfg.workload.jobs {
            let k = format!("{KEY_PREFIX}{i}");
            if !keys.contains(k.as_str()) {
                out.push(
                    Violation::new(I6, format!("{k} was never enqueued"))
                        .hosts(["client"])
                        .at(facts.end_ms),
                );
            }
        }
    }
    for row in facts.finals.values() {
        let (base, retries) = jobs.get(&row.id).copied().unwrap_or((facts.heal_ms, 0));
        let deadline = due(base, retries) + backlog.get(&row.queue).copied().unwrap_or(0);
        if !row.state.is_terminal() && judged(deadline) {
            out.push(
                Violation::new(
                    I6,
                    format!(
                        "still {} at the end ({}ms), past its deadline {}ms (healed at {}ms, {} retries since), attempt {}/{}{}",
                        row.state,
                        facts.end_ms,
                        deadline,
                        facts.heal_ms,
                        retries,
                        row.attempt,
                        row.max_attempts,
                        row.holder
                            .as_ref()
                            .map(|h| format!(", held by {h}"))
                            .unwrap_or_default()
                    ),
                )
                .job(row.id)
                .tokens([row.token])
                .hosts(row.holder.iter().map(|h| h.as_str()))
                .at(facts.end_ms)
                .store_at(row.updated_at),
            );
        }
    }
    out
}
