//! An operator's retry (`Store::retry_dead`): a `dead` job back to
//! `pending` with a fresh attempt budget, through the core's transition,
//! audited; every other state refused with nothing changed.

use super::cases::{claim_one, enqueue, now, release, row};
use super::{suite_policy, Harness, LONG_LEASE};
use leasehold_core::{
    EventKind, InputError, JobId, JobState, NewJob, Outcome, Release, RetryOutcome, Store,
    StoreError,
};

fn poison() -> Outcome {
    Outcome::Failed {
        error: "poison".into(),
        retryable: false,
    }
}

/// A dead job is retried once: `pending`, attempt 0, due at once, claimable
/// again with a bumped token and attempt 1; the audit log records the
/// retry; a second retry answers `NotDead(pending)`.
pub async fn a_dead_job_is_retried_with_a_fresh_budget<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let s = &*f.store;
    let name = h.name();
    let id = enqueue(s, NewJob::new("q", b"x".to_vec()).max_attempts(2)).await;
    let l1 = claim_one(s, "w", "q", LONG_LEASE).await;
    assert_eq!(release(s, id, l1.token, poison()).await, Release::Committed);
    let dead = row(s, id).await;
    assert_eq!(dead.state, JobState::Dead, "{name}");

    let at = now(s).await;
    assert_eq!(
        s.retry_dead(id).await.expect("retry"),
        RetryOutcome::Retried,
        "{name}"
    );
    let back = row(s, id).await;
    assert_eq!(back.state, JobState::Pending, "{name}");
    assert_eq!(back.attempt, 0, "{name}: a fresh budget");
    assert_eq!(back.max_attempts, 2, "{name}");
    assert_eq!(back.token, dead.token, "{name}: the next claim bumps it");
    assert_eq!(back.version, dead.version + 1, "{name}");
    assert!(back.run_at >= at, "{name}: due from the store's now");
    assert!(back.run_at <= now(s).await, "{name}: due at once");
    assert_eq!(back.error.as_deref(), Some("poison"), "{name}: why it died");

    assert_eq!(
        s.retry_dead(id).await.expect("second retry"),
        RetryOutcome::NotDead(JobState::Pending),
        "{name}"
    );
    assert_eq!(
        row(s, id).await,
        back,
        "{name}: a refused retry changes nothing"
    );

    let l2 = claim_one(s, "w", "q", LONG_LEASE).await;
    assert_eq!(l2.job, id, "{name}");
    assert_eq!(l2.attempt, 1, "{name}");
    assert!(l2.token > l1.token, "{name}");
    // The old lease stays fenced off.
    assert_eq!(
        release(s, id, l1.token, Outcome::Succeeded(b"late".to_vec())).await,
        Release::Lost,
        "{name}"
    );

    if let Some(events) = h.events(s).await {
        let retried: Vec<_> = events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Retried { .. }))
            .collect();
        assert_eq!(retried.len(), 1, "{name}: one audit event per retry");
        let e = retried[0];
        assert_eq!(e.job, id, "{name}");
        assert_eq!(
            (e.from, e.to, e.version, e.token),
            (
                Some(JobState::Dead),
                JobState::Pending,
                back.version,
                back.token
            ),
            "{name}"
        );
        assert_eq!(
            e.kind,
            EventKind::Retried {
                attempts_spent: 1,
                run_at: back.run_at
            },
            "{name}"
        );
    }
}

/// Retry refuses every state but `dead` (a result is never overwritten, a
/// cancelled job never runs again) and an unknown job, changing nothing.
pub async fn retry_refuses_every_other_state_and_an_unknown_job<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let s = &*f.store;
    let name = h.name();
    let pending = enqueue(s, NewJob::new("p", b"x".to_vec())).await;
    let running = enqueue(s, NewJob::new("r", b"x".to_vec())).await;
    claim_one(s, "w", "r", LONG_LEASE).await;
    let succeeded = enqueue(s, NewJob::new("s", b"x".to_vec())).await;
    let l = claim_one(s, "w", "s", LONG_LEASE).await;
    release(s, succeeded, l.token, Outcome::Succeeded(b"r".to_vec())).await;
    let cancelled = enqueue(s, NewJob::new("c", b"x".to_vec())).await;
    s.cancel(cancelled).await.expect("cancel");
    for (id, state) in [
        (pending, JobState::Pending),
        (running, JobState::Running),
        (succeeded, JobState::Succeeded),
        (cancelled, JobState::Cancelled),
    ] {
        let before = row(s, id).await;
        assert_eq!(before.state, state, "{name}");
        assert_eq!(
            s.retry_dead(id).await.expect("retry"),
            RetryOutcome::NotDead(state),
            "{name}"
        );
        assert_eq!(row(s, id).await, before, "{name}: {state} unchanged");
    }
    assert_eq!(row(s, succeeded).await.result.as_deref(), Some(&b"r"[..]));
    let unknown = JobId(1_000_000);
    assert_eq!(
        s.retry_dead(unknown).await,
        Err(StoreError::Input(InputError::UnknownJob(unknown))),
        "{name}"
    );
    assert_eq!(
        s.get(unknown).await.expect("get"),
        None,
        "{name}: no row made"
    );
}
