//! Situations of releases: retried after a `Conflict` near expiry or after
//! a lost answer, retried past the worker's tries while the lease was
//! kept, refused as lost, waiting behind a merged batch lost to a
//! partition, in flight while the job's next token is granted, and a lease
//! returned at shutdown.

use super::index::Index;
use super::Marks;
use leasehold_core::{JobId, Token};
use leasehold_model::config::SimConfig;
use leasehold_model::history::{BeliefWhat, Fate, Op, Reply};
use std::collections::BTreeMap;

/// Marks every release situation of `ix`.
pub(super) fn observe(ix: &Index, cfg: &SimConfig, marks: &mut Marks) {
    retried(ix, cfg, marks);
    behind_a_lost_batch(ix, marks);
    stale_release_in_flight(ix, marks);
    for b in &ix.beliefs {
        if let BeliefWhat::Released { outcome, answer } = b.what {
            if outcome == "returned" && answer.as_deref() == Some("Committed") {
                marks.hit("lease-returned-at-shutdown");
            }
        }
    }
}

/// Whether a reply is the store's `Conflict`.
pub(super) fn is_conflict(reply: &Reply) -> bool {
    matches!(reply, Reply::Rejected(e) if e.starts_with("Conflict"))
}

fn retried(ix: &Index, cfg: &SimConfig, marks: &mut Marks) {
    // The expiry (store time) of each lease, as the store last showed it.
    let mut expiry: BTreeMap<(JobId, Token), i64> = BTreeMap::new();
    let mut served: Vec<_> = ix.served().collect();
    served.sort_by_key(|(_, s)| s.t);
    // The last release each host sent for each lease, and how many.
    let mut last: BTreeMap<(&str, JobId, Token), u64> = BTreeMap::new();
    let mut sent: BTreeMap<(&str, JobId, Token), u64> = BTreeMap::new();
    for r in &ix.requests {
        if let Op::Release { job, token, .. } = r.op {
            last.insert((r.host, *job, *token), r.t);
            *sent.entry((r.host, *job, *token)).or_default() += 1;
        }
    }
    // More tries than `release_tries`: the worker goes on only while its
    // heartbeat keeps the lease.
    let tries = u64::from(cfg.protocol.release_tries);
    if sent.values().any(|&n| n > tries) {
        marks.hit("release-retried-past-its-tries-while-its-lease-was-kept");
    }
    let sent_again = |host: &str, job: JobId, token: Token, after: u64| {
        last.get(&(host, job, token)).is_some_and(|&t| t > after)
    };
    let renew = cfg.protocol.renew_interval.as_ms() as i64;
    for (r, s) in served {
        for row in s.after {
            if let Some(e) = row.expires_at {
                expiry.insert((row.job, row.token), e.0);
            }
        }
        let Op::Release { job, token, .. } = r.op else {
            continue;
        };
        if s.fate == Fate::AnswerLost && sent_again(r.host, *job, *token, s.t) {
            marks.hit("release-answer-lost-and-retried");
        }
        // The lease's time left when the store answered Conflict.
        let left = expiry
            .get(&(*job, *token))
            .filter(|&&e| e >= s.store_time)
            .map(|&e| e - s.store_time);
        if s.reply.is_some_and(is_conflict) && sent_again(r.host, *job, *token, s.t) {
            match left {
                Some(left) if left <= renew => {
                    marks.hit("release-retried-after-conflict-near-expiry")
                }
                Some(left) => marks.miss(
                    "release-retried-after-conflict-near-expiry",
                    (left - renew) as u64,
                ),
                None => {}
            }
        }
    }
    for r in &ix.requests {
        if matches!(r.op, Op::Release { .. }) && matches!(r.answer, Some((_, Reply::ReleaseLost))) {
            marks.hit("release-answered-lost");
        }
    }
}

fn behind_a_lost_batch(ix: &Index, marks: &mut Marks) {
    for &(t, host, ids) in &ix.sent {
        if !ix.cut_off(host, t) {
            continue;
        }
        let reqs: Vec<_> = ids.iter().filter_map(|&id| ix.request(id)).collect();
        let lost = reqs.iter().any(|r| {
            r.served
                .as_ref()
                .is_none_or(|s| s.fate == Fate::RequestLost)
        });
        if !lost {
            continue;
        }
        // The batch is answered (unknown outcome) at its first answer.
        let answered = reqs
            .iter()
            .filter_map(|r| r.answer.map(|a| a.0))
            .min()
            .unwrap_or(ix.end);
        let waiting = ix.requests.iter().any(|r| {
            r.host == host
                && r.merged
                && matches!(r.op, Op::Release { .. })
                && t < r.t
                && r.t <= answered
        });
        if waiting {
            marks.hit("release-waiting-behind-a-merged-batch-lost-in-a-partition");
        }
    }
}

fn stale_release_in_flight(ix: &Index, marks: &mut Marks) {
    // Per job: each release's token and the span it was in flight.
    let mut flights: BTreeMap<JobId, Vec<(Token, u64, u64)>> = BTreeMap::new();
    for r in &ix.requests {
        if let Op::Release { job, token, .. } = r.op {
            let done = r.answer.map_or(ix.end, |a| a.0);
            flights.entry(*job).or_default().push((*token, r.t, done));
        }
    }
    for (_, s) in ix.served() {
        let Some(Reply::Leases(leases)) = s.reply else {
            continue;
        };
        for l in leases {
            let stale = flights.get(&l.job).is_some_and(|fs| {
                fs.iter()
                    .any(|&(tk, from, to)| tk < l.token && from <= s.t && s.t < to)
            });
            if stale {
                marks.hit("token-granted-while-a-stale-release-is-in-flight");
            }
        }
    }
}
