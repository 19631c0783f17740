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
//! slots (every worker serving it, as its first queue or a later one, times
//! the slots that worker gives it, capped by its parallelism), each further
//! round of slots adds one bound to that job. Only the jobs ahead of it
//! count: enqueued before it and still unfinished at that moment. Work
//! arriving later never stretches an older job's deadline, and a stuck job
//! never stretches its own, so neither a steady stream nor a pile of stuck
//! leases can hide a wedge.

use super::facts::Facts;
use super::Violation;
use leasehold_core::{EventKind, JobId, JobState};
use leasehold_model::config::{InvariantId::I6, SimConfig};
use leasehold_model::history::{Op, Reply};
use leasehold_model::timing::liveness_bound_ms;
use leasehold_model::workload::KEY_PREFIX;
use std::collections::{BTreeMap, BTreeSet};

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
    let p = &cfg.protocol;
    // Which queues each worker serves, read from the scenario here, not
    // through the model's helpers the hosts configure the workers with:
    // worker `k` (every worker of every process counted from 0) serves
    // `queues_per_worker` queues from the `k`-th on, round the list.
    let workers = cfg.topology.workers as usize * cfg.topology.workers_per_process.max(1) as usize;
    let served = (cfg.topology.queues_per_worker as usize).clamp(1, queues.len().max(1));
    let slots_of = |q: &str| {
        let serving = (0..workers)
            .filter(|k| {
                (0..served).any(|i| {
                    queues
                        .get((k + i) % queues.len().max(1))
                        .map(String::as_str)
                        == Some(q)
                })
            })
            .count() as u64;
        // A worker runs at most its limit of the queue; the store at most
        // the queue's parallelism (each queue's own, else the common one).
        // A worker of several queues hands its free slots to them in turn,
        // so a queue with a backlog gets at least its share of them.
        let share = (p.concurrency as usize / served).max(1) as u32;
        let per_worker = p.queue_limits.get(q).copied().or(p.queue_limit);
        let per_worker = u64::from(per_worker.map_or(share, |l| l.min(share)));
        let store = p.queue_parallelism.get(q).copied().or(p.parallelism);
        (serving * per_worker)
            .min(store.map_or(u64::MAX, u64::from))
            .max(1)
    };
    let names: BTreeSet<&str> = jobs.values().map(|j| j.0).collect();
    let slots: BTreeMap<&str, u64> = names.into_iter().map(|q| (q, slots_of(q))).collect();
    ahead_counts(&jobs, facts.heal_ms)
        .into_iter()
        .map(|(id, ahead)| {
            let q = jobs.get(&id).map_or("", |j| j.0);
            let rounds = (ahead + 1)
                .div_ceil(slots.get(q).copied().unwrap_or(1))
                .saturating_sub(1);
            (id, rounds.saturating_mul(bound))
        })
        .collect()
}

/// Per job: how many jobs of its queue were enqueued before it (enqueue
/// order is id order: the store assigns ids at enqueue) and had not
/// finished when its clock started (healing, or its enqueue if later).
/// A Fenwick tree over the finishing times keeps this O(n log n): a
/// workload at the job bound must not make the checker quadratic.
fn ahead_counts(
    jobs: &BTreeMap<JobId, (&str, u64, Option<u64>)>,
    heal_ms: u64,
) -> BTreeMap<JobId, u64> {
    let mut by_queue: BTreeMap<&str, Vec<(JobId, u64, u64)>> = BTreeMap::new();
    for (id, (q, enq, end)) in jobs {
        // Never finished: later than any start.
        let end = end.unwrap_or(u64::MAX);
        by_queue
            .entry(q)
            .or_default()
            .push((*id, heal_ms.max(*enq), end));
    }
    let mut out = BTreeMap::new();
    for list in by_queue.values() {
        let mut ends: Vec<u64> = list.iter().map(|j| j.2).collect();
        ends.sort_unstable();
        ends.dedup();
        let mut tree = vec![0u64; ends.len() + 1];
        for (seen, (id, start, end)) in list.iter().enumerate() {
            let finished = fenwick_prefix(&tree, ends.partition_point(|&e| e <= *start));
            out.insert(*id, seen as u64 - finished);
            fenwick_add(&mut tree, ends.partition_point(|&e| e < *end) + 1);
        }
    }
    out
}

/// Adds one at 1-based position `i`.
fn fenwick_add(tree: &mut [u64], mut i: usize) {
    while i < tree.len() {
        tree[i] += 1;
        i += i & i.wrapping_neg();
    }
}

/// The sum of 1-based positions `1..=i`.
fn fenwick_prefix(tree: &[u64], mut i: usize) -> u64 {
    let mut sum = 0;
    while i > 0 {
        sum += tree[i];
        i -= i & i.wrapping_neg();
    }
    sum
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
        leasehold_model::duration::format_ms(deadline)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, quadratic: earlier jobs of the queue not finished by
    /// the job's start.
    fn naive(jobs: &BTreeMap<JobId, (&str, u64, Option<u64>)>, heal: u64) -> BTreeMap<JobId, u64> {
        jobs.iter()
            .map(|(id, (q, enq, _))| {
                let start = heal.max(*enq);
                let ahead = jobs
                    .range(..id)
                    .filter(|(_, (q2, _, end))| q2 == q && end.is_none_or(|x| x > start))
                    .count() as u64;
                (*id, ahead)
            })
            .collect()
    }

    #[test]
    fn ahead_counts_agree_with_the_definition() {
        let mut x: u64 = 12345;
        let mut next = |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        for round in 0..50 {
            let mut jobs = BTreeMap::new();
            let mut enq = 0;
            for id in 0..(round * 7 + 1) {
                enq += next(5);
                let end = (next(4) > 0).then(|| enq + next(40));
                let q = ["a", "b", "c"][next(3) as usize];
                jobs.insert(JobId(id), (q, enq, end));
            }
            let heal = next(100);
            assert_eq!(
                ahead_counts(&jobs, heal),
                naive(&jobs, heal),
                "round {round}"
            );
        }
    }
}
