//! release(job, token, outcome): guard "`running` and token matches";
//! effect by outcome:
//! - `Succeeded(result)` → `succeeded`, result stored in the same step;
//! - `Failed{error, retryable}` → `pending` with `run_at = now + backoff`, or
//!   `dead` when attempts are spent or the error is not retryable;
//! - `Returned` → `pending`, attempt refunded;
//! - `Cancelled` → `cancelled`.
//!
//! A job with `cancel_requested` that fails or is returned goes to
//! `cancelled` rather than back to `pending`: a cancelled job is never
//! retried. A success after a cancel request commits `succeeded`: the work
//! happened.
//!
//! Idempotence: the row remembers the last accepted release as a
//! [`ReleaseMark`] (token and outcome digest). Repeating the same release
//! answers `Committed` and changes nothing; the same token with another
//! outcome answers `Lost`.

use super::{finish, next_version, Applied};
use crate::error::InputError;
use crate::history::EventKind;
use crate::ids::Token;
use crate::job::{JobRecord, JobState, Outcome, ReleaseMark};
use crate::policy::Policy;
use crate::time::StoreTime;

/// What a release does.
// Returned once and consumed at once: boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReleasePlan {
    /// Persist this row and answer `Committed`.
    Apply(Applied),
    /// The same release already committed: answer `Committed`, change nothing.
    Repeat,
    /// Answer `Lost`; nothing changes.
    Lost,
}

/// Checks an outcome against the limits and normalizes it (an over-long
/// error message is truncated at a character boundary, after any NUL in it
/// became U+FFFD; an oversized result is rejected because truncating it
/// would lose data).
pub fn validate_outcome(
    record_id: crate::ids::JobId,
    outcome: &Outcome,
    policy: &Policy,
) -> Result<Outcome, InputError> {
    let l = &policy.limits;
    match outcome {
        Outcome::Succeeded(r) if r.len() > l.max_result_bytes => Err(InputError::ResultTooLarge {
            job: record_id,
            size: r.len(),
            cap: l.max_result_bytes,
        }),
        Outcome::Failed { error, retryable }
            if error.len() > l.max_error_bytes || error.contains('\0') =>
        {
            // A NUL cannot be stored in every adapter's text column (it
            // would turn a definite failure into an unknown outcome and a
            // false crash report): it becomes U+FFFD before truncation.
            let error = error.replace('\0', "\u{FFFD}");
            let mut end = l.max_error_bytes.min(error.len());
            while !error.is_char_boundary(end) {
                end -= 1;
            }
            Ok(Outcome::Failed {
                error: error[..end].to_string(),
                retryable: *retryable,
            })
        }
        o => Ok(o.clone()),
    }
}

/// Releases lease `token` on `record` with `outcome` at `now`.
pub fn release(
    record: &JobRecord,
    token: Token,
    outcome: &Outcome,
    policy: &Policy,
    now: StoreTime,
) -> Result<ReleasePlan, InputError> {
    let outcome = validate_outcome(record.id, outcome, policy)?;
    if token > record.token || token == Token::NONE {
        return Err(InputError::UnknownToken {
            job: record.id,
            token,
        });
    }
    let mark = ReleaseMark {
        token,
        digest: outcome.digest(),
    };
    if record.released == Some(mark) {
        return Ok(ReleasePlan::Repeat);
    }
    if record.state != JobState::Running || record.token != token {
        return Ok(ReleasePlan::Lost);
    }
    let mut new = next_version(record, now);
    new.holder = None;
    new.expires_at = None;
    new.released = Some(mark);
    let mut retry_at = None;
    match &outcome {
        Outcome::Succeeded(result) => {
            new.state = JobState::Succeeded;
            new.result = Some(result.clone());
            new.error = None;
        }
        Outcome::Failed { error, retryable } => {
            new.error = Some(error.clone());
            new.state = if record.cancel_requested {
                JobState::Cancelled
            } else if !retryable || record.attempt >= record.max_attempts {
                JobState::Dead
            } else {
                let delay = policy.backoff.delay(record.id, token, record.attempt);
                let at = now.plus(delay);
                new.run_at = at;
                retry_at = Some(at);
                JobState::Pending
            };
        }
        Outcome::Returned => {
            new.state = if record.cancel_requested {
                JobState::Cancelled
            } else {
                debug_assert!(record.attempt >= 1, "a running job has started an attempt");
                new.attempt = record.attempt - 1;
                new.run_at = now;
                retry_at = Some(now);
                JobState::Pending
            };
        }
        Outcome::Cancelled => new.state = JobState::Cancelled,
    }
    new.cancel_requested = false;
    let worker = record.holder.clone();
    let kind = EventKind::Released {
        outcome,
        run_at: retry_at,
    };
    Ok(ReleasePlan::Apply(finish(Some(record), new, worker, kind)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Backoff, Limits};
    use crate::time::Millis;
    use crate::transition::fixtures::running;

    fn apply(r: &JobRecord, t: u64, o: Outcome, now: i64) -> JobRecord {
        match release(r, Token(t), &o, &Policy::default(), StoreTime(now)).unwrap() {
            ReleasePlan::Apply(a) => a.record,
            other => panic!("expected apply, got {other:?}"),
        }
    }

    /// Job 1, running under token 1 until 100, released `Succeeded(result)`
    /// by its holder at store time `now`: the row after.
    fn succeed(result: &[u8], now: i64) -> JobRecord {
        let o = Outcome::Succeeded(result.to_vec());
        apply(&running(1, 1, 100), 1, o, now)
    }

    fn failed(retryable: bool) -> Outcome {
        Outcome::Failed {
            error: "boom".into(),
            retryable,
        }
    }

    #[test]
    fn a_nul_in_an_error_becomes_a_replacement_character_within_the_cap() {
        let p = Policy::default();
        let o = Outcome::Failed {
            error: "a\0b".into(),
            retryable: true,
        };
        let stored = validate_outcome(crate::ids::JobId(1), &o, &p).unwrap();
        assert_eq!(
            stored,
            Outcome::Failed {
                error: "a\u{FFFD}b".into(),
                retryable: true
            }
        );
        let mut tight = Policy::default();
        tight.limits.max_error_bytes = 3;
        let stored = validate_outcome(crate::ids::JobId(1), &o, &tight).unwrap();
        assert_eq!(
            stored,
            Outcome::Failed {
                error: "a".into(),
                retryable: true
            },
            "U+FFFD is 3 bytes: cut at the boundary before it"
        );
    }

    #[test]
    fn success_stores_result_with_terminal_state() {
        let r = succeed(b"ok", 50);
        assert_eq!(r.state, JobState::Succeeded);
        assert_eq!(r.result, Some(b"ok".to_vec()));
        assert_eq!(r.holder, None);
        assert_eq!(r.expires_at, None);
    }

    #[test]
    fn retryable_failure_with_budget_goes_pending_after_backoff() {
        let r = apply(&running(1, 1, 100), 1, failed(true), 50);
        assert_eq!(r.state, JobState::Pending);
        let delay = Policy::default().backoff.delay(r.id, Token(1), 1);
        assert_eq!(r.run_at, StoreTime(50).plus(delay));
        assert!(r.run_at > StoreTime(50));
        assert_eq!(r.error.as_deref(), Some("boom"));
        assert_eq!(r.attempt, 1, "failure keeps the attempt counted");
    }

    #[test]
    fn failure_on_last_attempt_is_dead() {
        let r = apply(&running(3, 3, 100), 3, failed(true), 50);
        assert_eq!(r.state, JobState::Dead);
    }

    #[test]
    fn non_retryable_failure_is_dead_at_once() {
        let r = apply(&running(1, 1, 100), 1, failed(false), 50);
        assert_eq!(r.state, JobState::Dead);
    }

    #[test]
    fn returned_refunds_the_attempt() {
        let r = apply(&running(1, 1, 100), 1, Outcome::Returned, 50);
        assert_eq!(r.state, JobState::Pending);
        assert_eq!(r.attempt, 0);
        assert_eq!(r.run_at, StoreTime(50));
    }

    #[test]
    fn cancelled_ack_is_cancelled() {
        let r = apply(&running(1, 1, 100), 1, Outcome::Cancelled, 50);
        assert_eq!(r.state, JobState::Cancelled);
    }

    #[test]
    fn cancel_requested_failure_or_return_is_cancelled_not_retried() {
        let mut run = running(1, 1, 100);
        run.cancel_requested = true;
        assert_eq!(apply(&run, 1, failed(true), 50).state, JobState::Cancelled);
        assert_eq!(
            apply(&run, 1, Outcome::Returned, 50).state,
            JobState::Cancelled
        );
    }

    #[test]
    fn success_after_cancel_request_commits_succeeded() {
        let mut run = running(1, 1, 100);
        run.cancel_requested = true;
        let r = apply(&run, 1, Outcome::Succeeded(vec![7]), 50);
        assert_eq!(r.state, JobState::Succeeded);
        assert!(!r.cancel_requested);
    }

    #[test]
    fn stale_token_is_lost() {
        let plan = release(
            &running(2, 2, 100),
            Token(1),
            &failed(true),
            &Policy::default(),
            StoreTime(0),
        );
        assert_eq!(plan.unwrap(), ReleasePlan::Lost);
    }

    #[test]
    fn release_after_expiry_before_sweep_commits() {
        let r = apply(&running(1, 1, 100), 1, Outcome::Succeeded(vec![]), 10_000);
        assert_eq!(r.state, JobState::Succeeded);
    }

    #[test]
    fn repeated_release_is_committed_and_changes_nothing() {
        let o = Outcome::Succeeded(b"r".to_vec());
        let done = apply(&running(1, 1, 100), 1, o.clone(), 50);
        let again = release(&done, Token(1), &o, &Policy::default(), StoreTime(60)).unwrap();
        assert_eq!(again, ReleasePlan::Repeat);
    }

    #[test]
    fn repeated_retry_release_is_committed_even_after_reclaim() {
        let o = failed(true);
        let pending = apply(&running(1, 1, 100), 1, o.clone(), 50);
        assert_eq!(
            release(&pending, Token(1), &o, &Policy::default(), StoreTime(60)).unwrap(),
            ReleasePlan::Repeat
        );
    }

    #[test]
    fn same_token_other_outcome_after_commit_is_lost() {
        let done = succeed(b"r", 50);
        let other = Outcome::Succeeded(b"different".to_vec());
        assert_eq!(
            release(&done, Token(1), &other, &Policy::default(), StoreTime(60)).unwrap(),
            ReleasePlan::Lost
        );
    }

    #[test]
    fn oversized_result_is_rejected_and_long_error_truncated() {
        let policy = Policy::builder()
            .limits(Limits {
                max_result_bytes: 4,
                max_error_bytes: 3,
                ..Limits::default()
            })
            .build()
            .unwrap();
        let r = running(1, 1, 100);
        let big = Outcome::Succeeded(vec![0; 5]);
        assert!(matches!(
            release(&r, Token(1), &big, &policy, StoreTime(0)),
            Err(InputError::ResultTooLarge {
                size: 5,
                cap: 4,
                ..
            })
        ));
        let long = Outcome::Failed {
            error: "éééé".into(),
            retryable: false,
        };
        let ReleasePlan::Apply(a) = release(&r, Token(1), &long, &policy, StoreTime(0)).unwrap()
        else {
            panic!()
        };
        assert_eq!(a.record.error.as_deref(), Some("é"));
    }

    #[test]
    fn unknown_token_is_bad_input() {
        let r = running(1, 1, 100);
        assert!(matches!(
            release(
                &r,
                Token(5),
                &Outcome::Returned,
                &Policy::default(),
                StoreTime(0)
            ),
            Err(InputError::UnknownToken { .. })
        ));
    }

    #[test]
    fn backoff_grows_exponentially_within_cap_and_jitter() {
        let b = Backoff {
            base: Millis(1000),
            cap: Millis(10_000),
            jitter_permille: 100,
            seed: 3,
        };
        for attempt in 1..20u32 {
            let raw = (1000u64 << (attempt - 1).min(40)).min(10_000);
            let d = b
                .delay(crate::ids::JobId(1), Token(u64::from(attempt)), attempt)
                .0;
            assert!(d <= 10_000);
            assert!(
                d >= raw - raw / 10 && d <= raw + raw / 10,
                "attempt {attempt}: {d} vs {raw}"
            );
        }
        let same = b.delay(crate::ids::JobId(1), Token(1), 1);
        assert_eq!(
            same,
            b.delay(crate::ids::JobId(1), Token(1), 1),
            "jitter is deterministic"
        );
    }
}
