//! Situations of retention: a prune that deleted jobs, one whose outcome
//! was unknown, and an enqueue under the key of a pruned job.

use super::index::Index;
use super::Marks;
use leasehold_core::JobId;
use leasehold_model::history::{Op, Reply};
use std::collections::BTreeMap;

/// Marks every pruning situation of `ix`.
pub(super) fn observe(ix: &Index, marks: &mut Marks) {
    // Each keyed job's key, and when each job was pruned.
    let mut keys: BTreeMap<JobId, &str> = BTreeMap::new();
    let mut pruned: BTreeMap<JobId, u64> = BTreeMap::new();
    for r in &ix.requests {
        match (r.op, &r.served) {
            (Op::Enqueue { key: Some(k), .. }, Some(s)) => {
                if let Some(Reply::Job(j)) = s.reply {
                    keys.entry(*j).or_insert(k);
                }
            }
            (Op::Prune { .. }, Some(s)) => {
                if let Some(Reply::Pruned(jobs)) = s.reply {
                    if !jobs.is_empty() {
                        marks.hit("prune-deleted-a-job");
                    }
                    pruned.extend(jobs.iter().map(|j| (*j, s.t)));
                }
            }
            _ => {}
        }
        if matches!(r.op, Op::Prune { .. }) && matches!(r.answer, Some((_, Reply::Unavailable(_))))
        {
            marks.hit("prune-answered-unavailable");
        }
    }
    finished_keys(ix, &keys, &pruned, marks);
    // The pruned keys, with when their job went.
    let gone: BTreeMap<&str, (JobId, u64)> = pruned
        .iter()
        .filter_map(|(j, &t)| keys.get(j).map(|k| (*k, (*j, t))))
        .collect();
    for r in &ix.requests {
        let Op::Enqueue { key: Some(k), .. } = r.op else {
            continue;
        };
        let Some(&(old, at)) = gone.get(k.as_str()) else {
            continue;
        };
        if r.t > at && matches!(r.answer, Some((_, Reply::Job(j))) if *j != old) {
            marks.hit("enqueue-under-a-pruned-key");
        }
    }
}

/// An enqueue answered with the job of its key, that job finished and not
/// pruned, after a prune had run.
fn finished_keys(
    ix: &Index,
    keys: &BTreeMap<JobId, &str>,
    pruned: &BTreeMap<JobId, u64>,
    marks: &mut Marks,
) {
    let Some(first_prune) = ix
        .served()
        .filter(|(r, _)| matches!(r.op, Op::Prune { .. }))
        .map(|(_, s)| s.t)
        .min()
    else {
        return;
    };
    // When each job was first seen finished.
    let mut finished: BTreeMap<JobId, u64> = BTreeMap::new();
    for (_, s) in ix.served() {
        for row in s.after.iter().filter(|row| row.state.is_terminal()) {
            let t = finished.entry(row.job).or_insert(s.t);
            *t = (*t).min(s.t);
        }
    }
    for r in &ix.requests {
        let (Op::Enqueue { key: Some(_), .. }, Some((_, Reply::Job(j)))) = (r.op, r.answer) else {
            continue;
        };
        let done_before = finished.get(j).is_some_and(|&t| t < r.t);
        let gone = pruned.get(j).is_some_and(|&t| t <= r.t);
        if keys.contains_key(j) && done_before && !gone && r.t > first_prune {
            marks.hit("enqueue-under-the-key-of-a-finished-job");
        }
    }
}
