//! Situations of claims, sweeps, cancels and the jobs' ends: a grant lost
//! and swept, a sweep at the edge of expiry or under a live belief, a
//! swept job claimed elsewhere, a cancelled batch that committed a claim,
//! a cancel racing a claim, a job dead at its budget, a handler running
//! past its belief.

use super::index::Index;
use super::Marks;
use leasehold_core::{CancelOutcome, JobId, JobState, Token};
use leasehold_model::config::SimConfig;
use leasehold_model::history::{BeliefWhat, Fate, HandlerPhase, LeaseRef, Op, Reply};
use leasehold_model::situation::EDGE_MS;
use std::collections::{BTreeMap, BTreeSet};

/// Marks every claim, sweep, cancel and job situation of `ix`.
pub(super) fn observe(ix: &Index, cfg: &SimConfig, marks: &mut Marks) {
    sweeps(ix, marks);
    cancels(ix, marks);
    for (r, s) in ix.served() {
        if matches!(r.op, Op::Claim { .. })
            && s.fate == Fate::Cancelled
            && ix.committed.contains(&r.id)
        {
            marks.hit("cancelled-batch-whose-claim-committed");
        }
    }
    for row in &ix.finals {
        if row.state == JobState::Dead && row.attempt >= row.max_attempts {
            marks.hit("job-died-at-its-retry-budget");
        }
    }
    handlers_past_their_belief(ix, marks);
    racing_claims(ix, marks);
    workers_at_a_queue_limit(ix, cfg, marks);
}

/// Every lease a served claim granted: (served true time, claimer, lease,
/// whether its answer was lost).
fn grants<'h>(ix: &'h Index) -> Vec<(u64, &'h str, &'h LeaseRef, bool)> {
    let mut out = Vec::new();
    for (r, s) in ix.served() {
        let (Op::Claim { worker, .. }, Some(Reply::Leases(leases))) = (r.op, s.reply) else {
            continue;
        };
        for l in leases {
            out.push((s.t, worker.0.as_str(), l, s.fate == Fate::AnswerLost));
        }
    }
    out
}

fn sweeps(ix: &Index, marks: &mut Marks) {
    let grants = grants(ix);
    let lost: BTreeSet<(JobId, Token)> = grants
        .iter()
        .filter(|g| g.3)
        .map(|g| (g.2.job, g.2.token))
        .collect();
    // When each worker's belief in each lease ended.
    let ended: BTreeMap<(&str, JobId, Token), u64> = ix
        .beliefs
        .iter()
        .filter(|b| matches!(b.what, BeliefWhat::Ended { .. }))
        .map(|b| ((b.worker, b.job, b.token), b.t))
        .collect();
    for (_, s) in ix.served() {
        let Some(Reply::Swept(reports)) = s.reply else {
            continue;
        };
        for c in reports {
            if lost.contains(&(c.job, c.token)) {
                marks.hit("claim-answer-lost-and-the-job-swept");
            }
            if c.swept_at.0 >= c.expired_at.0 {
                let late = (c.swept_at.0 - c.expired_at.0) as u64;
                if late <= EDGE_MS {
                    marks.hit("sweep-within-a-tick-of-expiry");
                } else {
                    marks.miss("sweep-within-a-tick-of-expiry", late - EDGE_MS);
                }
            }
            if ended
                .get(&(c.holder.0.as_str(), c.job, c.token))
                .is_some_and(|&e| e > s.t)
            {
                marks.hit("swept-while-the-holder-still-believes");
            }
            let elsewhere = grants.iter().any(|&(t, w, l, _)| {
                t > s.t && l.job == c.job && l.token > c.token && w != c.holder.0
            });
            if elsewhere {
                marks.hit("swept-job-claimed-by-another-worker");
            }
        }
    }
}

fn cancels(ix: &Index, marks: &mut Marks) {
    let grants = grants(ix);
    for r in &ix.requests {
        let Op::Cancel { job } = r.op else { continue };
        match r.answer {
            Some((_, Reply::Cancel(CancelOutcome::Requested))) => {
                marks.hit("cancel-requested-on-a-running-job")
            }
            Some((_, Reply::Cancel(CancelOutcome::AlreadyTerminal(JobState::Succeeded)))) => {
                marks.hit("cancel-of-a-job-that-already-succeeded")
            }
            _ => {}
        }
        let done = r.answer.map_or(ix.end, |a| a.0);
        // How far each grant of the job was served outside the cancel's
        // flight (0: inside it, the race).
        let closest = grants
            .iter()
            .filter(|g| g.2.job == *job)
            .map(|&(t, _, _, _)| r.t.saturating_sub(t).max(t.saturating_sub(done)))
            .min();
        match closest {
            Some(0) => marks.hit("cancel-racing-a-claim"),
            Some(by) => marks.miss("cancel-racing-a-claim", by),
            None => {}
        }
    }
}

fn handlers_past_their_belief(ix: &Index, marks: &mut Marks) {
    // The last belief deadline (true time) of each lease.
    let mut until: BTreeMap<(JobId, Token), u64> = BTreeMap::new();
    for b in &ix.beliefs {
        if let BeliefWhat::Claimed { until_true, .. } | BeliefWhat::Renewed { until_true, .. } =
            b.what
        {
            until.insert((b.job, b.token), until_true.unwrap_or(u64::MAX));
        }
    }
    for &(t, job, token, phase) in &ix.handlers {
        let ended = !matches!(phase, HandlerPhase::Start);
        if ended && until.get(&(job, token)).is_some_and(|&u| t > u) {
            marks.hit("handler-running-past-its-belief-deadline");
        }
    }
}

/// Claims of two workers on one queue, both granted leases, served within
/// a tick of each other.
fn racing_claims(ix: &Index, marks: &mut Marks) {
    let mut granted: Vec<(u64, &str, &str)> = ix
        .served()
        .filter_map(|(r, s)| match (r.op, s.reply) {
            (Op::Claim { worker, queue, .. }, Some(Reply::Leases(l))) if !l.is_empty() => {
                Some((s.t, worker.0.as_str(), queue.as_str()))
            }
            _ => None,
        })
        .collect();
    granted.sort_by_key(|g| g.0);
    let racing = granted.windows(2).any(|w| {
        let ((t0, w0, q0), (t1, w1, q1)) = (w[0], w[1]);
        w0 != w1 && q0 == q1 && t1 - t0 <= EDGE_MS
    });
    if racing {
        marks.hit("claims-of-two-workers-served-within-a-tick");
    }
    for &(_, host, ids) in &ix.sent {
        let claimers: BTreeSet<&str> = ids
            .iter()
            .filter_map(|&id| match ix.request(id).map(|r| r.op) {
                Some(Op::Claim { worker, .. })
                    if ix.request(id).is_some_and(|r| r.host == host) =>
                {
                    Some(worker.0.as_str())
                }
                _ => None,
            })
            .collect();
        if claimers.len() > 1 {
            marks.hit("merged-batch-carried-claims-of-two-workers");
        }
    }
}

/// A worker claiming on one queue while it holds its limit of another.
fn workers_at_a_queue_limit(ix: &Index, cfg: &SimConfig, marks: &mut Marks) {
    let p = &cfg.protocol;
    let limit = |q: &str| {
        p.queue_limits
            .get(q)
            .copied()
            .or(p.queue_limit)
            .unwrap_or(p.concurrency)
    };
    let queue_of: BTreeMap<(JobId, Token), &str> = grants(ix)
        .into_iter()
        .map(|(_, _, l, _)| ((l.job, l.token), l.queue.as_str()))
        .collect();
    if queue_of.values().collect::<BTreeSet<_>>().len() < 2 {
        return;
    }
    // Each worker's live leases by queue, swept in time order with the
    // claims (a belief at the claim's instant counts first).
    let mut live: BTreeMap<&str, BTreeMap<(JobId, Token), &str>> = BTreeMap::new();
    let mut beliefs = ix.beliefs.iter().peekable();
    for r in &ix.requests {
        while let Some(b) = beliefs.next_if(|b| b.t <= r.t) {
            let mine = live.entry(b.worker).or_default();
            match b.what {
                BeliefWhat::Claimed { .. } => {
                    if let Some(q) = queue_of.get(&(b.job, b.token)) {
                        mine.insert((b.job, b.token), q);
                    }
                }
                BeliefWhat::Ended { .. } => {
                    mine.remove(&(b.job, b.token));
                }
                _ => {}
            }
        }
        let Op::Claim { worker, queue, .. } = r.op else {
            continue;
        };
        let Some(mine) = live.get(worker.0.as_str()) else {
            continue;
        };
        let mut per_queue: BTreeMap<&str, u32> = BTreeMap::new();
        for q in mine.values() {
            *per_queue.entry(q).or_insert(0) += 1;
        }
        if per_queue
            .iter()
            .any(|(q, &n)| *q != queue.as_str() && n >= limit(q))
        {
            marks.hit("worker-at-its-limit-on-one-queue-claims-another");
        }
    }
}
