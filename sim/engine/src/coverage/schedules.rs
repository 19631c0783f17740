//! Situations of schedules: a plan time a store clock step jumped over or
//! repeated, a catch-up at its bound, one plan time fired by two
//! schedulers, a fire answered `PlanTimePruned`.

use super::index::Index;
use super::Marks;
use leasehold_model::config::{ScriptedFault, SimConfig};
use leasehold_model::history::{Op, Reply};
use std::collections::{BTreeMap, BTreeSet};

/// How long after a scheduler's restart its catch-up fires count.
const CATCH_UP_WINDOW_MS: u64 = 1_000;

/// Marks every schedule situation of `ix`.
pub(super) fn observe(ix: &Index, cfg: &SimConfig, marks: &mut Marks) {
    // The fires: (true time, host, schedule, plan time).
    let fires: Vec<(u64, &str, &str, i64)> = ix
        .requests
        .iter()
        .filter_map(|r| match r.op {
            Op::Fire { name, plan_time } => Some((r.t, r.host, name.as_str(), plan_time.0)),
            _ => None,
        })
        .collect();
    if fires.is_empty() {
        return;
    }
    clock_steps(ix, &fires, marks);
    let stepped = ix.faults.iter().any(|f| {
        matches!(f, ScriptedFault::Skew { host, at, .. }
            if host.starts_with("scheduler")
                && fires.iter().any(|&(t, h, _, _)| h == host && t >= at.as_ms()))
    });
    if stepped {
        marks.hit("scheduler-clock-stepped-while-firing");
    }
    catch_ups(ix, cfg, &fires, marks);
    let mut by: BTreeMap<(&str, i64), BTreeSet<&str>> = BTreeMap::new();
    for &(_, host, name, p) in &fires {
        by.entry((name, p)).or_default().insert(host);
    }
    if by.values().any(|hosts| hosts.len() > 1) {
        marks.hit("one-plan-time-fired-by-two-schedulers");
    }
    let pruned = ix.requests.iter().any(|r| {
        matches!(r.op, Op::Fire { .. })
            && matches!(r.answer, Some((_, Reply::Rejected(e))) if e.starts_with("PlanTimePruned"))
    });
    if pruned {
        marks.hit("fire-answered-plan-time-pruned");
    }
}

fn clock_steps(ix: &Index, fires: &[(u64, &str, &str, i64)], marks: &mut Marks) {
    for f in &ix.faults {
        let ScriptedFault::Skew { host, at, by } = f else {
            continue;
        };
        if host != "store" {
            continue;
        }
        let at = at.as_ms();
        // The store clock just before the step, from the last service.
        let Some(offset) = ix
            .served()
            .filter(|(_, s)| s.t < at)
            .max_by_key(|(_, s)| s.t)
            .map(|(_, s)| s.store_time - s.t as i64)
        else {
            continue;
        };
        let before = at as i64 + offset;
        let after = before + by.0;
        let (lo, hi) = (before.min(after), before.max(after));
        // How far each fired plan time lay outside the step's span.
        let closest = fires
            .iter()
            .map(|&(_, _, _, p)| (lo - p).max(p - hi).max(0))
            .min();
        match closest {
            Some(0) => marks.hit("plan-time-inside-a-store-clock-step"),
            Some(by) => marks.miss("plan-time-inside-a-store-clock-step", by as u64),
            None => {}
        }
    }
}

fn catch_ups(ix: &Index, cfg: &SimConfig, fires: &[(u64, &str, &str, i64)], marks: &mut Marks) {
    for &(r, host, incarnation) in &ix.starts {
        if incarnation == 0 || !host.starts_with("scheduler") {
            continue;
        }
        for s in &cfg.schedules {
            let Some(max) = s.catch_up_max else { continue };
            let late: BTreeSet<i64> = fires
                .iter()
                .filter(|&&(t, h, n, _)| {
                    h == host && n == s.name && r <= t && t <= r + CATCH_UP_WINDOW_MS
                })
                .map(|f| f.3)
                .collect();
            // In plan times: how many fewer than the bound it fired.
            let short = u64::from(max).saturating_sub(late.len() as u64);
            if short == 0 {
                marks.hit("catch-up-at-its-bound");
            } else {
                marks.miss("catch-up-at-its-bound", short);
            }
        }
    }
}
