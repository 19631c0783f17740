//! Situations of the store: its host crashing just before a lease
//! deadline, with a request in flight or just after a success committed, its `Conflict` answers, an
//! enqueue retried after a lost answer, one queue at its limit while
//! another claims.

use super::index::Index;
use super::releases::is_conflict;
use super::Marks;
use leasehold_core::{JobId, JobState, Outcome};
use leasehold_model::config::SimConfig;
use leasehold_model::history::{Fate, Op, Reply};
use std::collections::BTreeMap;

/// The store host's name.
const STORE: &str = "store";

/// Marks every store situation of `ix`.
pub(super) fn observe(ix: &Index, cfg: &SimConfig, marks: &mut Marks) {
    crashes(ix, cfg, marks);
    if ix.served().any(|(_, s)| s.reply.is_some_and(is_conflict)) {
        marks.hit("store-conflict-answered");
    }
    enqueue_retries(ix, marks);
    queue_limits(ix, cfg, marks);
}

fn crashes(ix: &Index, cfg: &SimConfig, marks: &mut Marks) {
    let crashes: Vec<u64> = ix
        .crashes
        .iter()
        .filter(|c| c.1 == STORE)
        .map(|c| c.0)
        .collect();
    if crashes.is_empty() {
        return;
    }
    let mut served: Vec<_> = ix.served().collect();
    served.sort_by_key(|(_, s)| s.t);
    let renew = cfg.protocol.renew_interval.as_ms() as i64;
    for &c in &crashes {
        // The running leases' expiries, and the store clock, just before.
        let mut expiry: BTreeMap<JobId, Option<i64>> = BTreeMap::new();
        let mut offset = 0i64;
        for (_, s) in served.iter().take_while(|(_, s)| s.t <= c) {
            offset = s.store_time - s.t as i64;
            for row in s.after {
                let running = row.state == JobState::Running;
                expiry.insert(row.job, row.expires_at.filter(|_| running).map(|e| e.0));
            }
        }
        let now = c as i64 + offset;
        // How far each running lease's expiry lay outside the last renew
        // interval before it: more time left than that, or expired already
        // (the crash came that much too late).
        let closest = expiry
            .values()
            .flatten()
            .map(|&e| {
                if e >= now {
                    (e - now - renew).max(0)
                } else {
                    now - e
                }
            })
            .min();
        match closest {
            Some(0) => marks.hit("store-restart-just-before-a-lease-deadline"),
            Some(by) => marks.miss("store-restart-just-before-a-lease-deadline", by as u64),
            None => {}
        }
        let lease = cfg.protocol.lease.as_ms();
        let success_before = served.iter().any(|(r, s)| {
            matches!(
                r.op,
                Op::Release {
                    outcome: Outcome::Succeeded(_),
                    ..
                }
            ) && matches!(s.reply, Some(Reply::Committed))
                && s.t <= c
                && c - s.t < lease
        });
        if success_before {
            marks.hit("success-committed-shortly-before-a-store-crash");
        }
        let in_flight = ix.requests.iter().any(|r| {
            r.t < c
                && r.served.as_ref().is_none_or(|s| s.t >= c)
                && matches!(r.answer, Some((t, Reply::Unavailable(_))) if t >= c)
        });
        if in_flight {
            marks.hit("store-crash-with-a-request-in-flight");
        } else if let Some(by) = served
            .iter()
            .filter(|(r, s)| r.t < c && s.t < c)
            .map(|(_, s)| c - s.t)
            .min()
        {
            // The crash came this long after the store's last service of a
            // request: that much earlier, the request was in flight.
            marks.miss("store-crash-with-a-request-in-flight", by);
        }
    }
}

fn enqueue_retries(ix: &Index, marks: &mut Marks) {
    // The job each key's lost-answer enqueue made, and when.
    let mut lost: BTreeMap<&str, (JobId, u64)> = BTreeMap::new();
    for r in &ix.requests {
        let Op::Enqueue { key: Some(key), .. } = r.op else {
            continue;
        };
        if let Some(s) = &r.served {
            if let (Fate::AnswerLost, Some(Reply::Job(j))) = (s.fate, s.reply) {
                lost.insert(key, (*j, s.t));
            }
        }
        if let (Some(&(j, at)), Some((_, Reply::Job(got)))) = (lost.get(key.as_str()), r.answer) {
            if *got == j && r.t > at {
                marks.hit("enqueue-retried-after-a-lost-answer");
            }
        }
    }
}

fn queue_limits(ix: &Index, cfg: &SimConfig, marks: &mut Marks) {
    let p = &cfg.protocol;
    let limit = |q: &str| p.queue_parallelism.get(q).copied().or(p.parallelism);
    if p.queue_parallelism.is_empty() && p.parallelism.is_none() {
        return;
    }
    let mut served: Vec<_> = ix.served().collect();
    served.sort_by_key(|(_, s)| s.t);
    // Each job's queue and whether it runs; running jobs per queue.
    let mut running: BTreeMap<JobId, (&str, bool)> = BTreeMap::new();
    let mut per_queue: BTreeMap<&str, u32> = BTreeMap::new();
    for (r, s) in served {
        for row in s.after {
            let now = row.state == JobState::Running;
            let was = running.insert(row.job, (row.queue.as_str(), now));
            let was = was.is_some_and(|w| w.1);
            let n = per_queue.entry(row.queue.as_str()).or_insert(0);
            match (was, now) {
                (false, true) => *n += 1,
                (true, false) => *n = n.saturating_sub(1),
                _ => {}
            }
        }
        let (Op::Claim { queue, .. }, Some(Reply::Leases(leases))) = (r.op, s.reply) else {
            continue;
        };
        if leases.is_empty() {
            continue;
        }
        let full_elsewhere = per_queue
            .iter()
            .any(|(q, &n)| *q != queue.as_str() && limit(q).is_some_and(|l| n >= l));
        if full_elsewhere {
            marks.hit("queue-limit-reached-while-another-queue-has-room");
        }
    }
}
