//! The audit log through the simulator's offline checker, exactly as
//! `leasehold check` runs it: I1 (single grant), I2 (single winner), I4 (an
//! accepted success ends `succeeded`), I7 (cancel), I8 (retry budget). The
//! other invariants need the simulator's ground truth; here the side-effect
//! logs and the injected faults stand in for part of it (`overlap` for I3,
//! `crash-reports` for I5, `results` for I4 and I6).

use super::{CheckId, CheckStats, Evidence, Violation};

/// Runs the check.
pub fn check(e: &Evidence<'_>, stats: &mut CheckStats) -> Vec<Violation> {
    stats.audit_events = e.events.len() as u64;
    leasehold_check::checker::check_store_events(e.events, None)
        .into_iter()
        .map(|v| {
            let mut out = Violation::new(CheckId::Audit(v.invariant), v.message);
            out.job = v.job;
            out.tokens = v.tokens;
            out.workers = v.hosts;
            out
        })
        .collect()
}
