//! renew(job, token, L): guard "`running` and token matches"; effect
//! "`expires_at = now+L`"; answer `Renewed{expires_at, cancel_requested}` or
//! `Lost`.
//!
//! A renew after expiry but before a sweep is allowed: the lease was never
//! reassigned. After a sweep or a new claim the token no longer matches (or
//! the job is not running) and the answer is `Lost`.

use super::{finish, next_version, Applied};
use crate::error::InputError;
use crate::history::EventKind;
use crate::ids::Token;
use crate::job::{JobRecord, JobState, Renewal};
use crate::policy::Policy;
use crate::time::{Millis, StoreTime};

/// What a renew does.
// Returned once and consumed at once: boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RenewPlan {
    /// Persist this row and answer `Renewed`.
    Renewed(Applied, Renewal),
    /// Answer `Lost`; nothing changes.
    Lost,
}

/// Renews the lease `token` on `record` for `lease` from `now`.
pub fn renew(
    record: &JobRecord,
    token: Token,
    lease: Millis,
    policy: &Policy,
    now: StoreTime,
) -> Result<RenewPlan, InputError> {
    policy.limits.check_lease(lease)?;
    if token > record.token {
        return Err(InputError::UnknownToken {
            job: record.id,
            token,
        });
    }
    if record.state != JobState::Running || record.token != token {
        return Ok(RenewPlan::Lost);
    }
    let mut new = next_version(record, now);
    let expires_at = now.plus(lease);
    new.expires_at = Some(expires_at);
    let answer = Renewal::Renewed {
        expires_at,
        cancel_requested: new.cancel_requested,
    };
    let worker = new.holder.clone();
    let applied = finish(Some(record), new, worker, EventKind::Renewed { expires_at });
    Ok(RenewPlan::Renewed(applied, answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transition::fixtures::{pending, running};

    /// Token 2 (the holder of `running(2, ..)`) asks for 1000 ms more at
    /// store time `now`.
    fn renew_by_holder(r: &JobRecord, now: i64) -> RenewPlan {
        renew(
            r,
            Token(2),
            Millis(1000),
            &Policy::default(),
            StoreTime(now),
        )
        .unwrap()
    }

    #[test]
    fn renew_by_holder_extends_from_now() {
        let r = running(2, 1, 5000);
        let RenewPlan::Renewed(a, ans) = renew_by_holder(&r, 4000) else {
            panic!("expected renewed")
        };
        assert_eq!(a.record.expires_at, Some(StoreTime(5000)));
        assert_eq!(
            ans,
            Renewal::Renewed {
                expires_at: StoreTime(5000),
                cancel_requested: false
            }
        );
        assert_eq!(a.record.token, Token(2));
    }

    #[test]
    fn renew_after_expiry_before_sweep_is_allowed() {
        let r = running(2, 1, 5000);
        let plan = renew_by_holder(&r, 9000);
        assert!(matches!(plan, RenewPlan::Renewed(..)));
    }

    #[test]
    fn renew_reports_cancel_request() {
        let mut r = running(2, 1, 5000);
        r.cancel_requested = true;
        let RenewPlan::Renewed(_, ans) = renew_by_holder(&r, 4000) else {
            panic!()
        };
        assert!(matches!(
            ans,
            Renewal::Renewed {
                cancel_requested: true,
                ..
            }
        ));
    }

    #[test]
    fn renew_with_stale_token_is_lost() {
        let r = running(3, 2, 5000);
        let plan = renew_by_holder(&r, 0);
        assert_eq!(plan, RenewPlan::Lost);
    }

    #[test]
    fn renew_after_sweep_is_lost() {
        let mut r = pending();
        r.token = Token(2);
        r.attempt = 1;
        let plan = renew_by_holder(&r, 0);
        assert_eq!(plan, RenewPlan::Lost);
    }

    #[test]
    fn renew_with_future_token_or_zero_lease_is_bad_input() {
        let r = running(2, 1, 5000);
        assert!(matches!(
            renew(&r, Token(9), Millis(1), &Policy::default(), StoreTime(0)),
            Err(InputError::UnknownToken { .. })
        ));
        assert!(matches!(
            renew(&r, Token(2), Millis(0), &Policy::default(), StoreTime(0)),
            Err(InputError::BadDuration { .. })
        ));
    }
}
