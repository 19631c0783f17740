//! retry(job): guard "`dead`"; effect "`dead` → `pending` with a fresh
//! attempt budget (`attempt = 0`, `run_at = now`)"; answer `Retried` or
//! `NotDead(state)`.
//!
//! An operator's command, never the worker's: a job that died (its budget
//! spent, or a failure its handler called permanent) is run again once the
//! cause is fixed. Only `dead` is accepted: a `succeeded` job's result must
//! never be overwritten (I4), a `cancelled` one must never run again (I7),
//! and a `pending` or `running` one still has its budget. The token is
//! kept (tokens never decrease; the next claim bumps it), so a stale
//! holder's late release still answers as before. The last error stays on
//! the row as a record of why it died.

use super::{finish, Applied};
use crate::history::EventKind;
use crate::job::{JobRecord, JobState, RetryOutcome};
use crate::time::StoreTime;

/// Retries `record` if it is `dead`: the row to persist (if any) and the
/// answer.
pub fn retry(record: &JobRecord, now: StoreTime) -> (Option<Applied>, RetryOutcome) {
    if record.state != JobState::Dead {
        return (None, RetryOutcome::NotDead(record.state));
    }
    let mut new = record.clone();
    // Not `next_version`, which refuses terminal rows (a worker's
    // transitions never change one): this is the one way out of `dead`.
    new.version = record.version + 1;
    new.updated_at = now;
    new.state = JobState::Pending;
    new.attempt = 0;
    new.run_at = now;
    let kind = EventKind::Retried {
        attempts_spent: record.attempt,
        run_at: now,
    };
    (
        Some(finish(Some(record), new, None, kind)),
        RetryOutcome::Retried,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Token;
    use crate::transition::fixtures::pending;

    fn dead() -> JobRecord {
        let mut r = pending();
        r.state = JobState::Dead;
        r.attempt = 3;
        r.token = Token(3);
        r.error = Some("boom".into());
        r.version = 7;
        r
    }

    #[test]
    fn a_dead_job_is_pending_again_with_a_fresh_budget() {
        let (a, ans) = retry(&dead(), StoreTime(9_000));
        assert_eq!(ans, RetryOutcome::Retried);
        let a = a.expect("a dead job changes");
        assert_eq!(a.record.state, JobState::Pending);
        assert_eq!(a.record.attempt, 0);
        assert_eq!(a.record.max_attempts, 3, "the budget itself is kept");
        assert_eq!(a.record.run_at, StoreTime(9_000));
        assert_eq!(a.record.token, Token(3), "the next claim bumps the token");
        assert_eq!(a.record.version, 8);
        assert_eq!(a.record.updated_at, StoreTime(9_000));
        assert_eq!(a.record.error.as_deref(), Some("boom"));
        assert_eq!(a.event.from, Some(JobState::Dead));
        assert_eq!(a.event.to, JobState::Pending);
        assert_eq!(a.event.worker, None);
        assert_eq!(
            a.event.kind,
            EventKind::Retried {
                attempts_spent: 3,
                run_at: StoreTime(9_000)
            }
        );
        assert!(a.record.check_invariants().is_ok());
    }

    #[test]
    fn every_other_state_is_refused_and_unchanged() {
        for s in [
            JobState::Pending,
            JobState::Running,
            JobState::Succeeded,
            JobState::Cancelled,
        ] {
            let mut r = crate::transition::fixtures::running(1, 1, 100);
            r.state = s;
            if s != JobState::Running {
                r.holder = None;
                r.expires_at = None;
            }
            if s == JobState::Succeeded {
                r.result = Some(vec![1]);
            }
            let (a, ans) = retry(&r, StoreTime(5));
            assert!(a.is_none(), "{s}: nothing to persist");
            assert_eq!(ans, RetryOutcome::NotDead(s));
        }
    }
}
