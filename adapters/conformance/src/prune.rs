//! Retention cases (spec §3 "Retention"): prune deletes only terminal jobs
//! that finished at least `R` ago, at most its limit, oldest first; a
//! pruned job is unknown to every later operation; its idempotency key is
//! free again; its plan time never fires again; audit events keep their own
//! retention, and a call deletes at most ten per job of its limit on every
//! store; a bad request is refused and changes nothing.
//!
//! `R` is at least [`MIN_RETENTION`], a minute: the cases that wait for a
//! job to age run on a manual clock only, and say so on a real one (the
//! guards and "recent jobs stay" hold on both).

use super::cases::{assert_cancel, claim_one, enqueue, now, release, rows};
use super::{suite_policy, Fixture, Harness, LONG_LEASE};
use leasehold_core::schedule::{FireRequest, Rule, Schedule};
use leasehold_core::{CancelOutcome, JobId, JobState, NewJob, Outcome, Release, StoreTime};
use leasehold_core::{InputError, StoreError};
use leasehold_core::{Millis, PruneRequest, ReleaseRequest, RenewRequest, Store};
use leasehold_core::{AUDIT_EVENTS_PER_JOB, MAX_PRUNE_LIMIT, MIN_RETENTION};

const R: Millis = MIN_RETENTION;

fn req(limit: u32) -> PruneRequest {
    PruneRequest::new(R, limit).expect("a valid prune request")
}

async fn prune<S: Store>(s: &S, r: PruneRequest) -> Vec<JobId> {
    match s.prune(r).await {
        Ok(mut ids) => {
            ids.sort();
            ids
        }
        Err(e) => panic!("prune {r:?} failed: {e}"),
    }
}

fn ok(bytes: &[u8]) -> Outcome {
    Outcome::Succeeded(bytes.to_vec())
}

/// Says why a case stops early on a clock it cannot move by `R`.
fn manual_only(manual: bool, name: &str, case: &str) -> bool {
    if !manual {
        eprintln!("{name}: {case}: store time cannot be moved by R on this clock; rest skipped");
    }
    manual
}

/// A fresh store on the suite's policy, with the harness's name (for the
/// cases' messages).
async fn opened<H: Harness>(h: &H) -> (Fixture<H::Store>, String) {
    (h.fresh(suite_policy()).await, h.name())
}

/// [`opened`], for a case that needs store time moved by `R`: `None`
/// (said why) on a clock that cannot.
async fn on_manual_clock<H: Harness>(h: &H, case: &str) -> Option<(Fixture<H::Store>, String)> {
    let (f, name) = opened(h).await;
    manual_only(f.time.is_manual(), &name, case).then_some((f, name))
}

/// Succeeded, dead and cancelled jobs go once they finished `R` ago, not a
/// millisecond before; pending and running jobs stay whatever their age.
pub async fn prune_deletes_only_terminal_jobs_finished_at_least_r_ago<H: Harness>(h: &H) {
    let (f, name) = opened(h).await;
    let s = &*f.store;
    let done = enqueue(s, NewJob::new("q", b"a".to_vec())).await;
    let l = claim_one(s, "w", "q", LONG_LEASE).await;
    assert_eq!(
        release(s, done, l.token, ok(b"r")).await,
        Release::Committed
    );
    let dead = enqueue(s, NewJob::new("q", b"b".to_vec())).await;
    let l = claim_one(s, "w", "q", LONG_LEASE).await;
    let failed = Outcome::Failed {
        error: "no".into(),
        retryable: false,
    };
    assert_eq!(release(s, dead, l.token, failed).await, Release::Committed);
    let cancelled = enqueue(s, NewJob::new("q", b"c".to_vec())).await;
    assert_cancel(s, cancelled, CancelOutcome::Cancelled, &name).await;
    let running = enqueue(s, NewJob::new("q", b"d".to_vec())).await;
    let _lease = claim_one(s, "w", "q", LONG_LEASE).await;
    let pending = enqueue(s, NewJob::new("q", b"e".to_vec()).delay(Millis(10 * R.0))).await;
    let before = rows(s).await;
    assert!(
        prune(s, req(100)).await.is_empty(),
        "{name}: nothing is R old yet"
    );
    assert_eq!(
        rows(s).await,
        before,
        "{name}: an empty prune changes nothing"
    );
    if !manual_only(f.time.is_manual(), &name, "prune") {
        return;
    }
    f.time.advance(Millis(R.0 - 1)).await;
    assert!(
        prune(s, req(100)).await.is_empty(),
        "{name}: a millisecond short of R, nothing goes"
    );
    f.time.advance(Millis(1)).await;
    let mut want = vec![done, dead, cancelled];
    want.sort();
    assert_eq!(
        prune(s, req(100)).await,
        want,
        "{name}: the terminal jobs go"
    );
    let left: Vec<(JobId, JobState)> = rows(s).await.iter().map(|r| (r.id, r.state)).collect();
    assert_eq!(
        left,
        [(running, JobState::Running), (pending, JobState::Pending)],
        "{name}: running and pending jobs stay"
    );
    assert!(
        prune(s, req(100)).await.is_empty(),
        "{name}: a second prune finds nothing"
    );
}

/// A prune takes at most its limit, oldest finish first.
pub async fn prune_respects_its_limit_oldest_finish_first<H: Harness>(h: &H) {
    let Some((f, name)) = on_manual_clock(h, "prune limit").await else {
        return;
    };
    let s = &*f.store;
    let ids: Vec<JobId> = {
        let mut ids = Vec::new();
        for i in 0..5u8 {
            ids.push(enqueue(s, NewJob::new("q", vec![i])).await);
        }
        ids
    };
    // Finish them newest id first, a millisecond apart: the oldest finish
    // is the highest id.
    for id in ids.iter().rev() {
        assert_cancel(s, *id, CancelOutcome::Cancelled, &name).await;
        f.time.advance(Millis(1)).await;
    }
    f.time.advance(R).await;
    assert_eq!(
        prune(s, req(2)).await,
        vec![ids[3], ids[4]],
        "{name}: limit 2"
    );
    assert_eq!(prune(s, req(2)).await, vec![ids[1], ids[2]], "{name}");
    assert_eq!(prune(s, req(2)).await, vec![ids[0]], "{name}");
    assert!(prune(s, req(2)).await.is_empty(), "{name}");
    assert!(rows(s).await.is_empty(), "{name}: every job went");
}

/// Within `R` a repeated key answers the finished job; once the job is
/// pruned, the key makes a new job.
pub async fn a_pruned_idempotency_key_is_free_again<H: Harness>(h: &H) {
    let Some((f, name)) = on_manual_clock(h, "pruned key").await else {
        return;
    };
    let s = &*f.store;
    let spec = NewJob::new("q", b"k".to_vec()).idempotency_key("order-7");
    let first = enqueue(s, spec.clone()).await;
    let l = claim_one(s, "w", "q", LONG_LEASE).await;
    assert_eq!(
        release(s, first, l.token, ok(b"r")).await,
        Release::Committed
    );
    f.time.advance(Millis(R.0 - 1)).await;
    assert_eq!(
        enqueue(s, spec.clone()).await,
        first,
        "{name}: within R the key answers the finished job"
    );
    assert!(prune(s, req(10)).await.is_empty(), "{name}");
    f.time.advance(Millis(1)).await;
    assert_eq!(prune(s, req(10)).await, vec![first], "{name}");
    let second = enqueue(s, spec).await;
    assert_ne!(second, first, "{name}: after pruning the key is free");
    let r = s.get(second).await.expect("get").expect("the new job");
    assert_eq!(r.state, JobState::Pending, "{name}");
    assert_eq!(r.idempotency_key.as_deref(), Some("order-7"), "{name}");
}

/// A plan time whose job was pruned is refused, as is every earlier one of
/// its schedule; a later plan time fires.
pub async fn a_pruned_plan_time_does_not_fire_again<H: Harness>(h: &H) {
    let Some((f, name)) = on_manual_clock(h, "pruned plan time").await else {
        return;
    };
    let s = &*f.store;
    let every = Millis(1000);
    let sched = Schedule::new("tick", "cron-q", b"t".to_vec(), Rule::every(every));
    s.put_schedule(sched).await.expect("put");
    f.time.advance(Millis(3 * every.0)).await;
    let t = now(s).await;
    let p = StoreTime(t.0 - t.0.rem_euclid(every.0 as i64));
    let fire = |plan_time| FireRequest {
        name: "tick".into(),
        plan_time,
    };
    let job = s.fire(fire(p)).await.expect("fire");
    assert_cancel(s, job, CancelOutcome::Cancelled, &name).await;
    f.time.advance(R).await;
    assert_eq!(
        s.fire(fire(p)).await.expect("within R"),
        job,
        "{name}: a second fire within R answers the job"
    );
    assert_eq!(prune(s, req(10)).await, vec![job], "{name}");
    let before = rows(s).await;
    for q in [p, StoreTime(p.0 - every.0 as i64)] {
        assert_eq!(
            s.fire(fire(q)).await,
            Err(StoreError::Input(InputError::PlanTimePruned {
                schedule: "tick".into(),
                plan_time: q,
                through: p,
            })),
            "{name}: plan time {q} after pruning {p}"
        );
    }
    assert_eq!(rows(s).await, before, "{name}: a refused fire makes no job");
    let later = s
        .fire(fire(StoreTime(p.0 + every.0 as i64)))
        .await
        .expect("a later plan time fires");
    assert!(later > job, "{name}");
}

/// renew, release, cancel and get of a pruned job answer as for a job that
/// never existed.
pub async fn operations_on_a_pruned_job_answer_as_for_an_unknown_job<H: Harness>(h: &H) {
    let Some((f, name)) = on_manual_clock(h, "pruned job").await else {
        return;
    };
    let s = &*f.store;
    let id = enqueue(s, NewJob::new("q", b"x".to_vec())).await;
    let l = claim_one(s, "w", "q", LONG_LEASE).await;
    assert_eq!(release(s, id, l.token, ok(b"r")).await, Release::Committed);
    f.time.advance(R).await;
    assert_eq!(prune(s, req(10)).await, vec![id], "{name}");
    let unknown = |what: &str, e: Option<StoreError>| {
        assert_eq!(
            e,
            Some(StoreError::Input(InputError::UnknownJob(id))),
            "{name}: {what} of a pruned job"
        );
    };
    let renew = RenewRequest {
        job: id,
        token: l.token,
        lease: LONG_LEASE,
    };
    unknown("renew", s.renew(renew).await.err());
    let again = ReleaseRequest {
        job: id,
        token: l.token,
        outcome: ok(b"r"),
    };
    unknown("release", s.release(again).await.err());
    unknown("cancel", s.cancel(id).await.err());
    assert_eq!(s.get(id).await.expect("get"), None, "{name}: get");
    assert!(rows(s).await.is_empty(), "{name}: no row came back");
}

/// With an audit retention of `2R`, a job pruned at `R` leaves its events
/// until they are `2R` old; with the default (`R`), they go with the job.
pub async fn audit_events_are_kept_for_their_own_retention<H: Harness>(h: &H) {
    let (f, name) = opened(h).await;
    let s = &*f.store;
    if h.events(s).await.is_none() {
        eprintln!("{name}: keeps no audit log; audit retention case skipped");
        return;
    }
    if !manual_only(f.time.is_manual(), &name, "audit retention") {
        return;
    }
    let jobs_of = |events: Vec<leasehold_core::Event>| -> Vec<JobId> {
        let mut j: Vec<JobId> = events.iter().map(|e| e.job).collect();
        j.dedup();
        j
    };
    let old = enqueue(s, NewJob::new("q", b"old".to_vec())).await;
    assert_cancel(s, old, CancelOutcome::Cancelled, &name).await;
    f.time.advance(R).await;
    let young = enqueue(s, NewJob::new("q", b"young".to_vec())).await;
    assert_cancel(s, young, CancelOutcome::Cancelled, &name).await;
    let twice = req(10)
        .with_audit_retention(Millis(2 * R.0))
        .expect("a longer audit retention");
    assert_eq!(prune(s, twice).await, vec![old], "{name}");
    let events = h.events(s).await.expect("events");
    assert_eq!(
        jobs_of(events),
        vec![old, young],
        "{name}: the pruned job's events stay for the audit retention"
    );
    f.time.advance(R).await;
    assert_eq!(prune(s, twice).await, vec![young], "{name}");
    let events = h.events(s).await.expect("events");
    assert_eq!(
        jobs_of(events),
        vec![young],
        "{name}: events 2R old go; the younger job's stay"
    );
    assert_eq!(prune(s, req(10)).await, Vec::<JobId>::new(), "{name}");
    let events = h.events(s).await.expect("events");
    assert!(
        events.is_empty(),
        "{name}: with the default audit retention, events go once R old: {events:?}"
    );
}

/// A call's audit side is bounded alike on every store: it deletes the
/// oldest events old enough, at most [`AUDIT_EVENTS_PER_JOB`] per job of
/// its limit (`PruneRequest::audit_budget`), however many jobs it prunes.
/// Four jobs of three events each (one statement each) and a limit of 1:
/// the first call takes one job and exactly the ten oldest events, the
/// second the next job and the last two.
pub async fn a_prune_deletes_at_most_ten_audit_events_per_job_of_its_limit<H: Harness>(h: &H) {
    let (f, name) = opened(h).await;
    let s = &*f.store;
    if h.events(s).await.is_none() {
        eprintln!("{name}: keeps no audit log; audit budget case skipped");
        return;
    }
    if !manual_only(f.time.is_manual(), &name, "audit budget") {
        return;
    }
    let mut jobs = Vec::new();
    for i in 0..4u8 {
        let id = enqueue(s, NewJob::new("q", vec![i])).await;
        let l = claim_one(s, "w", "q", LONG_LEASE).await;
        assert_eq!(release(s, id, l.token, ok(b"r")).await, Release::Committed);
        jobs.push(id);
    }
    let written = h.events(s).await.expect("events");
    assert_eq!(written.len(), 12, "{name}: three events per job");
    f.time.advance(R).await;
    let one = req(1);
    assert_eq!(one.audit_budget(), AUDIT_EVENTS_PER_JOB);
    assert_eq!(prune(s, one).await, vec![jobs[0]], "{name}");
    let left = h.events(s).await.expect("events");
    assert_eq!(
        left,
        written[AUDIT_EVENTS_PER_JOB as usize..],
        "{name}: a call of limit 1 deletes the {AUDIT_EVENTS_PER_JOB} oldest events, no more"
    );
    assert_eq!(prune(s, one).await, vec![jobs[1]], "{name}");
    let left = h.events(s).await.expect("events");
    assert!(left.is_empty(), "{name}: the rest went: {left:?}");
}

/// A retention under the minimum, an audit retention under the job
/// retention and a limit of zero or over the cap are refused, even when
/// the request was built by hand, and change nothing.
pub async fn bad_prune_requests_are_refused_and_change_nothing<H: Harness>(h: &H) {
    let (f, name) = opened(h).await;
    let s = &*f.store;
    let id = enqueue(s, NewJob::new("q", b"x".to_vec())).await;
    assert_cancel(s, id, CancelOutcome::Cancelled, &name).await;
    if f.time.is_manual() {
        f.time.advance(Millis(10 * R.0)).await;
    }
    let before = rows(s).await;
    let forged = |retention, limit, audit_retention| PruneRequest {
        retention,
        limit,
        audit_retention,
    };
    let cases = [
        (forged(Millis::ZERO, 10, Millis::ZERO), "retention"),
        (forged(Millis(R.0 - 1), 10, R), "retention"),
        (forged(Millis(2 * R.0), 10, R), "audit_retention"),
        (forged(R, 0, R), "limit"),
        (forged(R, MAX_PRUNE_LIMIT + 1, R), "limit"),
    ];
    for (r, what) in cases {
        let e = s.prune(r).await.expect_err("refused");
        let fits = match (&e, what) {
            (StoreError::Input(InputError::BadRetention { what: w, .. }), _) => *w == what,
            (StoreError::Input(InputError::BadPruneLimit { .. }), "limit") => true,
            _ => false,
        };
        assert!(fits, "{name}: {r:?} answered {e}, not a bad {what}");
    }
    assert_eq!(
        rows(s).await,
        before,
        "{name}: refused prunes change nothing"
    );
}
