//! Every handler ran under a lease the store granted to its own worker: the
//! audit log's `claimed` event for (job, token) names the worker whose
//! process recorded the side effects. A handler running a lease granted to
//! another worker, or never granted, breaks single grant (I1) in the real
//! world, where the audit log alone cannot see it.

use super::{effects, CheckId, Evidence, Violation};
use leasehold_core::{EventKind, JobId, Token};
use std::collections::{BTreeMap, BTreeSet};

/// Runs the check.
pub fn check(e: &Evidence<'_>) -> Vec<Violation> {
    let granted: BTreeMap<(JobId, Token), &str> = e
        .events
        .iter()
        .filter(|ev| matches!(ev.kind, EventKind::Claimed { .. }))
        .filter_map(|ev| Some(((ev.job, ev.token), ev.worker.as_ref()?.as_str())))
        .collect();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (job, token, worker, ..) in effects(e.logs) {
        if !seen.insert((job, token, worker)) {
            continue;
        }
        match granted.get(&(job, token)) {
            Some(w) if *w == worker => {}
            Some(w) => out.push(
                Violation::new(
                    CheckId::Grants,
                    format!("{worker} ran a lease the store granted to {w}"),
                )
                .job(job)
                .tokens([token])
                .workers([worker, w]),
            ),
            None => out.push(
                Violation::new(
                    CheckId::Grants,
                    format!("{worker} ran a lease the audit log never granted"),
                )
                .job(job)
                .tokens([token])
                .workers([worker]),
            ),
        }
    }
    out
}
