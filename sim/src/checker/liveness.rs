//! I6 liveness: once faults have healed for long enough, every job reaches
//! a terminal state before the scenario ends.
//!
//! "Long enough" is the spec's bound, lease + sweep interval + longest
//! backoff + longest job, plus the protocol's own delays (a poll interval, a
//! renew interval, two request timeouts), counted from the healing time or
//! from the job's enqueue if later. Every attempt of the job that ended in a
//! retry after that point (a retryable failure, a return, a reclaim) earns
//! it one more bound: failures are part of the workload, not faults. A job
//! still unfinished when the run ends is reported even when its deadline
//! falls after the end: a job never served must not pass unjudged, so
//! either the scenario is too short to judge it (the report says how long
//! it would have to be) or the job is stuck. A backlog
//! is not a wedge: when more jobs of a queue are unfinished at the moment a
//! job's clock starts (healing, or its enqueue if later) than the queue has
//! slots (workers × concurrency, capped by its parallelism), each further
//! round of slots adds one bound to that job. Only the jobs ahead of it
//! count: enqueued before it and still unfinished at that moment. Work
//! arriving later never stretches an older job's deadline, and a stuck job
//! never stretches its own, so neither a steady stream nor a pile of stuck
//! leases can hide a wedge.

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

/// Extra time per job for the backlog in its queue when its clock starts:
/// the jobs of that queue enqueued by then and not yet terminal.
fn backlog_allowance(facts: &Facts, cfg: &SimConfig, bound: u64) -> BTreeMap<JobId, u64> {
    let queues = &cfg.workload.queues;
    // Per job: queue, enqueue time, first terminal time.
    let mut jobs: BTreeMap<JobId, (&str, u64, Option<u64>)> = BTreeMap::new();
    for (t, _, e) in &facts.events {
        let t = t.unwrap_or(0);
        if let EventKind::Enqueued { queue, .. } = &e.kind {
            jobs.insert(e.job, (queue.as_str(), t, None));
        } else if e.to.is_terminal() {
            if let Some(j) = jobs.get_mut(&e.job) {
                j.2.get_or_insert(t);
            }
        }
    }
    let per_worker = u64::from(cfg.protocol.concurrency);
    let slots_of = |q: &str| {
        let workers = (0..cfg.topology.workers as usize)
            .filter(|i| queues.get(i % queues.len().max(1)).map(String::as_str) == Some(q))
            .count() as u64;
        (workers * per_worker)
            .min(cfg.protocol.parallelism.map_or(u64::MAX, u64::from))
            .max(1)
    };
    // Enqueue order is id order (the store assigns ids at enqueue).
    jobs.iter()
        .map(|(id, (q, enq, _))| {
            let start = facts.heal_ms.max(*enq);
            let ahead = jobs
                .range(..id)
                .filter(|(_, (q2, _, end))| q2 == q && end.is_none_or(|x| x > start))
                .count() as u64;
            let rounds = (ahead + 1).div_ceil(slots_of(q)).saturating_sub(1);
            (*id, rounds * bound)
        })
        .collect()
}

/// Checks that every job ended.
pub fn check(facts: &Facts, cfg: &SimConfig) -> Vec<Violation> {
    let bound = liveness_bound_ms(cfg);
    let due = |base: u64, retries: u64| {
        base.saturating_add(retries.saturating_add(1).saturating_mul(bound))
    };
    let judged = |deadline: u64| facts.quiet || facts.end_ms >= deadline;
    let jobs = deadlines(facts);
    let backlog = backlog_allowance(facts, cfg, bound);
    let mut out = Vec::new();
    if facts.client_done.is_none() {
        let deadline = due(facts.heal_ms, 0);
        let message = if judged(deadline) {
            "the client never finished enqueueing its jobs".to_string()
        } else {
            format!(
                "the client had not finished enqueueing its jobs when the run ended ({}ms),                  before its liveness deadline {deadline}ms: {}",
                facts.end_ms,
                too_short(deadline)
            )
        };
        out.push(
            Violation::new(I6, message)
                .hosts(["client"])
                .at(facts.end_ms),
        );
    } else {
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
        let deadline =
            due(base, retries).saturating_add(backlog.get(&row.id).copied().unwrap_or(0));
        if !row.state.is_terminal() {
            let verdict = if judged(deadline) {
                format!("past its deadline {deadline}ms")
            } else {
                format!("before its deadline {deadline}ms: {}", too_short(deadline))
            };
            out.push(
                Violation::new(
                    I6,
                    format!(
                        "still {} at the end ({}ms), {verdict} (healed at {}ms, {} retries since), attempt {}/{}{}",
                        row.state,
                        facts.end_ms,
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

/// Why a job unfinished before its deadline is still a finding.
fn too_short(deadline: u64) -> String {
    format!(
        "the scenario is too short to judge it (its duration would have to reach {}), or it is \
         stuck",
        crate::duration::format_ms(deadline)
    )
}
