//! Situations of renews and beliefs: a renew answered at the edge of the
//! fence or committed after it, a renew's answer lost or unknown, a fence under a
//! partition, two workers' beliefs in one job a tick apart.

use super::index::Index;
use super::Marks;
use leasehold_core::{JobId, Token};
use leasehold_model::config::{ScriptedFault, SimConfig};
use leasehold_model::history::{BeliefWhat, Fate, Op, Reply};
use leasehold_model::situation::EDGE_MS;
use std::collections::BTreeMap;

/// Marks every renew and belief situation of `ix`.
pub(super) fn observe(ix: &Index, cfg: &SimConfig, marks: &mut Marks) {
    renews_near_the_fence(ix, cfg, marks);
    renew_answers(ix, marks);
    owed_renews(ix, marks);
    for b in &ix.beliefs {
        if matches!(b.what, BeliefWhat::Ended { why } if why == "Fenced") && ix.cut_off(b.host, b.t)
        {
            marks.hit("worker-fenced-while-partitioned");
        }
    }
    claims_a_tick_from_an_end(ix, marks);
}

/// Whether `host`'s clock drifts at exactly the declared bound from `t` on
/// or before.
fn drifts_at_the_bound(ix: &Index, cfg: &SimConfig, host: &str, t: u64) -> bool {
    let bound = i64::from(cfg.protocol.max_drift_ppm);
    ix.faults.iter().any(|f| {
        matches!(f, ScriptedFault::Drift { host: h, at, ppm }
            if h == host && at.as_ms() <= t && ppm.abs() == bound)
    })
}

fn renews_near_the_fence(ix: &Index, cfg: &SimConfig, marks: &mut Marks) {
    let margin = cfg.protocol.fence_margin.as_ms();
    // The belief deadline (true time) of each lease a worker holds.
    let mut until: BTreeMap<(&str, JobId, Token), u64> = BTreeMap::new();
    for b in &ix.beliefs {
        let key = (b.worker, b.job, b.token);
        match b.what {
            BeliefWhat::Claimed { until_true, .. } => {
                if let Some(u) = until_true {
                    until.insert(key, *u);
                }
            }
            BeliefWhat::Renewed { until_true, .. } => {
                if let Some(&u) = until.get(&key).filter(|&&u| u >= b.t) {
                    // How long before the fence the answer came; a miss is
                    // how much earlier than the window it was.
                    let before = u - b.t;
                    if before <= EDGE_MS {
                        marks.hit("renew-answered-within-a-tick-of-the-fence");
                    } else {
                        marks.miss(
                            "renew-answered-within-a-tick-of-the-fence",
                            before - EDGE_MS,
                        );
                    }
                    if drifts_at_the_bound(ix, cfg, b.host, b.t) {
                        if before <= margin {
                            marks.hit("drift-at-the-bound-with-a-renew-near-the-fence");
                        } else {
                            marks.miss(
                                "drift-at-the-bound-with-a-renew-near-the-fence",
                                before - margin,
                            );
                        }
                    }
                }
                match until_true {
                    Some(u) => until.insert(key, *u),
                    None => until.remove(&key),
                };
            }
            BeliefWhat::Ended { .. } => {
                until.remove(&key);
            }
            BeliefWhat::RenewUnavailable | BeliefWhat::Released { .. } => {}
        }
    }
}

fn renew_answers(ix: &Index, marks: &mut Marks) {
    // When each worker host fenced itself on each lease.
    let fenced: BTreeMap<(&str, JobId, Token), u64> = ix
        .beliefs
        .iter()
        .filter(|b| matches!(b.what, BeliefWhat::Ended { why } if why == "Fenced"))
        .map(|b| ((b.host, b.job, b.token), b.t))
        .collect();
    for r in &ix.requests {
        let Op::Renew { job, token, .. } = r.op else {
            continue;
        };
        if let Some(s) = &r.served {
            let renewed = matches!(s.reply, Some(Reply::Renewed { .. }));
            if s.fate == Fate::AnswerLost && renewed {
                marks.hit("renew-answer-lost");
            }
            let after_fence = fenced
                .get(&(r.host, *job, *token))
                .is_some_and(|&e| e < s.t);
            if renewed && after_fence && s.fate != Fate::Cancelled {
                marks.hit("renew-committed-after-self-fencing");
            }
        }
        if matches!(r.answer, Some((_, Reply::RenewLost))) {
            marks.hit("renew-answered-lost");
        }
    }
}

fn owed_renews(ix: &Index, marks: &mut Marks) {
    // The last renew each host sent for each lease.
    let mut last: BTreeMap<(&str, JobId, Token), u64> = BTreeMap::new();
    for r in &ix.requests {
        if let Op::Renew { job, token, .. } = r.op {
            last.insert((r.host, *job, *token), r.t);
        }
    }
    for b in &ix.beliefs {
        if matches!(b.what, BeliefWhat::RenewUnavailable)
            && last
                .get(&(b.host, b.job, b.token))
                .is_some_and(|&t| t > b.t)
        {
            marks.hit("owed-renew-sent-after-unavailable");
        }
    }
}

fn claims_a_tick_from_an_end(ix: &Index, marks: &mut Marks) {
    // Per job: the ends of beliefs and the claims, (true time, worker, token).
    type Seen<'a> = Vec<(u64, &'a str, Token)>;
    let mut ends: BTreeMap<JobId, Seen> = BTreeMap::new();
    let mut claims: BTreeMap<JobId, Seen> = BTreeMap::new();
    for b in &ix.beliefs {
        let to = match b.what {
            BeliefWhat::Ended { .. } => &mut ends,
            BeliefWhat::Claimed { .. } => &mut claims,
            _ => continue,
        };
        to.entry(b.job).or_default().push((b.t, b.worker, b.token));
    }
    for (job, cs) in &claims {
        let Some(es) = ends.get(job) else { continue };
        for &(c, worker, token) in cs {
            // The closest end of another worker's older belief to this claim.
            let closest = es
                .iter()
                .filter(|&&(_, w, tk)| w != worker && tk < token)
                .map(|&(e, _, _)| e.abs_diff(c))
                .min();
            match closest {
                Some(gap) if gap <= EDGE_MS => {
                    marks.hit("two-workers-believe-one-job-within-a-tick")
                }
                Some(gap) => marks.miss("two-workers-believe-one-job-within-a-tick", gap - EDGE_MS),
                None => {}
            }
        }
    }
}
