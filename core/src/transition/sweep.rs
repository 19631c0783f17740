//! sweep(limit): guard "`running` and `expires_at ≤ now`"; effect "`pending`
//! (or `dead` if attempts are spent; `cancelled` if cancel was requested)
//! with a crash report naming job, token, holder"; answer the reclaimed
//! leases.
//!
//! The guard is re-checked here on the row as loaded at write time, so a
//! lease renewed between the sweeper's scan and its write is never taken.

use super::{finish, next_version, Applied};
use crate::error::Refusal;
use crate::history::{CrashReport, EventKind};
use crate::job::{JobRecord, JobState};
use crate::time::StoreTime;

/// Reclaims `record` if its lease has expired at `now`.
pub fn sweep(record: &JobRecord, now: StoreTime) -> Result<(Applied, CrashReport), Refusal> {
    if record.state != JobState::Running {
        return Err(Refusal::WrongState(record.state));
    }
    let (Some(expired_at), Some(holder)) = (record.expires_at, record.holder.clone()) else {
        debug_assert!(false, "running rows have a holder and an expiry");
        return Err(Refusal::WrongState(record.state));
    };
    if expired_at > now {
        return Err(Refusal::NotExpired);
    }
    let mut new = next_version(record, now);
    new.holder = None;
    new.expires_at = None;
    new.state = if record.cancel_requested {
        JobState::Cancelled
    } else if record.attempt >= record.max_attempts {
        new.error = Some(format!(
            "lease of {holder} expired on attempt {}",
            record.attempt
        ));
        JobState::Dead
    } else {
        new.run_at = now;
        JobState::Pending
    };
    new.cancel_requested = false;
    let report = CrashReport {
        job: record.id,
        token: record.token,
        holder: holder.clone(),
        expired_at,
        swept_at: now,
        to: new.state,
    };
    let kind = EventKind::Swept {
        expired_at,
        attempt: record.attempt,
    };
    Ok((finish(Some(record), new, Some(holder), kind), report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Token;
    use crate::transition::fixtures::{pending, running};

    #[test]
    fn expired_lease_goes_back_to_pending_with_a_crash_report() {
        let (a, rep) = sweep(&running(1, 1, 5000), StoreTime(5000)).unwrap();
        assert_eq!(a.record.state, JobState::Pending);
        assert_eq!(a.record.run_at, StoreTime(5000));
        assert_eq!(a.record.holder, None);
        assert_eq!(
            a.record.token,
            Token(1),
            "sweep keeps the token; the next claim bumps it"
        );
        assert_eq!(rep.token, Token(1));
        assert_eq!(rep.holder.as_str(), "w1");
        assert_eq!(rep.to, JobState::Pending);
    }

    #[test]
    fn unexpired_lease_is_not_swept() {
        assert_eq!(
            sweep(&running(1, 1, 5000), StoreTime(4999)).unwrap_err(),
            Refusal::NotExpired
        );
    }

    #[test]
    fn non_running_job_is_not_swept() {
        assert_eq!(
            sweep(&pending(), StoreTime(99_999)).unwrap_err(),
            Refusal::WrongState(JobState::Pending)
        );
    }

    #[test]
    fn expired_last_attempt_is_dead() {
        let (a, rep) = sweep(&running(3, 3, 5000), StoreTime(6000)).unwrap();
        assert_eq!(a.record.state, JobState::Dead);
        assert_eq!(rep.to, JobState::Dead);
        assert!(a.record.error.is_some());
    }

    #[test]
    fn expired_cancel_requested_job_is_cancelled() {
        let mut r = running(1, 1, 5000);
        r.cancel_requested = true;
        let (a, _) = sweep(&r, StoreTime(6000)).unwrap();
        assert_eq!(a.record.state, JobState::Cancelled);
        assert!(!a.record.cancel_requested);
    }
}
