//! cancel(job): guard "any"; effect "`pending` → `cancelled`; `running` →
//! `cancel_requested`; terminal → unchanged"; answer `Cancelled`,
//! `Requested`, or `AlreadyTerminal(state)`.
//!
//! A late cancel never overwrites a terminal state: a job that `succeeded`
//! stays `succeeded`.

use super::{finish, next_version, Applied};
use crate::history::EventKind;
use crate::job::{CancelOutcome, JobRecord, JobState};
use crate::time::StoreTime;

/// Cancels `record`: the row to persist (if any) and the answer.
pub fn cancel(record: &JobRecord, now: StoreTime) -> (Option<Applied>, CancelOutcome) {
    match record.state {
        JobState::Pending => {
            let mut new = next_version(record, now);
            new.state = JobState::Cancelled;
            let a = finish(Some(record), new, None, EventKind::Cancelled);
            (Some(a), CancelOutcome::Cancelled)
        }
        JobState::Running if record.cancel_requested => (None, CancelOutcome::Requested),
        JobState::Running => {
            let mut new = next_version(record, now);
            new.cancel_requested = true;
            let worker = new.holder.clone();
            let a = finish(Some(record), new, worker, EventKind::CancelRequested);
            (Some(a), CancelOutcome::Requested)
        }
        s => {
            debug_assert!(s.is_terminal());
            (None, CancelOutcome::AlreadyTerminal(s))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transition::fixtures::{pending, running};

    #[test]
    fn pending_job_is_cancelled() {
        let (a, ans) = cancel(&pending(), StoreTime(5));
        assert_eq!(ans, CancelOutcome::Cancelled);
        assert_eq!(a.unwrap().record.state, JobState::Cancelled);
    }

    #[test]
    fn running_job_gets_cancel_requested_and_keeps_running() {
        let (a, ans) = cancel(&running(1, 1, 100), StoreTime(5));
        assert_eq!(ans, CancelOutcome::Requested);
        let a = a.unwrap();
        assert_eq!(a.record.state, JobState::Running);
        assert!(a.record.cancel_requested);
    }

    #[test]
    fn repeated_cancel_of_running_job_changes_nothing() {
        let mut r = running(1, 1, 100);
        r.cancel_requested = true;
        let (a, ans) = cancel(&r, StoreTime(5));
        assert!(a.is_none());
        assert_eq!(ans, CancelOutcome::Requested);
    }

    #[test]
    fn late_cancel_keeps_terminal_state() {
        for s in [JobState::Succeeded, JobState::Dead, JobState::Cancelled] {
            let mut r = pending();
            r.state = s;
            if s == JobState::Succeeded {
                r.result = Some(vec![1]);
            }
            let (a, ans) = cancel(&r, StoreTime(5));
            assert!(a.is_none());
            assert_eq!(ans, CancelOutcome::AlreadyTerminal(s));
        }
    }
}
