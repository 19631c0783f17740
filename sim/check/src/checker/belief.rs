//! I3 exclusive belief: at no true instant do two workers both believe
//! (spec §2) that they hold a lease on the same job.
//!
//! A worker believes it holds lease (job, token) from the moment it learns
//! of the grant until the earliest of: its self-fencing deadline (the
//! latest `believe_until` it computed, mapped to true time by the
//! simulator), the moment it stops believing, and its process's death. A
//! renew answered after the deadline starts a new belief interval. Ground
//! truth adds a second check: a handler may finish (its side effect) only
//! inside its own belief.
//!
//! Not asserted when the run broke the timing assumption (drift beyond ρ, or
//! a step of the store's clock); I1 and I2 still are.

use super::facts::{Facts, LeaseKey};
use super::Violation;
use leasehold_core::JobId;
use leasehold_model::config::InvariantId::I3;
use leasehold_model::history::{BeliefWhat, HandlerPhase};
use std::collections::BTreeMap;

/// A lease and one of its belief intervals.
type Held = (LeaseKey, (u64, u64));

/// Belief intervals `[from, to)` of one lease.
fn intervals(facts: &Facts, key: &LeaseKey) -> Vec<(u64, u64)> {
    let Some(steps) = facts.beliefs.get(key) else {
        return Vec::new();
    };
    let host = Facts::host_of(&key.0);
    let death = |from: u64| {
        facts
            .crashes
            .get(&host)
            .and_then(|v| v.iter().copied().find(|&c| c >= from))
            .unwrap_or(u64::MAX)
    };
    let mut out = Vec::new();
    let mut open: Option<(u64, u64)> = None;
    for s in steps {
        match &s.what {
            BeliefWhat::Claimed { until_true, .. } | BeliefWhat::Renewed { until_true, .. } => {
                let until = until_true.unwrap_or(u64::MAX);
                open = match open {
                    Some((from, d)) if s.t < d => Some((from, d.max(until))),
                    Some(closed) => {
                        out.push(closed);
                        Some((s.t, until))
                    }
                    None => Some((s.t, until)),
                };
            }
            BeliefWhat::Ended { .. } => {
                // The belief ends during this millisecond: it still held at `t`.
                if let Some((from, d)) = open.take() {
                    out.push((from, d.min(s.t + 1)));
                }
            }
            BeliefWhat::RenewUnavailable | BeliefWhat::Released { .. } => {}
        }
    }
    if let Some(o) = open {
        out.push(o);
    }
    out.into_iter()
        .map(|(from, to)| (from, to.min(death(from)).min(facts.end_ms)))
        .filter(|(from, to)| to > from)
        .collect()
}

/// The worker's local time at true time `t`, from its nearest belief record
/// at or before `t` (its clock runs at 1 ± drift, so this is close).
fn local_at(facts: &Facts, key: &LeaseKey, t: u64) -> (String, u64) {
    let steps = facts
        .beliefs
        .get(key)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let local = steps
        .iter()
        .take_while(|s| s.t <= t)
        .last()
        .map_or(0, |s| s.local + (t - s.t));
    (key.0.to_string(), local)
}

/// Checks exclusive belief and that handlers finish inside their belief.
pub fn check(facts: &Facts) -> Vec<Violation> {
    if facts.timing_broken {
        return Vec::new();
    }
    let mut by_job: BTreeMap<JobId, Vec<Held>> = BTreeMap::new();
    let mut out = Vec::new();
    for key in facts.beliefs.keys() {
        let ivs = intervals(facts, key);
        for iv in &ivs {
            by_job.entry(key.1).or_default().push((key.clone(), *iv));
        }
        for (t, phase) in facts.handlers.get(key).into_iter().flatten() {
            let HandlerPhase::Done { ok } = phase else {
                continue;
            };
            if !ivs.iter().any(|&(a, b)| a <= *t && *t < b) {
                out.push(
                    Violation::new(
                        I3,
                        format!(
                            "handler of {} finished ({}) at a moment its worker no longer believed it held the lease",
                            key.0,
                            if *ok { "succeeded" } else { "failed" }
                        ),
                    )
                    .job(key.1)
                    .tokens([key.2])
                    .hosts([key.0.as_str()])
                    .at(*t),
                );
            }
        }
    }
    for (job, mut ivs) in by_job {
        ivs.sort_by_key(|x| x.1);
        for (i, (ka, (_, a1))) in ivs.iter().enumerate() {
            for (kb, (b0, b1)) in &ivs[i + 1..] {
                if *b0 >= *a1 {
                    break;
                }
                if ka == kb {
                    continue;
                }
                out.push(
                    Violation::new(
                        I3,
                        format!(
                            "{} (lease {}) and {} (lease {}) both believed they held {job} during [{}ms, {}ms)",
                            ka.0,
                            ka.2,
                            kb.0,
                            kb.2,
                            b0,
                            a1.min(b1)
                        ),
                    )
                    .job(job)
                    .tokens([ka.2, kb.2])
                    .hosts([ka.0.as_str(), kb.0.as_str()])
                    .at(*b0)
                    .locals([local_at(facts, ka, *b0), local_at(facts, kb, *b0)]),
                );
            }
        }
    }
    out
}
