//! I9 parallelism: a queue never has more running jobs than its limit.

use super::replay::Step;
use super::Violation;
use crate::config::InvariantId::I9;
use leasehold_core::{JobId, JobState};
use std::collections::{BTreeMap, BTreeSet};

/// On events alone, with the per-queue `limit` (none = unlimited).
pub fn check_events(steps: &[Step<'_>], limit: Option<u32>) -> Vec<Violation> {
    let Some(limit) = limit else {
        return Vec::new();
    };
    let mut running: BTreeMap<&str, BTreeSet<JobId>> = BTreeMap::new();
    let mut out = Vec::new();
    for s in steps {
        let q = running.entry(s.before.queue.as_str()).or_default();
        if s.event.to == JobState::Running {
            q.insert(s.event.job);
        } else {
            q.remove(&s.event.job);
        }
        if q.len() > limit as usize {
            out.push(
                Violation::new(
                    I9,
                    format!(
                        "queue {:?} has {} running jobs, limit {limit}",
                        s.before.queue,
                        q.len()
                    ),
                )
                .on_step(s),
            );
        }
    }
    out
}
