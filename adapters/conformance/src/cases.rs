//! Single-client cases: one rule of the protocol each (spec §3).
//!
//! Every case takes a fresh store from the harness and panics with the
//! adapter's name on the first broken expectation.

use super::{suite_policy, Fixture, Harness, LONG_LEASE, SHORT_LEASE};
use leasehold_core::EventKind;
use leasehold_core::{
    list_all, ClaimRequest, ListRequest, ReleaseRequest, RenewRequest, Store, SweepRequest,
};
use leasehold_core::{
    CancelOutcome, JobRecord, JobState, Lease, NewJob, Outcome, Release, Renewal,
};
use leasehold_core::{InputError, StoreError};
use leasehold_core::{JobId, Token, WorkerId};
use leasehold_core::{Limits, Policy};
use leasehold_core::{Millis, StoreTime};

/// Worker `name`.
pub fn worker(name: &str) -> WorkerId {
    WorkerId::new(name)
}

/// Enqueues, panicking on error.
pub async fn enqueue<S: Store>(s: &S, job: NewJob) -> JobId {
    match s.enqueue(job.clone()).await {
        Ok(id) => id,
        Err(e) => panic!("enqueue {job:?} failed: {e}"),
    }
}

/// Claims up to `max` from `queue` for `who`, panicking on error.
pub async fn claim<S: Store>(s: &S, who: &str, queue: &str, lease: Millis, max: u32) -> Vec<Lease> {
    let req = ClaimRequest {
        worker: worker(who),
        queue: queue.into(),
        lease,
        max,
    };
    match s.claim(req).await {
        Ok(l) => l,
        Err(e) => panic!("claim on {queue} by {who} failed: {e}"),
    }
}

/// Claims exactly one lease, panicking otherwise.
pub async fn claim_one<S: Store>(s: &S, who: &str, queue: &str, lease: Millis) -> Lease {
    let mut got = claim(s, who, queue, lease, 1).await;
    assert_eq!(got.len(), 1, "expected one lease on {queue}, got {got:?}");
    got.remove(0)
}

/// Releases, panicking on error.
pub async fn release<S: Store>(s: &S, job: JobId, token: Token, outcome: Outcome) -> Release {
    let req = ReleaseRequest {
        job,
        token,
        outcome,
    };
    match s.release(req.clone()).await {
        Ok(r) => r,
        Err(e) => panic!("release {req:?} failed: {e}"),
    }
}

/// Renews, panicking on error.
pub async fn renew<S: Store>(s: &S, job: JobId, token: Token, lease: Millis) -> Renewal {
    match s.renew(RenewRequest { job, token, lease }).await {
        Ok(r) => r,
        Err(e) => panic!("renew {job} {token} failed: {e}"),
    }
}

/// Sweeps, panicking on error.
pub async fn sweep<S: Store>(s: &S, limit: u32) -> Vec<leasehold_core::CrashReport> {
    match s.sweep(SweepRequest { limit }).await {
        Ok(r) => r,
        Err(e) => panic!("sweep failed: {e}"),
    }
}

/// Reads a job that must exist.
pub async fn row<S: Store>(s: &S, id: JobId) -> JobRecord {
    match s.get(id).await {
        Ok(Some(r)) => r,
        Ok(None) => panic!("{id} is missing"),
        Err(e) => panic!("get {id} failed: {e}"),
    }
}

/// Every row, panicking on error.
pub async fn rows<S: Store>(s: &S) -> Vec<JobRecord> {
    list_all(s).await.expect("list_all")
}

/// Store time now, panicking on error.
pub async fn now<S: Store>(s: &S) -> StoreTime {
    s.now().await.expect("store now")
}

/// Asserts that releasing `job` under `token` with `outcome` answers
/// `want`.
async fn assert_release<S: Store>(
    s: &S,
    job: JobId,
    token: Token,
    outcome: Outcome,
    want: Release,
    name: &str,
) {
    assert_eq!(release(s, job, token, outcome).await, want, "{name}");
}

/// Asserts that cancelling `job` answers `want`.
pub async fn assert_cancel<S: Store>(s: &S, job: JobId, want: CancelOutcome, name: &str) {
    assert_eq!(s.cancel(job).await.expect("cancel"), want, "{name}");
}

fn succeeded(bytes: &[u8]) -> Outcome {
    Outcome::Succeeded(bytes.to_vec())
}

fn failed(retryable: bool) -> Outcome {
    Outcome::Failed {
        error: "boom".into(),
        retryable,
    }
}

async fn fresh<H: Harness>(h: &H) -> Fixture<H::Store> {
    h.fresh(suite_policy()).await
}

/// Enqueue stores every field of the spec; the new row is `pending`, never
/// claimed, at version 1, due `delay` after the store's now.
pub async fn enqueue_then_get_returns_the_pending_row<H: Harness>(h: &H) {
    let f = fresh(h).await;
    let s = &*f.store;
    let before = now(s).await;
    let spec = NewJob::new("emails", b"{\"to\":\"a\"}".to_vec())
        .priority(-3)
        .delay(Millis(1500))
        .max_attempts(7)
        .idempotency_key("k-1");
    let id = enqueue(s, spec.clone()).await;
    let after = now(s).await;
    let r = row(s, id).await;
    let name = h.name();
    assert_eq!(r.id, id, "{name}");
    assert_eq!(r.queue, "emails", "{name}");
    assert_eq!(r.payload, spec.payload, "{name}");
    assert_eq!(r.priority, -3, "{name}");
    assert_eq!(r.max_attempts, 7, "{name}");
    assert_eq!(r.idempotency_key.as_deref(), Some("k-1"), "{name}");
    assert_eq!(r.state, JobState::Pending, "{name}");
    assert_eq!(r.attempt, 0, "{name}");
    assert_eq!(r.token, Token::NONE, "{name}");
    assert_eq!((r.holder.clone(), r.expires_at), (None, None), "{name}");
    assert!(
        !r.cancel_requested && r.result.is_none() && r.error.is_none(),
        "{name}: {r:?}"
    );
    assert_eq!(r.released, None, "{name}");
    assert_eq!(r.version, 1, "{name}");
    assert_eq!(
        r.run_at,
        r.created_at.plus(Millis(1500)),
        "{name}: run_at = now + delay"
    );
    assert!(
        r.created_at >= before && r.created_at <= after,
        "{name}: created_at is store now"
    );
    assert_eq!(r.updated_at, r.created_at, "{name}");
    assert_eq!(
        s.get(JobId(id.0 + 1000)).await.expect("get"),
        None,
        "{name}: unknown id"
    );
    assert_eq!(rows(s).await, vec![r], "{name}: list shows the one row");
}

/// Claim order: higher priority first, then earlier `run_at`, then lower id;
/// a job whose `run_at` is in the future is not claimed. The lease carries
/// the payload, token 1, attempt 1 and `expires_at = now + L`.
pub async fn claim_takes_priority_then_run_at_then_id_and_skips_delayed_jobs<H: Harness>(h: &H) {
    let f = fresh(h).await;
    let s = &*f.store;
    let name = h.name();
    let a = enqueue(s, NewJob::new("q", b"a".to_vec())).await;
    let b = enqueue(s, NewJob::new("q", b"b".to_vec()).priority(5)).await;
    let c = enqueue(s, NewJob::new("q", b"c".to_vec())).await;
    let delayed = enqueue(
        s,
        NewJob::new("q", b"d".to_vec())
            .priority(9)
            .delay(LONG_LEASE),
    )
    .await;
    let leases = claim(s, "w1", "q", LONG_LEASE, 10).await;
    let order: Vec<JobId> = leases.iter().map(|l| l.job).collect();
    assert_eq!(order, vec![b, a, c], "{name}: claim order");
    for l in &leases {
        let r = row(s, l.job).await;
        assert_eq!(l.token, Token(1), "{name}");
        assert_eq!(l.attempt, 1, "{name}");
        assert_eq!(l.queue, "q", "{name}");
        assert_eq!(l.payload, r.payload, "{name}");
        assert_eq!(r.state, JobState::Running, "{name}");
        assert_eq!(r.holder, Some(worker("w1")), "{name}");
        assert_eq!(r.token, Token(1), "{name}");
        assert_eq!(r.attempt, 1, "{name}");
        assert_eq!(r.version, 2, "{name}");
        assert_eq!(r.expires_at, Some(l.expires_at), "{name}");
        assert_eq!(
            l.expires_at,
            r.updated_at.plus(LONG_LEASE),
            "{name}: expires = now + L"
        );
    }
    assert!(
        claim(s, "w1", "q", LONG_LEASE, 10).await.is_empty(),
        "{name}: delayed job is not due"
    );
    assert_eq!(row(s, delayed).await.state, JobState::Pending, "{name}");
}

/// A claim takes at most `max` jobs, and only from its queue.
pub async fn claim_respects_batch_size_and_queue<H: Harness>(h: &H) {
    let f = fresh(h).await;
    let s = &*f.store;
    let name = h.name();
    for i in 0..5u8 {
        enqueue(s, NewJob::new("one", vec![i])).await;
        enqueue(s, NewJob::new("two", vec![i])).await;
    }
    let got = claim(s, "w", "one", LONG_LEASE, 2).await;
    assert_eq!(got.len(), 2, "{name}");
    assert!(got.iter().all(|l| l.queue == "one"), "{name}: {got:?}");
    let rest = claim(s, "w", "one", LONG_LEASE, 100).await;
    assert_eq!(rest.len(), 3, "{name}");
    assert!(
        claim(s, "w", "one", LONG_LEASE, 100).await.is_empty(),
        "{name}"
    );
    let all = rows(s).await;
    let running_two = all
        .iter()
        .filter(|r| r.queue == "two" && r.state == JobState::Running)
        .count();
    assert_eq!(running_two, 0, "{name}: the other queue is untouched");
    assert!(
        claim(s, "w", "nobody-uses-this", LONG_LEASE, 1)
            .await
            .is_empty(),
        "{name}"
    );
}

/// I2: after an expired lease is swept and the job claimed again, the old
/// token's release and renew answer `Lost` and change nothing; the new
/// token commits. A token the job never had is bad input.
pub async fn stale_token_release_is_lost_and_changes_nothing<H: Harness>(h: &H) {
    let f = fresh(h).await;
    let s = &*f.store;
    let name = h.name();
    let id = enqueue(s, NewJob::new("q", b"x".to_vec())).await;
    let first = claim_one(s, "w1", "q", SHORT_LEASE).await;
    f.time.advance(SHORT_LEASE).await;
    let reports = sweep(s, 10).await;
    assert_eq!(reports.len(), 1, "{name}: {reports:?}");
    assert_eq!(
        (reports[0].job, reports[0].token),
        (id, first.token),
        "{name}"
    );
    assert_eq!(reports[0].holder, worker("w1"), "{name}");
    assert_eq!(reports[0].to, JobState::Pending, "{name}");
    let second = claim_one(s, "w2", "q", LONG_LEASE).await;
    assert_eq!(
        second.token,
        Token(first.token.0 + 1),
        "{name}: tokens grow by one"
    );
    let held = row(s, id).await;
    assert_release(
        s,
        id,
        first.token,
        succeeded(b"stale"),
        Release::Lost,
        &name,
    )
    .await;
    assert_eq!(
        renew(s, id, first.token, LONG_LEASE).await,
        Renewal::Lost,
        "{name}"
    );
    assert_eq!(
        row(s, id).await,
        held,
        "{name}: stale answers change nothing"
    );
    let err = s
        .release(ReleaseRequest {
            job: id,
            token: Token(99),
            outcome: succeeded(b"future"),
        })
        .await;
    assert!(
        matches!(err, Err(StoreError::Input(InputError::UnknownToken { .. }))),
        "{name}: {err:?}"
    );
    assert_release(
        s,
        id,
        second.token,
        succeeded(b"ok"),
        Release::Committed,
        &name,
    )
    .await;
    let done = row(s, id).await;
    assert_eq!(done.state, JobState::Succeeded, "{name}");
    assert_eq!(done.result.as_deref(), Some(&b"ok"[..]), "{name}");
    assert_eq!(done.token, second.token, "{name}");
}

/// Idempotent release: repeating a committed release answers `Committed`
/// and changes nothing; the same token with another outcome answers `Lost`.
pub async fn repeated_release_is_committed_once<H: Harness>(h: &H) {
    let f = fresh(h).await;
    let s = &*f.store;
    let name = h.name();
    let id = enqueue(s, NewJob::new("q", b"x".to_vec())).await;
    let l = claim_one(s, "w", "q", LONG_LEASE).await;
    assert_release(s, id, l.token, succeeded(b"r"), Release::Committed, &name).await;
    let once = row(s, id).await;
    let events_once = h.events(s).await.map(|e| e.len());
    for _ in 0..3 {
        assert_release(s, id, l.token, succeeded(b"r"), Release::Committed, &name).await;
    }
    assert_eq!(row(s, id).await, once, "{name}: a repeat changes nothing");
    assert_eq!(
        h.events(s).await.map(|e| e.len()),
        events_once,
        "{name}: no new event"
    );
    assert_release(s, id, l.token, succeeded(b"other"), Release::Lost, &name).await;
    assert_release(s, id, l.token, failed(true), Release::Lost, &name).await;
    assert_eq!(row(s, id).await, once, "{name}");

    // A retry release repeated after the job went back to pending.
    let id2 = enqueue(s, NewJob::new("q2", b"y".to_vec())).await;
    let l2 = claim_one(s, "w", "q2", LONG_LEASE).await;
    assert_release(s, id2, l2.token, failed(true), Release::Committed, &name).await;
    let retried = row(s, id2).await;
    assert_eq!(retried.state, JobState::Pending, "{name}");
    assert_release(s, id2, l2.token, failed(true), Release::Committed, &name).await;
    assert_eq!(row(s, id2).await, retried, "{name}");
}

/// Renew extends from the store's now; a renew after expiry but before any
/// sweep is allowed, and the renewed lease is then not swept.
pub async fn renew_extends_from_store_now_and_is_allowed_after_expiry_before_sweep<H: Harness>(
    h: &H,
) {
    let f = fresh(h).await;
    let s = &*f.store;
    let name = h.name();
    let id = enqueue(s, NewJob::new("q", b"x".to_vec())).await;
    let l = claim_one(s, "w", "q", SHORT_LEASE).await;
    let answer = renew(s, id, l.token, LONG_LEASE).await;
    let r = row(s, id).await;
    assert_eq!(
        answer,
        Renewal::Renewed {
            expires_at: r.updated_at.plus(LONG_LEASE),
            cancel_requested: false
        },
        "{name}"
    );
    assert_eq!(r.expires_at, Some(r.updated_at.plus(LONG_LEASE)), "{name}");
    assert_eq!(
        (r.token, r.version),
        (l.token, 3),
        "{name}: renew keeps the token"
    );

    let id2 = enqueue(s, NewJob::new("q", b"y".to_vec())).await;
    let l2 = claim_one(s, "w", "q", SHORT_LEASE).await;
    assert_eq!(l2.job, id2, "{name}");
    f.time.advance(SHORT_LEASE).await;
    assert!(
        matches!(
            renew(s, id2, l2.token, LONG_LEASE).await,
            Renewal::Renewed { .. }
        ),
        "{name}: the lease expired but was never reassigned"
    );
    assert!(
        sweep(s, 10).await.is_empty(),
        "{name}: renewed leases are not swept"
    );
    assert_eq!(row(s, id2).await.state, JobState::Running, "{name}");
}

/// A renew after the lease was swept answers `Lost`.
pub async fn renew_after_sweep_is_lost<H: Harness>(h: &H) {
    let f = fresh(h).await;
    let s = &*f.store;
    let name = h.name();
    let id = enqueue(s, NewJob::new("q", b"x".to_vec())).await;
    let l = claim_one(s, "w", "q", SHORT_LEASE).await;
    f.time.advance(SHORT_LEASE).await;
    assert_eq!(sweep(s, 10).await.len(), 1, "{name}");
    let swept = row(s, id).await;
    assert_eq!(swept.state, JobState::Pending, "{name}");
    assert_eq!(
        renew(s, id, l.token, LONG_LEASE).await,
        Renewal::Lost,
        "{name}"
    );
    assert_release(s, id, l.token, succeeded(b"late"), Release::Lost, &name).await;
    assert_eq!(row(s, id).await, swept, "{name}: nothing changed");
}

/// I7: a cancel after `succeeded` leaves the job succeeded with its result;
/// a success after a cancel request commits `succeeded`.
pub async fn late_cancel_keeps_succeeded<H: Harness>(h: &H) {
    let f = fresh(h).await;
    let s = &*f.store;
    let name = h.name();
    let id = enqueue(s, NewJob::new("q", b"x".to_vec())).await;
    let l = claim_one(s, "w", "q", LONG_LEASE).await;
    assert_release(
        s,
        id,
        l.token,
        succeeded(b"done"),
        Release::Committed,
        &name,
    )
    .await;
    let done = row(s, id).await;
    assert_cancel(
        s,
        id,
        CancelOutcome::AlreadyTerminal(JobState::Succeeded),
        &name,
    )
    .await;
    assert_eq!(
        row(s, id).await,
        done,
        "{name}: late cancel changes nothing"
    );

    let id2 = enqueue(s, NewJob::new("q", b"y".to_vec())).await;
    let l2 = claim_one(s, "w", "q", LONG_LEASE).await;
    assert_cancel(s, id2, CancelOutcome::Requested, &name).await;
    assert_release(
        s,
        id2,
        l2.token,
        succeeded(b"did it"),
        Release::Committed,
        &name,
    )
    .await;
    let r = row(s, id2).await;
    assert_eq!(r.state, JobState::Succeeded, "{name}: the work happened");
    assert_eq!(r.result.as_deref(), Some(&b"did it"[..]), "{name}");
    assert!(!r.cancel_requested, "{name}");
}

/// Cancel: pending → `cancelled` and never claimed; running → a request
/// that renew reports, repeated requests change nothing; a failure or a
/// sweep of a cancel-requested job ends `cancelled`, never retried.
pub async fn cancel_of_pending_job_is_final_and_cancel_of_running_job_is_a_request<H: Harness>(
    h: &H,
) {
    let f = fresh(h).await;
    let s = &*f.store;
    let name = h.name();
    let p = enqueue(s, NewJob::new("p", b"x".to_vec())).await;
    assert_cancel(s, p, CancelOutcome::Cancelled, &name).await;
    assert_eq!(row(s, p).await.state, JobState::Cancelled, "{name}");
    assert!(
        claim(s, "w", "p", LONG_LEASE, 5).await.is_empty(),
        "{name}: cancelled never runs"
    );
    assert_cancel(
        s,
        p,
        CancelOutcome::AlreadyTerminal(JobState::Cancelled),
        &name,
    )
    .await;

    let r = enqueue(s, NewJob::new("r", b"x".to_vec())).await;
    let l = claim_one(s, "w", "r", LONG_LEASE).await;
    assert_cancel(s, r, CancelOutcome::Requested, &name).await;
    let requested = row(s, r).await;
    assert!(requested.cancel_requested, "{name}");
    assert_eq!(requested.state, JobState::Running, "{name}");
    assert_cancel(s, r, CancelOutcome::Requested, &name).await;
    assert_eq!(
        row(s, r).await,
        requested,
        "{name}: a repeated request changes nothing"
    );
    assert!(
        matches!(
            renew(s, r, l.token, LONG_LEASE).await,
            Renewal::Renewed {
                cancel_requested: true,
                ..
            }
        ),
        "{name}: renew reports the request"
    );
    assert_release(s, r, l.token, failed(true), Release::Committed, &name).await;
    assert_eq!(
        row(s, r).await.state,
        JobState::Cancelled,
        "{name}: not retried"
    );

    let e = enqueue(s, NewJob::new("e", b"x".to_vec())).await;
    let le = claim_one(s, "w", "e", SHORT_LEASE).await;
    assert_eq!(le.job, e, "{name}");
    assert_cancel(s, e, CancelOutcome::Requested, &name).await;
    f.time.advance(SHORT_LEASE).await;
    let reports = sweep(s, 10).await;
    assert_eq!(reports.len(), 1, "{name}");
    assert_eq!(reports[0].to, JobState::Cancelled, "{name}");
    assert_eq!(row(s, e).await.state, JobState::Cancelled, "{name}");
    assert!(claim(s, "w", "e", LONG_LEASE, 5).await.is_empty(), "{name}");

    // The holder acknowledges the request with `Cancelled`.
    let a = enqueue(s, NewJob::new("a", b"x".to_vec())).await;
    let la = claim_one(s, "w", "a", LONG_LEASE).await;
    assert_cancel(s, a, CancelOutcome::Requested, &name).await;
    assert_release(
        s,
        a,
        la.token,
        Outcome::Cancelled,
        Release::Committed,
        &name,
    )
    .await;
    let acked = row(s, a).await;
    assert_eq!(acked.state, JobState::Cancelled, "{name}");
    assert_eq!((acked.holder, acked.expires_at), (None, None), "{name}");
    assert!(claim(s, "w", "a", LONG_LEASE, 5).await.is_empty(), "{name}");
}

/// I8: a retryable failure puts the job back with `run_at = now +
/// backoff(attempt)` (the policy's seeded delay), and no claim takes it
/// before then.
pub async fn failed_release_backs_off_and_claim_respects_run_at<H: Harness>(h: &H) {
    let f = fresh(h).await;
    let s = &*f.store;
    let name = h.name();
    let policy = suite_policy();
    let id = enqueue(s, NewJob::new("q", b"x".to_vec()).max_attempts(3)).await;
    let l = claim_one(s, "w", "q", LONG_LEASE).await;
    assert_release(s, id, l.token, failed(true), Release::Committed, &name).await;
    let r = row(s, id).await;
    let delay = policy.backoff.delay(id, l.token, 1);
    assert!(delay > Millis::ZERO, "{name}");
    assert_eq!(r.state, JobState::Pending, "{name}");
    assert_eq!(
        r.run_at,
        r.updated_at.plus(delay),
        "{name}: run_at = now + backoff"
    );
    assert_eq!(r.error.as_deref(), Some("boom"), "{name}");
    assert_eq!(r.attempt, 1, "{name}: a failure keeps the attempt counted");

    let early = claim(s, "w", "q", LONG_LEASE, 1).await;
    let checked_at = now(s).await;
    if checked_at < r.run_at {
        assert!(early.is_empty(), "{name}: claimed before run_at: {early:?}");
    }
    if f.time.is_manual() {
        f.time.advance(Millis(delay.0 - 1)).await;
        assert!(
            claim(s, "w", "q", LONG_LEASE, 1).await.is_empty(),
            "{name}: 1 ms early"
        );
        f.time.advance(Millis(1)).await;
    } else {
        let wait = r.run_at.since(now(s).await);
        f.time.advance(wait).await;
    }
    let again = claim_one(s, "w", "q", LONG_LEASE).await;
    assert_eq!((again.token, again.attempt), (Token(2), 2), "{name}");
    let claimed = row(s, id).await;
    assert!(
        claimed.updated_at >= r.run_at,
        "{name}: claimed at or after run_at"
    );

    // The next failure waits longer: exponential in the attempt.
    assert_release(s, id, again.token, failed(true), Release::Committed, &name).await;
    let r2 = row(s, id).await;
    let delay2 = policy.backoff.delay(id, again.token, 2);
    assert_eq!(
        r2.run_at,
        r2.updated_at.plus(delay2),
        "{name}: run_at = now + backoff(2)"
    );
    assert!(delay2 > delay, "{name}: {delay2} after {delay}");
}

/// I8: a job is `dead` once its budget is spent (by failures or by expired
/// leases) or at once on a non-retryable failure, and never claimed again.
pub async fn job_is_dead_after_its_attempt_budget<H: Harness>(h: &H) {
    let f = fresh(h).await;
    let s = &*f.store;
    let name = h.name();
    let id = enqueue(s, NewJob::new("q", b"x".to_vec()).max_attempts(2)).await;
    let l1 = claim_one(s, "w", "q", LONG_LEASE).await;
    assert_release(s, id, l1.token, failed(true), Release::Committed, &name).await;
    let backoff = row(s, id).await.run_at.since(now(s).await);
    f.time.advance(backoff).await;
    let l2 = claim_one(s, "w", "q", LONG_LEASE).await;
    assert_eq!(l2.attempt, 2, "{name}");
    assert_release(s, id, l2.token, failed(true), Release::Committed, &name).await;
    let dead = row(s, id).await;
    assert_eq!(dead.state, JobState::Dead, "{name}: budget spent");
    assert_eq!(dead.attempt, 2, "{name}");
    assert_eq!(dead.error.as_deref(), Some("boom"), "{name}");

    let p = enqueue(s, NewJob::new("p", b"x".to_vec()).max_attempts(5)).await;
    let lp = claim_one(s, "w", "p", LONG_LEASE).await;
    assert_release(s, p, lp.token, failed(false), Release::Committed, &name).await;
    assert_eq!(
        row(s, p).await.state,
        JobState::Dead,
        "{name}: not retryable"
    );

    let x = enqueue(s, NewJob::new("x", b"x".to_vec()).max_attempts(1)).await;
    claim_one(s, "w", "x", SHORT_LEASE).await;
    f.time.advance(SHORT_LEASE).await;
    let reports = sweep(s, 10).await;
    assert_eq!(reports.len(), 1, "{name}");
    assert_eq!(
        (reports[0].job, reports[0].to),
        (x, JobState::Dead),
        "{name}"
    );
    assert_eq!(
        row(s, x).await.state,
        JobState::Dead,
        "{name}: expired on the last attempt"
    );

    for q in ["q", "p", "x"] {
        assert!(
            claim(s, "w", q, LONG_LEASE, 5).await.is_empty(),
            "{name}: dead jobs never run"
        );
    }
}

/// `Returned` (graceful shutdown) puts the job back at once with its
/// attempt refunded.
pub async fn returned_job_gets_its_attempt_back<H: Harness>(h: &H) {
    let f = fresh(h).await;
    let s = &*f.store;
    let name = h.name();
    let id = enqueue(s, NewJob::new("q", b"x".to_vec()).max_attempts(1)).await;
    let l = claim_one(s, "w", "q", LONG_LEASE).await;
    assert_release(s, id, l.token, Outcome::Returned, Release::Committed, &name).await;
    let r = row(s, id).await;
    assert_eq!((r.state, r.attempt), (JobState::Pending, 0), "{name}");
    assert_eq!(r.run_at, r.updated_at, "{name}: due at once");
    let again = claim_one(s, "w", "q", LONG_LEASE).await;
    assert_eq!((again.token, again.attempt), (Token(2), 1), "{name}");
}

/// Sweep reclaims expired leases only, oldest first, at most `limit` per
/// call, each with a crash report naming job, token and holder.
pub async fn sweep_reclaims_only_expired_leases_up_to_its_limit<H: Harness>(h: &H) {
    let f = fresh(h).await;
    let s = &*f.store;
    let name = h.name();
    let mut short = Vec::new();
    for i in 0..3u8 {
        enqueue(s, NewJob::new("q", vec![i])).await;
        short.push(claim_one(s, &format!("w{i}"), "q", SHORT_LEASE).await);
    }
    let keep = enqueue(s, NewJob::new("q", b"k".to_vec())).await;
    claim_one(s, "keeper", "q", LONG_LEASE).await;
    f.time.advance(SHORT_LEASE).await;
    let first = sweep(s, 2).await;
    let second = sweep(s, 2).await;
    assert_eq!(
        (first.len(), second.len()),
        (2, 1),
        "{name}: limit per call"
    );
    assert!(sweep(s, 10).await.is_empty(), "{name}");
    let mut reports = first;
    reports.extend(second);
    reports.sort_by_key(|r| r.job);
    for (rep, lease) in reports.iter().zip(&short) {
        assert_eq!((rep.job, rep.token), (lease.job, lease.token), "{name}");
        assert_eq!(rep.expired_at, lease.expires_at, "{name}");
        assert!(rep.swept_at >= rep.expired_at, "{name}");
        assert_eq!(rep.to, JobState::Pending, "{name}");
        let r = row(s, rep.job).await;
        assert_eq!(
            (r.state, r.holder.clone()),
            (JobState::Pending, None),
            "{name}"
        );
        assert_eq!(r.token, lease.token, "{name}: sweep keeps the token");
    }
    let holders: Vec<&str> = reports.iter().map(|r| r.holder.as_str()).collect();
    assert_eq!(holders, vec!["w0", "w1", "w2"], "{name}");
    assert_eq!(
        row(s, keep).await.state,
        JobState::Running,
        "{name}: live lease kept"
    );
}

/// Bad input to every operation gets a typed error and changes nothing.
pub async fn bad_input_is_rejected_and_changes_nothing<H: Harness>(h: &H) {
    let policy = Policy::builder()
        .limits(Limits {
            max_payload_bytes: 16,
            max_result_bytes: 8,
            max_claim_batch: 50,
            ..Limits::default()
        })
        .build()
        .expect("policy");
    let f = h.fresh(policy).await;
    let s = &*f.store;
    let name = h.name();
    let id = enqueue(s, NewJob::new("q", b"x".to_vec())).await;
    let l = claim_one(s, "w", "q", LONG_LEASE).await;
    let before = rows(s).await;
    let input = |r: Result<(), StoreError>| match r {
        Err(StoreError::Input(e)) => e,
        other => panic!("{name}: expected an input error, got {other:?}"),
    };
    for queue in ["", "a b", "tab\there", "bell\u{7}", &"q".repeat(300)] {
        let e = input(s.enqueue(NewJob::new(queue, b"x".to_vec())).await.map(drop));
        assert!(
            matches!(e, InputError::BadQueueName { .. }),
            "{name}: {queue:?}: {e}"
        );
        let e = input(
            s.claim(ClaimRequest {
                worker: worker("w"),
                queue: queue.into(),
                lease: LONG_LEASE,
                max: 1,
            })
            .await
            .map(drop),
        );
        assert!(
            matches!(e, InputError::BadQueueName { .. }),
            "{name}: {queue:?}: {e}"
        );
    }
    let e = input(s.enqueue(NewJob::new("q", vec![0; 17])).await.map(drop));
    assert!(
        matches!(e, InputError::PayloadTooLarge { size: 17, cap: 16 }),
        "{name}: {e}"
    );
    let e = input(
        s.enqueue(NewJob::new("q", b"x".to_vec()).max_attempts(0))
            .await
            .map(drop),
    );
    assert!(
        matches!(e, InputError::BadMaxAttempts { .. }),
        "{name}: {e}"
    );
    let e = input(
        s.enqueue(NewJob::new("q", b"x".to_vec()).idempotency_key(""))
            .await
            .map(drop),
    );
    assert!(
        matches!(e, InputError::BadIdempotencyKey { .. }),
        "{name}: {e}"
    );
    for (lease, max) in [(Millis::ZERO, 1), (LONG_LEASE, 0), (LONG_LEASE, 51)] {
        let e = input(
            s.claim(ClaimRequest {
                worker: worker("w"),
                queue: "q".into(),
                lease,
                max,
            })
            .await
            .map(drop),
        );
        assert!(
            matches!(
                e,
                InputError::BadDuration { .. } | InputError::BadBatch { .. }
            ),
            "{name}: lease {lease} max {max}: {e}"
        );
    }
    let e = input(
        s.renew(RenewRequest {
            job: id,
            token: l.token,
            lease: Millis::ZERO,
        })
        .await
        .map(drop),
    );
    assert!(
        matches!(e, InputError::BadDuration { .. }),
        "{name}: zero lease: {e}"
    );
    let e = input(
        s.release(ReleaseRequest {
            job: id,
            token: l.token,
            outcome: succeeded(&[0; 9]),
        })
        .await
        .map(drop),
    );
    assert!(
        matches!(
            e,
            InputError::ResultTooLarge {
                size: 9,
                cap: 8,
                ..
            }
        ),
        "{name}: {e}"
    );
    for token in [Token::NONE, Token(l.token.0 + 1)] {
        let e = input(
            s.release(ReleaseRequest {
                job: id,
                token,
                outcome: Outcome::Returned,
            })
            .await
            .map(drop),
        );
        assert!(
            matches!(e, InputError::UnknownToken { .. }),
            "{name}: {token}: {e}"
        );
    }
    let ghost = JobId(id.0 + 10_000);
    let unknown = |e: InputError| matches!(e, InputError::UnknownJob(j) if j == ghost);
    let e = input(
        s.renew(RenewRequest {
            job: ghost,
            token: Token(1),
            lease: LONG_LEASE,
        })
        .await
        .map(drop),
    );
    assert!(unknown(e.clone()), "{name}: renew: {e}");
    let e = input(
        s.release(ReleaseRequest {
            job: ghost,
            token: Token(1),
            outcome: Outcome::Returned,
        })
        .await
        .map(drop),
    );
    assert!(unknown(e.clone()), "{name}: release: {e}");
    let e = input(s.cancel(ghost).await.map(drop));
    assert!(unknown(e.clone()), "{name}: cancel: {e}");
    assert_eq!(
        rows(s).await,
        before,
        "{name}: rejected requests change nothing"
    );
    // The lease is still good after all the rejections.
    assert_release(s, id, l.token, succeeded(b"ok"), Release::Committed, &name).await;
}

/// A repeated idempotency key with the same spec answers the existing job;
/// with a different spec it is a conflict naming that job.
pub async fn idempotency_key_answers_the_existing_job<H: Harness>(h: &H) {
    let f = fresh(h).await;
    let s = &*f.store;
    let name = h.name();
    let spec = NewJob::new("q", b"x".to_vec()).idempotency_key("order-17");
    let id = enqueue(s, spec.clone()).await;
    assert_eq!(enqueue(s, spec.clone()).await, id, "{name}");
    let l = claim_one(s, "w", "q", LONG_LEASE).await;
    release(s, id, l.token, succeeded(b"r")).await;
    assert_eq!(
        enqueue(s, spec.clone()).await,
        id,
        "{name}: even after it finished"
    );
    let other = NewJob::new("q", b"y".to_vec()).idempotency_key("order-17");
    match s.enqueue(other).await {
        Err(StoreError::Input(InputError::IdempotencyConflict { existing, key })) => {
            assert_eq!((existing, key.as_str()), (id, "order-17"), "{name}")
        }
        other => panic!("{name}: expected a conflict, got {other:?}"),
    }
    let fresh_id = enqueue(
        s,
        NewJob::new("q", b"x".to_vec()).idempotency_key("order-18"),
    )
    .await;
    assert_ne!(fresh_id, id, "{name}");
    assert_eq!(rows(s).await.len(), 2, "{name}");
}

/// `list` pages through every job once, in id order.
pub async fn list_pages_through_every_job_in_id_order<H: Harness>(h: &H) {
    let f = fresh(h).await;
    let s = &*f.store;
    let name = h.name();
    let mut ids = Vec::new();
    for i in 0..25u8 {
        ids.push(enqueue(s, NewJob::new(if i % 2 == 0 { "a" } else { "b" }, vec![i])).await);
    }
    let mut seen = Vec::new();
    let mut after = None;
    for _ in 0..10 {
        let page = s
            .list(ListRequest { after, limit: 10 })
            .await
            .expect("list");
        assert!(page.len() <= 10, "{name}");
        after = page.last().map(|r| r.id);
        let n = page.len();
        seen.extend(page.into_iter().map(|r| r.id));
        if n < 10 {
            break;
        }
    }
    assert_eq!(seen, ids, "{name}: every job once, in id order");
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(sorted, ids, "{name}: ids grow with enqueue order");
}

/// `get_many` answers one entry per id, in the order asked, exactly as a
/// `get` of each would: repeated ids each time, unknown ids `None` (an id
/// past what a store can hold too), more ids than one statement of the
/// SQL stores carries, and no ids at all.
pub async fn get_many_answers_each_id_as_get_does_in_the_order_asked<H: Harness>(h: &H) {
    let f = fresh(h).await;
    let s = &*f.store;
    let name = h.name();
    let mut ids = Vec::new();
    for i in 0..250u32 {
        ids.push(enqueue(s, NewJob::new("q", i.to_le_bytes().to_vec())).await);
    }
    // Some rows moved on from their first version.
    let leases = claim(s, "w", "q", LONG_LEASE, 3).await;
    release(
        s,
        leases[0].job,
        leases[0].token,
        Outcome::Succeeded(vec![7]),
    )
    .await;
    let mut asked: Vec<JobId> = ids.iter().rev().copied().collect();
    asked.insert(10, ids[0]);
    asked.push(ids[5]);
    // Unknown ids, enough for more than 1,000 distinct ids in all.
    asked.extend((1..=900).map(|k| JobId(ids[249].0 + k)));
    let got = s.get_many(asked.clone()).await.expect("get_many");
    let mut want = Vec::with_capacity(asked.len());
    for j in &asked {
        want.push(s.get(*j).await.expect("get"));
    }
    assert_eq!(got.len(), asked.len(), "{name}: one entry per id");
    assert_eq!(got, want, "{name}: each entry as get answers it");
    assert!(got[1].is_some() && got[asked.len() - 1].is_none(), "{name}");
    assert_eq!(
        got[0].as_ref().map(|r| r.id),
        Some(ids[249]),
        "{name}: in the order asked"
    );
    // An id no store can hold is unknown, never an error.
    let huge = s.get_many(vec![JobId(u64::MAX)]).await.expect("get_many");
    assert_eq!(huge, vec![None], "{name}: an id past every store's range");
    let one = s.get(JobId(u64::MAX)).await;
    assert!(
        matches!(one, Ok(None)),
        "{name}: get of an id past every store's range answered {one:?}"
    );
    let none = s.get_many(Vec::new()).await.expect("get_many of nothing");
    assert!(none.is_empty(), "{name}: no ids, no entries");
}

/// The audit log holds one event per accepted transition, with the row's
/// new version, state and token, and none for answers that change nothing.
pub async fn audit_events_follow_every_accepted_transition<H: Harness>(h: &H) {
    let f = fresh(h).await;
    let s = &*f.store;
    let name = h.name();
    let Some(initial) = h.events(s).await else {
        eprintln!("{name}: keeps no audit log; audit case skipped");
        return;
    };
    assert!(initial.is_empty(), "{name}: a fresh store has no events");
    let id = enqueue(s, NewJob::new("q", b"x".to_vec())).await;
    let l = claim_one(s, "w", "q", LONG_LEASE).await;
    renew(s, id, l.token, LONG_LEASE).await;
    assert_cancel(s, id, CancelOutcome::Requested, &name).await;
    assert_cancel(s, id, CancelOutcome::Requested, &name).await;
    release(s, id, l.token, succeeded(b"r")).await;
    release(s, id, l.token, succeeded(b"r")).await;
    release(s, id, Token(1), succeeded(b"other")).await;
    let events = h.events(s).await.expect("events");
    let last = row(s, id).await;
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e.kind {
            EventKind::Enqueued { .. } => "enqueued",
            EventKind::Claimed { .. } => "claimed",
            EventKind::Renewed { .. } => "renewed",
            EventKind::CancelRequested => "cancel_requested",
            EventKind::Released { .. } => "released",
            EventKind::Swept { .. } => "swept",
            EventKind::Cancelled => "cancelled",
            EventKind::Retried { .. } => "retried",
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            "enqueued",
            "claimed",
            "renewed",
            "cancel_requested",
            "released"
        ],
        "{name}"
    );
    let versions: Vec<u64> = events.iter().map(|e| e.version).collect();
    assert_eq!(versions, vec![1, 2, 3, 4, 5], "{name}");
    assert!(events.iter().all(|e| e.job == id), "{name}");
    let end = events.last().expect("events");
    assert_eq!(
        (end.to, end.token, end.version),
        (last.state, last.token, last.version),
        "{name}"
    );
    assert_eq!(end.at, last.updated_at, "{name}");
    assert_eq!(end.worker, Some(worker("w")), "{name}");
    let states: Vec<Option<JobState>> = events.iter().map(|e| e.from).collect();
    assert_eq!(
        states,
        vec![
            None,
            Some(JobState::Pending),
            Some(JobState::Running),
            Some(JobState::Running),
            Some(JobState::Running)
        ],
        "{name}"
    );
}
