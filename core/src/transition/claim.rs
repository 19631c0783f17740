//! claim(worker, queue, L, n): guard "`pending`, `run_at ≤ now`, queue
//! parallelism not exceeded"; effect "`running`, `token+1`, `attempt+1`,
//! `holder`, `expires_at = now+L`"; answer up to n leases.

use super::{finish, next_version, Applied};
use crate::error::{InputError, Refusal};
use crate::history::EventKind;
use crate::ids::WorkerId;
use crate::job::{JobRecord, JobState, Lease};
use crate::policy::Policy;
use crate::time::{Millis, StoreTime};

/// Checks a claim request's queue, lease and batch size.
pub fn validate_claim(
    queue: &str,
    lease: Millis,
    max: u32,
    policy: &Policy,
) -> Result<(), InputError> {
    policy.limits.check_queue(queue)?;
    policy.limits.check_lease(lease)?;
    if max == 0 || max > policy.limits.max_claim_batch {
        return Err(InputError::BadBatch {
            value: max,
            cap: policy.limits.max_claim_batch,
        });
    }
    Ok(())
}

/// How many jobs of `queue` a claim asking for `wanted` may take while
/// `running` of them already run.
pub fn claim_capacity(queue: &str, wanted: u32, running: u32, policy: &Policy) -> u32 {
    match policy.parallelism_of(queue) {
        Some(limit) => wanted.min(limit.saturating_sub(running)),
        None => wanted,
    }
}

/// Claims one candidate row for `worker` with a lease of `lease`.
///
/// The adapter chooses candidates (by priority, then `run_at`, then id) and
/// limits their number with [`claim_capacity`]; this re-checks the guard on
/// the row as loaded.
pub fn claim(
    record: &JobRecord,
    worker: &WorkerId,
    lease: Millis,
    now: StoreTime,
) -> Result<(Applied, Lease), Refusal> {
    if record.state != JobState::Pending {
        return Err(Refusal::WrongState(record.state));
    }
    if record.run_at > now {
        return Err(Refusal::NotYetDue);
    }
    debug_assert!(
        record.attempt < record.max_attempts,
        "a pending job always has budget left"
    );
    let mut new = next_version(record, now);
    new.state = JobState::Running;
    new.token = record.token.next();
    new.attempt = record.attempt + 1;
    new.holder = Some(worker.clone());
    let expires_at = now.plus(lease);
    new.expires_at = Some(expires_at);
    new.cancel_requested = false;
    let granted = Lease {
        job: new.id,
        token: new.token,
        queue: new.queue.clone(),
        payload: new.payload.clone(),
        attempt: new.attempt,
        expires_at,
    };
    let kind = EventKind::Claimed {
        attempt: new.attempt,
        expires_at,
    };
    Ok((
        finish(Some(record), new, Some(worker.clone()), kind),
        granted,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Token;
    use crate::transition::fixtures::{pending, running};

    fn w() -> WorkerId {
        WorkerId::new("w9")
    }

    #[test]
    fn claim_of_due_pending_job_grants_next_token_and_attempt() {
        let (a, lease) = claim(&pending(), &w(), Millis(30_000), StoreTime(2000)).unwrap();
        assert_eq!(a.record.state, JobState::Running);
        assert_eq!(a.record.token, Token(1));
        assert_eq!(a.record.attempt, 1);
        assert_eq!(a.record.holder, Some(w()));
        assert_eq!(a.record.expires_at, Some(StoreTime(32_000)));
        assert_eq!(a.record.version, 2);
        assert_eq!(lease.token, Token(1));
        assert_eq!(lease.payload, b"p".to_vec());
        assert_eq!(a.event.worker, Some(w()));
    }

    #[test]
    fn claim_before_run_at_is_refused() {
        let err = claim(&pending(), &w(), Millis(1), StoreTime(999)).unwrap_err();
        assert_eq!(err, Refusal::NotYetDue);
    }

    #[test]
    fn claim_at_exactly_run_at_is_allowed() {
        assert!(claim(&pending(), &w(), Millis(1), StoreTime(1000)).is_ok());
    }

    #[test]
    fn claim_of_running_job_is_refused() {
        let err = claim(&running(1, 1, 5000), &w(), Millis(1), StoreTime(9000)).unwrap_err();
        assert_eq!(err, Refusal::WrongState(JobState::Running));
    }

    #[test]
    fn token_grows_across_reclaims() {
        let mut r = pending();
        r.token = Token(4);
        r.attempt = 1;
        let (a, _) = claim(&r, &w(), Millis(1), StoreTime(5000)).unwrap();
        assert_eq!(a.record.token, Token(5));
        assert_eq!(a.record.attempt, 2);
    }

    #[test]
    fn parallelism_limits_capacity() {
        let p = Policy::builder().parallelism("q", 3).build().unwrap();
        assert_eq!(claim_capacity("q", 10, 0, &p), 3);
        assert_eq!(claim_capacity("q", 10, 2, &p), 1);
        assert_eq!(claim_capacity("q", 10, 3, &p), 0);
        assert_eq!(claim_capacity("q", 10, 5, &p), 0);
        assert_eq!(claim_capacity("other", 10, 99, &p), 10);
    }

    #[test]
    fn bad_claims_are_rejected() {
        let p = Policy::default();
        assert!(matches!(
            validate_claim("q", Millis(0), 1, &p),
            Err(InputError::BadDuration { .. })
        ));
        assert!(matches!(
            validate_claim("q", Millis(10), 0, &p),
            Err(InputError::BadBatch { .. })
        ));
        assert!(matches!(
            validate_claim("", Millis(10), 1, &p),
            Err(InputError::BadQueueName { .. })
        ));
        assert!(validate_claim("q", Millis(10), 1, &p).is_ok());
    }

    /// The limits are inclusive: a claim of exactly `max_claim_batch`
    /// jobs and a lease of exactly `max_lease` are accepted; one more, or
    /// far more, is refused.
    #[test]
    fn claim_limits_accept_their_cap_and_refuse_anything_above() {
        let p = Policy::default();
        let (cap, max_lease) = (p.limits.max_claim_batch, p.limits.max_lease);
        assert!(validate_claim("q", Millis(1000), cap, &p).is_ok());
        assert!(validate_claim("q", max_lease, 1, &p).is_ok());
        for max in [cap + 1, cap * 2] {
            assert!(matches!(
                validate_claim("q", Millis(1000), max, &p),
                Err(InputError::BadBatch { .. })
            ));
        }
        for lease in [Millis(max_lease.0 + 1), Millis(max_lease.0 * 2)] {
            assert!(matches!(
                validate_claim("q", lease, 1, &p),
                Err(InputError::BadDuration { what: "lease", .. })
            ));
        }
    }
}
