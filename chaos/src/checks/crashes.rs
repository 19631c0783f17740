//! Every crash report matches a fault the nemesis injected. A crash report
//! is a sweep reclaim in the audit log (`swept`: job, token, holder, expiry).
//! Its lease was last granted or renewed at store time `G` and expired at
//! `E`; it is explained by an injected fault whose active time meets
//! `[G, E]` (give or take [`MATCH_SLACK_MS`]) and that touched:
//!
//! - the holder's own process: a kill (from then on: the identity never
//!   comes back), a pause (while stopped), a backend termination;
//! - or the whole store: a PostgreSQL restart; any pause (a stopped process
//!   may be mid-transaction, holding locks that other workers' renews and
//!   releases wait for); on SQLite also any kill or kill-writer, since the
//!   dying process may hold the file's single write lock.
//!
//! Why a pause is store-wide on PostgreSQL too (found by the first long
//! run): a claim's `FOR UPDATE SKIP LOCKED` scan re-checks a row that
//! another worker claimed a moment earlier, skips it, but keeps its lock
//! until the claim's transaction ends. A claimer stopped mid-transaction
//! then blocks the release of a lease it never got; the worker does not
//! renew while it releases, so that lease expires and is swept.
//!
//! Store times and fault times are both the host's wall clock (PostgreSQL
//! and the SQLite store clock read it on the same host).

use super::{CheckId, CheckStats, Evidence, Violation, MATCH_SLACK_MS};
use crate::config::{FaultKind, StoreTarget};
use crate::nemesis::Injected;
use leasehold_core::{EventKind, JobId, StoreTime, Token};
use std::collections::BTreeMap;

/// Runs the check.
pub fn check(e: &Evidence<'_>, stats: &mut CheckStats) -> Vec<Violation> {
    let pid_of: BTreeMap<&str, u32> = e
        .incarnations
        .iter()
        .filter_map(|i| Some((i.worker.as_deref()?, i.pid)))
        .collect();
    let sqlite = matches!(e.store, StoreTarget::Sqlite);
    let mut live: BTreeMap<(JobId, Token), StoreTime> = BTreeMap::new();
    let mut out = Vec::new();
    for ev in e.events {
        match &ev.kind {
            EventKind::Claimed { .. } | EventKind::Renewed { .. } => {
                live.insert((ev.job, ev.token), ev.at);
            }
            EventKind::Swept { expired_at, .. } => {
                stats.crash_reports += 1;
                let holder = ev.worker.as_ref().map_or("", |w| w.as_str());
                let granted = live
                    .get(&(ev.job, ev.token))
                    .copied()
                    .unwrap_or(*expired_at);
                let window = (granted.0 - MATCH_SLACK_MS, expired_at.0 + MATCH_SLACK_MS);
                let pid = pid_of.get(holder).copied();
                let explained = e
                    .faults
                    .iter()
                    .any(|f| explains(f, holder, pid, sqlite, window));
                if explained {
                    stats.crash_reports_matched += 1;
                } else {
                    out.push(
                        Violation::new(
                            CheckId::CrashReports,
                            format!(
                                "crash report without an injected fault: lease last granted or \
                                 renewed at {}, expired at {}, swept at {}; no fault touched {} \
                                 (pid {}) or the store in between",
                                clock_ms(granted),
                                clock_ms(*expired_at),
                                clock_ms(ev.at),
                                holder,
                                pid.map_or("unknown".into(), |p| p.to_string())
                            ),
                        )
                        .job(ev.job)
                        .tokens([ev.token])
                        .workers([holder]),
                    );
                }
            }
            _ => {}
        }
    }
    out
}

fn clock_ms(t: StoreTime) -> String {
    super::clock(t.0.saturating_mul(1_000))
}

/// Whether fault `f` explains a reclaim of `holder`'s lease live over `window`.
fn explains(
    f: &Injected,
    holder: &str,
    pid: Option<u32>,
    sqlite: bool,
    window: (i64, i64),
) -> bool {
    let on_holder = f.worker.as_deref() == Some(holder) || (pid.is_some() && f.pid == pid);
    let meets = |from: i64, to: i64| from <= window.1 && to >= window.0;
    let instant = (f.from_ms, f.from_ms + MATCH_SLACK_MS);
    match f.kind {
        FaultKind::Kill | FaultKind::KillWriter => {
            (on_holder && f.from_ms <= window.1) || (sqlite && meets(instant.0, instant.1))
        }
        FaultKind::Pause => meets(f.from_ms, f.to_ms.max(f.from_ms)),
        FaultKind::TerminateBackend => on_holder && meets(instant.0, instant.1),
        FaultKind::Restart => meets(f.from_ms, f.to_ms.max(f.from_ms)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(kind: FaultKind, worker: &str, from: i64, to: i64) -> Injected {
        Injected {
            kind,
            planned: String::new(),
            slot: Some(0),
            pid: Some(10),
            worker: Some(worker.into()),
            from_ms: from,
            to_ms: to,
            note: String::new(),
        }
    }

    #[test]
    fn a_fault_explains_only_its_own_holder_and_its_own_time() {
        let w = (1_000, 4_000);
        let kill = fault(FaultKind::Kill, "a", 3_000, 3_000);
        assert!(explains(&kill, "a", None, false, w));
        assert!(!explains(&kill, "b", Some(11), false, w), "another worker");
        assert!(
            explains(&kill, "b", Some(11), true, w),
            "on SQLite a kill is store-wide"
        );
        let late = fault(FaultKind::Kill, "a", 9_000, 9_000);
        assert!(
            !explains(&late, "a", None, false, w),
            "killed after the expiry"
        );
        let pause = fault(FaultKind::Pause, "a", 5_000, 9_000);
        assert!(
            !explains(&pause, "a", None, false, w),
            "paused after the expiry"
        );
        let pause = fault(FaultKind::Pause, "a", 3_500, 9_000);
        assert!(explains(&pause, "a", None, false, w));
        assert!(
            explains(&pause, "b", Some(11), false, w),
            "a stopped process may hold locks another holder waits for"
        );
        assert!(explains(&pause, "b", Some(11), true, w));
        let term = fault(FaultKind::TerminateBackend, "a", 3_000, 3_000);
        assert!(explains(&term, "a", None, false, w));
        assert!(
            !explains(&term, "b", Some(11), false, w),
            "only the holder's backends"
        );
        let restart = fault(FaultKind::Restart, "", 0, 1_500);
        assert!(explains(&restart, "z", None, false, w));
        let old = fault(FaultKind::Restart, "", 0, 500);
        assert!(!explains(&old, "z", None, false, w));
    }
}
