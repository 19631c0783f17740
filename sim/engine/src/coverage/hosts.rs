//! Situations of the workers' hosts and the network: a pause across a
//! belief deadline, a crash holding a lease, drift beyond the bound, a
//! one-way partition.

use super::index::Index;
use super::Marks;
use leasehold_core::{JobId, Token};
use leasehold_model::config::{ScriptedFault, SimConfig};
use leasehold_model::history::BeliefWhat;
use std::collections::BTreeMap;

/// Marks every host and network situation of `ix`.
pub(super) fn observe(ix: &Index, cfg: &SimConfig, marks: &mut Marks) {
    let bound = i64::from(cfg.protocol.max_drift_ppm);
    for f in &ix.faults {
        match f {
            ScriptedFault::Pause { host, at, len } => {
                let (from, to) = (at.as_ms(), at.as_ms() + len.as_ms());
                let deadlines = live_deadlines(ix, host, from);
                if to < ix.end && deadlines.values().any(|&u| from < u && u < to) {
                    marks.hit("worker-paused-across-its-belief-deadline-and-resumed");
                } else if let Some(by) = deadlines
                    .values()
                    .filter(|&&u| u >= to && u != u64::MAX && to < ix.end)
                    .map(|&u| u - to + 1)
                    .min()
                {
                    // The pause ended this much before a belief deadline.
                    marks.miss("worker-paused-across-its-belief-deadline-and-resumed", by);
                }
            }
            ScriptedFault::Drift { host, at, ppm } if ppm.abs() > bound => {
                let held = ix.beliefs.iter().any(|b| {
                    b.host == host
                        && b.t >= at.as_ms()
                        && matches!(b.what, BeliefWhat::Claimed { .. })
                });
                if held {
                    marks.hit("worker-clock-drift-beyond-the-bound");
                }
            }
            _ => {}
        }
    }
    for &(t, host) in &ix.crashes {
        if !live_deadlines(ix, host, t).is_empty() {
            marks.hit("worker-crashed-holding-a-lease");
        }
    }
    if ix.links.iter().any(|&(_, ab, ba)| ab != ba) {
        marks.hit("one-way-partition");
    }
}

/// The belief deadline (true time; `u64::MAX` when it never fences) of
/// every lease `host` believes it holds just before `t`.
fn live_deadlines(ix: &Index, host: &str, t: u64) -> BTreeMap<(JobId, Token), u64> {
    let mut live = BTreeMap::new();
    for b in ix.beliefs.iter().take_while(|b| b.t < t) {
        if b.host != host {
            continue;
        }
        match b.what {
            BeliefWhat::Claimed { until_true, .. } | BeliefWhat::Renewed { until_true, .. } => {
                live.insert((b.job, b.token), until_true.unwrap_or(u64::MAX));
            }
            BeliefWhat::Ended { .. } => {
                live.remove(&(b.job, b.token));
            }
            BeliefWhat::RenewUnavailable | BeliefWhat::Released { .. } => {}
        }
    }
    live
}
