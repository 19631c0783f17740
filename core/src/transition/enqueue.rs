//! enqueue(spec): guard "valid input; idempotency key unused or same spec";
//! effect "new pending job"; answer the job id (the existing id for a
//! repeated key).

use super::{finish, Applied};
use crate::error::InputError;
use crate::history::EventKind;
use crate::ids::{JobId, Token};
use crate::job::{JobRecord, JobState, NewJob};
use crate::policy::Policy;
use crate::time::StoreTime;

/// What an enqueue does.
// Returned once and consumed at once: boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnqueuePlan {
    /// Insert this new row.
    Insert(Applied),
    /// The idempotency key already names this job with the same spec.
    Existing(JobId),
}

/// Checks a job spec against the limits.
pub fn validate_new_job(spec: &NewJob, policy: &Policy) -> Result<(), InputError> {
    let l = &policy.limits;
    l.check_queue(&spec.queue)?;
    if spec.payload.len() > l.max_payload_bytes {
        return Err(InputError::PayloadTooLarge {
            size: spec.payload.len(),
            cap: l.max_payload_bytes,
        });
    }
    if spec.max_attempts == 0 || spec.max_attempts > l.max_attempts_cap {
        return Err(InputError::BadMaxAttempts {
            value: spec.max_attempts,
            cap: l.max_attempts_cap,
        });
    }
    if let Some(key) = &spec.idempotency_key {
        if key.is_empty() {
            return Err(InputError::BadIdempotencyKey { reason: "empty" });
        }
        if key.len() > l.max_key_len {
            return Err(InputError::BadIdempotencyKey { reason: "too long" });
        }
        // PostgreSQL's text cannot hold NUL: refuse it everywhere, so every
        // adapter gives the same typed answer instead of a driver error.
        if key.contains('\0') {
            return Err(InputError::BadIdempotencyKey {
                reason: "contains a NUL character",
            });
        }
        // Schedule fires own this namespace (`schedule::job_key`): a user
        // key inside it could take a plan time's job or collide with it.
        if key.starts_with(crate::schedule::RESERVED_KEY_PREFIX) {
            return Err(InputError::BadIdempotencyKey {
                reason: "starts with the prefix reserved for schedule fires",
            });
        }
    }
    Ok(())
}

/// Enqueues `spec` as job `id`, or answers the job an idempotency key names.
///
/// `existing` is the job already holding `spec.idempotency_key`, if any; the
/// adapter looks it up (and must make the key unique in storage).
pub fn enqueue(
    spec: &NewJob,
    id: JobId,
    existing: Option<&JobRecord>,
    policy: &Policy,
    now: StoreTime,
) -> Result<EnqueuePlan, InputError> {
    validate_new_job(spec, policy)?;
    if let Some(old) = existing {
        debug_assert_eq!(old.idempotency_key, spec.idempotency_key);
        let same = old.queue == spec.queue
            && old.payload == spec.payload
            && old.priority == spec.priority
            && old.max_attempts == spec.max_attempts;
        return if same {
            Ok(EnqueuePlan::Existing(old.id))
        } else {
            Err(InputError::IdempotencyConflict {
                key: spec.idempotency_key.clone().unwrap_or_default(),
                existing: old.id,
            })
        };
    }
    Ok(EnqueuePlan::Insert(insert_row(spec, id, now)))
}

/// The new `pending` row of `spec` as job `id` at `now`, with its event
/// (the spec is already validated).
pub(crate) fn insert_row(spec: &NewJob, id: JobId, now: StoreTime) -> Applied {
    let run_at = now.plus(spec.delay);
    let record = JobRecord {
        id,
        queue: spec.queue.clone(),
        payload: spec.payload.clone(),
        priority: spec.priority,
        run_at,
        state: JobState::Pending,
        attempt: 0,
        max_attempts: spec.max_attempts,
        token: Token::NONE,
        holder: None,
        expires_at: None,
        cancel_requested: false,
        result: None,
        error: None,
        released: None,
        idempotency_key: spec.idempotency_key.clone(),
        version: 1,
        created_at: now,
        updated_at: now,
    };
    let kind = EventKind::Enqueued {
        queue: spec.queue.clone(),
        max_attempts: spec.max_attempts,
        run_at,
    };
    finish(None, record, None, kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Millis;

    fn policy() -> Policy {
        Policy::default()
    }

    /// `spec` enqueued as job 1 at store time 0, with no job under its key.
    fn first_insert(spec: &NewJob) -> Applied {
        let EnqueuePlan::Insert(a) =
            enqueue(spec, JobId(1), None, &policy(), StoreTime(0)).unwrap()
        else {
            panic!("expected insert")
        };
        a
    }

    #[test]
    fn new_job_is_pending_with_run_at_after_delay() {
        let spec = NewJob::new("q", b"x".to_vec()).delay(Millis(500));
        let EnqueuePlan::Insert(a) =
            enqueue(&spec, JobId(1), None, &policy(), StoreTime(100)).unwrap()
        else {
            panic!("expected insert")
        };
        assert_eq!(a.record.state, JobState::Pending);
        assert_eq!(a.record.run_at, StoreTime(600));
        assert_eq!(a.record.token, Token::NONE);
        assert_eq!(a.record.attempt, 0);
        assert_eq!(a.event.from, None);
        assert_eq!(a.event.to, JobState::Pending);
    }

    #[test]
    fn repeated_key_with_same_spec_answers_existing_id() {
        let spec = NewJob::new("q", b"x".to_vec()).idempotency_key("k");
        let a = first_insert(&spec);
        let again = enqueue(&spec, JobId(2), Some(&a.record), &policy(), StoreTime(5)).unwrap();
        assert_eq!(again, EnqueuePlan::Existing(JobId(1)));
    }

    #[test]
    fn repeated_key_with_other_spec_is_a_conflict() {
        let spec = NewJob::new("q", b"x".to_vec()).idempotency_key("k");
        let a = first_insert(&spec);
        let other = NewJob::new("q", b"y".to_vec()).idempotency_key("k");
        let err = enqueue(&other, JobId(2), Some(&a.record), &policy(), StoreTime(0)).unwrap_err();
        assert!(matches!(
            err,
            InputError::IdempotencyConflict {
                existing: JobId(1),
                ..
            }
        ));
    }

    #[test]
    fn bad_input_is_rejected_with_what_is_wrong() {
        let p = policy();
        let cases: Vec<(NewJob, &str)> = vec![
            (NewJob::new("", b"".to_vec()), "empty"),
            (NewJob::new("a b", b"".to_vec()), "whitespace"),
            (NewJob::new("a\u{7}", b"".to_vec()), "control"),
            (NewJob::new("q".repeat(200), b"".to_vec()), "too long"),
            (
                NewJob::new("q", vec![0; p.limits.max_payload_bytes + 1]),
                "payload",
            ),
            (
                NewJob::new("q", b"".to_vec()).max_attempts(0),
                "max_attempts",
            ),
            (
                NewJob::new("q", b"".to_vec()).idempotency_key(""),
                "idempotency",
            ),
        ];
        for (spec, needle) in cases {
            let err = enqueue(&spec, JobId(1), None, &p, StoreTime(0)).unwrap_err();
            assert!(
                err.to_string().contains(needle),
                "{err} should mention {needle}"
            );
        }
    }

    /// `max_attempts` is accepted up to its cap, inclusive, and refused
    /// above it, by one or by far.
    #[test]
    fn max_attempts_is_accepted_at_its_cap_and_refused_above() {
        let p = policy();
        let cap = p.limits.max_attempts_cap;
        let at = |n| NewJob::new("q", b"x".to_vec()).max_attempts(n);
        assert!(validate_new_job(&at(cap), &p).is_ok());
        for n in [0, cap + 1, cap * 2] {
            assert!(
                matches!(
                    validate_new_job(&at(n), &p),
                    Err(InputError::BadMaxAttempts { .. })
                ),
                "max_attempts {n}"
            );
        }
    }
}
