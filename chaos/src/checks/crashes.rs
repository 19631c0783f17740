//! Every crash report matches a fault the nemesis injected. A crash report
//! is a sweep reclaim in the audit log (`swept`: job, token, holder, expiry).
//! Its lease was last granted or renewed at store time `G` and expired at
//! `E`; it is explained by an injected fault whose active time meets
//! `[G, E]` (give or take [`MATCH_SLACK_MS`]) and that touched:
//!
//! - the holder's own process: a kill of any kind (from then on: the
//!   identity never comes back), a pause (while stopped), a backend
//!   termination. The holder is a `Worker`; its process is the one whose
//!   side-effect log lists it, so a fault on a process explains the
//!   reclaims of every Worker inside it and of no other;
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
//! A pause of the holder's own process also explains a lease granted up to
//! [`Evidence::aftermath_ms`] after it ended (found by the first
//! production-shape runs): a claim a Worker queued in its process's
//! `BatchMerger` before the pause is abandoned by that Worker at resume
//! (its request timer is overdue), but stays queued, and the first merged
//! batch after the resume, run by another Worker, still applies it. The
//! store grants a lease nobody runs; it expires and is swept. Each merged
//! batch ends within a request timeout (or its caller drops it), so twice
//! the request timeout bounds when such a claim can land.
//!
//! A PostgreSQL restart explains a lease granted up to the same aftermath
//! after the server is back (found by the long production-shape run on
//! the fix of findings 2 and 3): a claim sent while the server was down
//! waits for a connection, runs once the restart ends, and its caller's
//! request timeout can run out while its `COMMIT` is on the wire. The
//! caller drops the transaction and never learns that the store granted
//! the lease; it expires and is swept. Such a claim was sent before the
//! restart ended and its caller waits at most twice the request timeout,
//! so the same bound holds. A restart's aftermath is store-wide, like the
//! restart.
//!
//! A terminated LISTEN connection (`kill-listener`) explains nothing: it
//! carries no lease, so a reclaim it caused would be a finding.
//!
//! Store times and fault times are both the host's wall clock (PostgreSQL
//! and the SQLite store clock read it on the same host).

use super::{CheckId, CheckStats, Evidence, Violation, MATCH_SLACK_MS};
use crate::config::{FaultKind, StoreTarget};
use crate::fleet::Incarnation;
use crate::nemesis::Injected;
use leasehold_core::{EventKind, JobId, StoreTime, Token};
use std::collections::BTreeMap;

/// Runs the check.
pub fn check(e: &Evidence<'_>, stats: &mut CheckStats) -> Vec<Violation> {
    let pid_of = process_of_worker(e.incarnations);
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
                let explained_with = |aftermath_ms| {
                    e.faults
                        .iter()
                        .any(|f| explains(f, holder, pid, sqlite, aftermath_ms, window))
                };
                // Most reports are explained by a fault still under way: the
                // aftermath is looked at only when none is.
                let during = explained_with(0);
                if during || explained_with(e.aftermath_ms) {
                    stats.crash_reports_matched += 1;
                    if !during {
                        stats.crash_reports_by_aftermath += 1;
                    }
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

/// Every Worker identity (and process identity) to its process's pid.
fn process_of_worker(incarnations: &[Incarnation]) -> BTreeMap<&str, u32> {
    let mut m = BTreeMap::new();
    for i in incarnations {
        if let Some(process) = i.worker.as_deref() {
            m.insert(process, i.pid);
        }
        for w in &i.workers {
            m.insert(w.as_str(), i.pid);
        }
    }
    m
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
    aftermath_ms: i64,
    window: (i64, i64),
) -> bool {
    let on_holder = f.worker.as_deref() == Some(holder) || (pid.is_some() && f.pid == pid);
    let meets = |from: i64, to: i64| from <= window.1 && to >= window.0;
    let instant = (f.from_ms, f.from_ms + MATCH_SLACK_MS);
    match f.kind {
        FaultKind::Kill
        | FaultKind::KillWriter
        | FaultKind::KillMerged
        | FaultKind::KillWriterQueued => {
            (on_holder && f.from_ms <= window.1) || (sqlite && meets(instant.0, instant.1))
        }
        FaultKind::KillListener => false,
        FaultKind::Pause if on_holder => meets(f.from_ms, f.to_ms.max(f.from_ms) + aftermath_ms),
        FaultKind::Pause => meets(f.from_ms, f.to_ms.max(f.from_ms)),
        FaultKind::TerminateBackend => on_holder && meets(instant.0, instant.1),
        FaultKind::Restart => meets(f.from_ms, f.to_ms.max(f.from_ms) + aftermath_ms),
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
            landed: None,
            recovered: None,
        }
    }

    #[test]
    fn a_fault_explains_only_its_own_holder_and_its_own_time() {
        let w = (1_000, 4_000);
        let kill = fault(FaultKind::Kill, "a", 3_000, 3_000);
        assert!(explains(&kill, "a", None, false, 0, w));
        assert!(
            !explains(&kill, "b", Some(11), false, 0, w),
            "another worker"
        );
        assert!(
            explains(&kill, "b", Some(11), true, 0, w),
            "on SQLite a kill is store-wide"
        );
        let late = fault(FaultKind::Kill, "a", 9_000, 9_000);
        assert!(
            !explains(&late, "a", None, false, 0, w),
            "killed after the expiry"
        );
        let pause = fault(FaultKind::Pause, "a", 5_000, 9_000);
        assert!(
            !explains(&pause, "a", None, false, 0, w),
            "paused after the expiry"
        );
        let pause = fault(FaultKind::Pause, "a", 3_500, 9_000);
        assert!(explains(&pause, "a", None, false, 0, w));
        assert!(
            explains(&pause, "b", Some(11), false, 0, w),
            "a stopped process may hold locks another holder waits for"
        );
        assert!(explains(&pause, "b", Some(11), true, 0, w));
        let term = fault(FaultKind::TerminateBackend, "a", 3_000, 3_000);
        assert!(explains(&term, "a", None, false, 0, w));
        assert!(
            !explains(&term, "b", Some(11), false, 0, w),
            "only the holder's backends"
        );
        let restart = fault(FaultKind::Restart, "", 0, 1_500);
        assert!(explains(&restart, "z", None, false, 0, w));
        let old = fault(FaultKind::Restart, "", 0, 500);
        assert!(!explains(&old, "z", None, false, 0, w));
        assert!(
            explains(&old, "z", None, false, 600, w),
            "a claim sent while the server was down lands after it is back"
        );
        assert!(
            !explains(&old, "z", None, false, 400, w),
            "but no later than the aftermath"
        );
        let before = fault(FaultKind::Pause, "a", 200, 900);
        assert!(!explains(&before, "a", None, false, 0, w));
        assert!(
            explains(&before, "a", None, false, 2_000, w),
            "a claim queued before the holder's pause lands after it"
        );
        assert!(
            !explains(&before, "b", Some(11), false, 2_000, w),
            "only in the paused process's own merger"
        );
        let listener = fault(FaultKind::KillListener, "a", 3_000, 3_000);
        assert!(
            !explains(&listener, "a", Some(10), false, 0, w),
            "a LISTEN connection carries no lease"
        );
    }

    fn event(job: u64, at: i64, kind: EventKind) -> leasehold_core::Event {
        leasehold_core::Event {
            job: JobId(job),
            token: Token(1),
            worker: Some(leasehold_core::WorkerId::new("p.w0")),
            from: None,
            to: leasehold_core::JobState::Running,
            at: StoreTime(at),
            version: 2,
            kind,
        }
    }

    /// A lease granted after a restart ended and swept later is explained
    /// only within the aftermath, and counted as such; one granted during
    /// the restart is explained by the restart itself.
    #[test]
    fn a_restart_explains_a_lease_granted_in_its_aftermath_and_counts_it() {
        let claimed = |job, at| {
            event(
                job,
                at,
                EventKind::Claimed {
                    attempt: 1,
                    expires_at: StoreTime(at + 3_000),
                },
            )
        };
        let swept = |job, expired: i64| {
            event(
                job,
                expired + 500,
                EventKind::Swept {
                    expired_at: StoreTime(expired),
                    attempt: 1,
                },
            )
        };
        let events = [
            claimed(1, 3_000),
            swept(1, 6_000),
            claimed(2, 5_000),
            swept(2, 8_000),
        ];
        let mut restart = fault(FaultKind::Restart, "", 1_000, 4_000);
        restart.pid = None;
        restart.worker = None;
        let faults = [restart];
        let expected = BTreeMap::new();
        let run = |aftermath_ms| {
            let e = Evidence {
                store: &StoreTarget::Postgres {
                    url: String::new(),
                    control: None,
                },
                expected: &expected,
                rows: &[],
                events: &events,
                logs: &[],
                incarnations: &[],
                faults: &faults,
                process_problems: &[],
                aftermath_ms,
            };
            let mut stats = CheckStats::default();
            (check(&e, &mut stats), stats)
        };
        let (v, stats) = run(2_000);
        assert!(v.is_empty(), "{v:?}");
        assert_eq!(
            (
                stats.crash_reports,
                stats.crash_reports_matched,
                stats.crash_reports_by_aftermath
            ),
            (2, 2, 1)
        );
        let (v, stats) = run(0);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].job, Some(JobId(2)), "{v:?}");
        assert_eq!(stats.crash_reports_matched, 1);
    }

    fn incarnation(pid: u32, process: &str, workers: &[&str]) -> Incarnation {
        Incarnation {
            slot: 0,
            n: 0,
            pid,
            log: "l".into(),
            inflight: "i".into(),
            stderr: "e".into(),
            worker: Some(process.into()),
            workers: workers.iter().map(|w| w.to_string()).collect(),
            started_ms: 0,
            end: None,
        }
    }

    /// A kill of a process explains the reclaims of each Worker inside it,
    /// and of no Worker of another process: the holder named by the audit
    /// log is a Worker, the fault names the process.
    #[test]
    fn a_kill_explains_the_reclaims_of_every_worker_inside_its_process_only() {
        let incs = [
            incarnation(10, "p", &["p.w0", "p.w1"]),
            incarnation(11, "q", &["q.w0", "q.w1"]),
        ];
        let pids = process_of_worker(&incs);
        assert_eq!(pids.get("p.w1"), Some(&10));
        assert_eq!(pids.get("q.w0"), Some(&11));
        let w = (1_000, 4_000);
        for kind in [
            FaultKind::KillMerged,
            FaultKind::Kill,
            FaultKind::TerminateBackend,
        ] {
            let mut f = fault(kind, "p", 3_000, 3_000);
            f.pid = Some(10);
            for holder in ["p.w0", "p.w1"] {
                assert!(explains(&f, holder, pids.get(holder).copied(), false, 0, w));
            }
            for holder in ["q.w0", "q.w1"] {
                assert!(
                    !explains(&f, holder, pids.get(holder).copied(), false, 0, w),
                    "{kind:?} of p must not explain {holder}"
                );
            }
        }
    }
}
