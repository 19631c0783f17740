//! Schedule cases (spec §3 "Schedules", I12): put, list, replace, remove,
//! fire, the fire guards, bad input, a race of firers, and two schedulers.
//!
//! Plan times are taken from the store's own clock (`now`), so every case
//! runs on a manual clock and on a real database clock alike.

use super::cases::{now, row, rows};
use super::limits::small_limits_policy;
use super::{suite_policy, Harness, RACE_CLAIMERS};
use leasehold_core::schedule::{job_key, CatchUp, FireRequest, Rule, Schedule, MAX_CATCH_UP};
use leasehold_core::worker::{Scheduler, SchedulerConfig};
use leasehold_core::JobId;
use leasehold_core::TokioRuntime;
use leasehold_core::{list_all_schedules, Store};
use leasehold_core::{InputError, StoreError};
use leasehold_core::{JobState, NewJob};
use leasehold_core::{Limits, Policy};
use leasehold_core::{Millis, StoreTime};
use std::sync::Arc;
use tokio::sync::Barrier;

/// The interval of the cases' schedules.
const EVERY: Millis = Millis(1000);

fn every(name: &str) -> Schedule {
    Schedule::new(name, "cron-q", b"tick".to_vec(), Rule::every(EVERY))
}

/// The last plan time of an `EVERY` schedule at or before the store's now.
async fn last_plan_time<S: Store>(s: &S) -> StoreTime {
    let t = now(s).await;
    StoreTime(t.0 - t.0.rem_euclid(EVERY.0 as i64))
}

async fn put<S: Store>(s: &S, sched: Schedule) {
    if let Err(e) = s.put_schedule(sched.clone()).await {
        panic!("put_schedule {:?} failed: {e}", sched.name);
    }
}

async fn fire<S: Store>(s: &S, name: &str, plan_time: StoreTime) -> Result<JobId, StoreError> {
    s.fire(FireRequest {
        name: name.into(),
        plan_time,
    })
    .await
}

/// A put is listed; an identical put changes nothing; a changed spec is a
/// new version; remove answers whether it existed, and the jobs it made stay.
pub async fn schedules_are_put_listed_replaced_and_removed_keeping_their_jobs<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let s = &*f.store;
    let name = h.name();
    put(s, every("b-report")).await;
    put(s, every("a-cleanup")).await;
    let listed = list_all_schedules(s).await.expect("list");
    let names: Vec<&str> = listed.iter().map(|r| r.schedule.name.as_str()).collect();
    assert_eq!(names, ["a-cleanup", "b-report"], "{name}: name order");
    let first = listed[1].clone();
    assert_eq!(first.schedule, every("b-report"), "{name}: stored as given");
    assert_eq!(first.version, 1, "{name}");
    assert_eq!(first.created_at, first.updated_at, "{name}");
    put(s, every("b-report")).await;
    let again = list_all_schedules(s).await.expect("list");
    assert_eq!(again[1], first, "{name}: an identical put changes nothing");
    let changed = every("b-report").catch_up(CatchUp::Each { max: 5 });
    f.time.advance(Millis(5)).await;
    put(s, changed.clone()).await;
    let after = list_all_schedules(s).await.expect("list");
    assert_eq!(after[1].schedule, changed, "{name}: replaced");
    assert_eq!(after[1].version, 2, "{name}: a new version");
    assert_eq!(after[1].created_at, first.created_at, "{name}");
    assert!(
        after[1].updated_at > first.updated_at,
        "{name}: updated_at moves"
    );
    let p = last_plan_time(s).await;
    let job = fire(s, "b-report", p).await.expect("fire");
    assert!(
        s.remove_schedule("b-report".into()).await.expect("remove"),
        "{name}"
    );
    assert!(
        !s.remove_schedule("b-report".into()).await.expect("remove"),
        "{name}"
    );
    let left = list_all_schedules(s).await.expect("list");
    assert_eq!(left.len(), 1, "{name}: only a-cleanup is left");
    assert_eq!(
        row(s, job).await.state,
        JobState::Pending,
        "{name}: the job stays"
    );
    assert_eq!(
        fire(s, "b-report", p).await,
        Err(StoreError::Input(InputError::UnknownSchedule(
            "b-report".into()
        ))),
        "{name}: a removed schedule does not fire"
    );
}

/// A plan time becomes one pending job with the schedule's queue, payload
/// and budget under the plan time's key; a second fire answers that job.
pub async fn fire_makes_one_job_per_plan_time<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let s = &*f.store;
    let name = h.name();
    put(s, every("tick").max_attempts(4)).await;
    f.time.advance(Millis(2 * EVERY.0)).await;
    let p = last_plan_time(s).await;
    let before = now(s).await;
    let a = fire(s, "tick", p).await.expect("fire");
    let r = row(s, a).await;
    assert_eq!(r.state, JobState::Pending, "{name}");
    assert_eq!(r.queue, "cron-q", "{name}");
    assert_eq!(r.payload, b"tick", "{name}");
    assert_eq!(r.max_attempts, 4, "{name}");
    assert_eq!(r.priority, 0, "{name}");
    assert_eq!(r.idempotency_key, Some(job_key("tick", p)), "{name}");
    assert!(r.run_at >= before, "{name}: no jitter, due at once");
    assert_eq!(
        fire(s, "tick", p).await,
        Ok(a),
        "{name}: a repeat answers the job"
    );
    let b = fire(s, "tick", StoreTime(p.0 - EVERY.0 as i64))
        .await
        .expect("fire");
    assert_ne!(a, b, "{name}: another plan time, another job");
    assert_eq!(rows(s).await.len(), 2, "{name}: two jobs in all");
}

/// A refused fire (a removed schedule, a time off the rule, a time after
/// the store's now) takes no job id: the next job gets the next id, as on
/// every store (the simulator compares stores' answers, ids included).
/// PostgreSQL once drew an id from its sequence before the refusal.
pub async fn refused_fires_burn_no_job_id<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let s = &*f.store;
    let name = h.name();
    put(s, every("tick")).await;
    put(s, every("gone")).await;
    f.time.advance(Millis(3 * EVERY.0)).await;
    let p = last_plan_time(s).await;
    let a = fire(s, "tick", p).await.expect("fire");
    assert!(s.remove_schedule("gone".into()).await.expect("remove"));
    assert!(fire(s, "gone", p).await.is_err(), "{name}: removed");
    assert!(
        fire(s, "tick", StoreTime(p.0 + 1)).await.is_err(),
        "{name}: off the rule"
    );
    assert!(
        fire(s, "tick", StoreTime(p.0 + 10 * EVERY.0 as i64))
            .await
            .is_err(),
        "{name}: after the store's now"
    );
    let b = fire(s, "tick", StoreTime(p.0 - EVERY.0 as i64))
        .await
        .expect("fire");
    assert_eq!(b, JobId(a.0 + 1), "{name}: the refusals took no id");
}

/// Enqueued and fired jobs take their ids from one sequence: a fire after
/// an enqueue makes the next id, and neither row overwrites the other.
pub async fn enqueued_and_fired_jobs_share_one_id_sequence<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let s = &*f.store;
    let name = h.name();
    put(s, every("tick")).await;
    f.time.advance(Millis(2 * EVERY.0)).await;
    let queued = s
        .enqueue(NewJob::new("plain-q", b"mine".to_vec()))
        .await
        .expect("enqueue");
    let fired = fire(s, "tick", last_plan_time(s).await)
        .await
        .expect("fire");
    assert_eq!(fired, JobId(queued.0 + 1), "{name}: the next id");
    let after = s
        .enqueue(NewJob::new("plain-q", b"later".to_vec()))
        .await
        .expect("enqueue");
    assert_eq!(after, JobId(fired.0 + 1), "{name}: and the next");
    assert_eq!(row(s, queued).await.payload, b"mine", "{name}");
    assert_eq!(row(s, fired).await.payload, b"tick", "{name}");
    assert_eq!(row(s, after).await.payload, b"later", "{name}");
    assert_eq!(rows(s).await.len(), 3, "{name}: three jobs");
}

/// The guards: an unknown schedule, a plan time after the store's now or
/// off the rule, a bad name; a user key in the schedules' namespace; bad
/// schedules name their field. Nothing changes.
pub async fn schedule_bad_input_is_refused_naming_the_field_and_changes_nothing<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let s = &*f.store;
    let name = h.name();
    put(s, every("tick")).await;
    let p = last_plan_time(s).await;
    let refused = |r: Result<JobId, StoreError>| match r {
        Err(StoreError::Input(e)) => e,
        other => panic!("{name}: expected a refusal, got {other:?}"),
    };
    let e = refused(fire(s, "nope", p).await);
    assert_eq!(e, InputError::UnknownSchedule("nope".into()), "{name}");
    let e = refused(fire(s, "tick", StoreTime(p.0 + 3_600_000)).await);
    assert!(
        matches!(e, InputError::NotAPlanTime { .. }),
        "{name}: future: {e}"
    );
    let e = refused(fire(s, "tick", StoreTime(p.0 - 1)).await);
    assert!(
        matches!(e, InputError::NotAPlanTime { .. }),
        "{name}: off the rule: {e}"
    );
    let e = refused(fire(s, "", p).await);
    assert!(
        matches!(e, InputError::BadSchedule { field: "name", .. }),
        "{name}: {e}"
    );
    let key = job_key("tick", p);
    let e = refused(
        s.enqueue(NewJob::new("q", b"x".to_vec()).idempotency_key(key))
            .await,
    );
    assert!(
        matches!(e, InputError::BadIdempotencyKey { .. }),
        "{name}: reserved key: {e}"
    );
    let bad: Vec<(Schedule, &str)> = vec![
        (
            Schedule::new("c", "q", "p", Rule::cron("not a cron")),
            "rule.cron",
        ),
        (
            Schedule::new("c", "q", "p", Rule::cron("61 * * * *")),
            "rule.cron",
        ),
        (
            Schedule::new(
                "c",
                "q",
                "p",
                Rule::cron_in("* * * * *", "Atlantis/Capital"),
            ),
            "rule.time_zone",
        ),
        (
            Schedule::new("c", "q", "p", Rule::every(Millis(0))),
            "rule.interval",
        ),
        (
            every("c").catch_up(CatchUp::Each { max: 0 }),
            "catch_up.max",
        ),
        (
            every("c").catch_up(CatchUp::Each {
                max: MAX_CATCH_UP + 1,
            }),
            "catch_up.max",
        ),
        (every("bad name"), "name"),
    ];
    for (sched, field) in bad {
        match s.put_schedule(sched.clone()).await {
            Err(StoreError::Input(InputError::BadSchedule { field: got, .. })) => {
                assert_eq!(got, field, "{name}: {sched:?}")
            }
            other => panic!("{name}: {sched:?} should be refused on {field}, got {other:?}"),
        }
    }
    let e = s.put_schedule(every("c").max_attempts(0)).await;
    assert!(
        matches!(e, Err(StoreError::Input(InputError::BadMaxAttempts { .. }))),
        "{name}: {e:?}"
    );
    assert!(rows(s).await.is_empty(), "{name}: no job was made");
    let listed = list_all_schedules(s).await.expect("list");
    assert_eq!(listed.len(), 1, "{name}: only tick is stored");
}

/// A schedule is checked against the limits of the policy the store was
/// opened with, not the defaults: under small limits a payload or attempt
/// budget the defaults allow is refused and one at the small caps is
/// stored; under looser limits an attempt budget only the defaults refuse
/// is stored.
pub async fn schedules_are_held_to_the_stores_own_limits<H: Harness>(h: &H) {
    let policy = small_limits_policy();
    let cap = policy.limits.max_payload_bytes;
    let attempts_cap = 3;
    let policy = Policy::builder()
        .limits(Limits {
            max_attempts_cap: attempts_cap,
            ..policy.limits
        })
        .backoff(policy.backoff)
        .build()
        .expect("the case's policy is valid");
    assert!(cap < Limits::default().max_payload_bytes);
    assert!(attempts_cap < Limits::default().max_attempts_cap);
    let f = h.fresh(policy).await;
    let s = &*f.store;
    let name = h.name();
    let sched =
        |payload: usize| Schedule::new("own", "cron-q", vec![b'p'; payload], Rule::every(EVERY));
    match s.put_schedule(sched(cap + 1)).await {
        Err(StoreError::Input(InputError::PayloadTooLarge { size, cap: got })) => {
            assert_eq!((size, got), (cap + 1, cap), "{name}")
        }
        other => panic!("{name}: a payload over the store's cap: {other:?}"),
    }
    match s
        .put_schedule(sched(1).max_attempts(attempts_cap + 1))
        .await
    {
        Err(StoreError::Input(InputError::BadMaxAttempts { value, cap: got })) => {
            assert_eq!((value, got), (attempts_cap + 1, attempts_cap), "{name}")
        }
        other => panic!("{name}: an attempt budget over the store's cap: {other:?}"),
    }
    assert!(
        list_all_schedules(s).await.expect("list").is_empty(),
        "{name}: a refused schedule was stored"
    );
    put(s, sched(cap).max_attempts(attempts_cap)).await;
    let listed = list_all_schedules(s).await.expect("list");
    assert_eq!(
        listed.len(),
        1,
        "{name}: the schedule at the caps is stored"
    );
    assert_eq!(listed[0].schedule.payload.len(), cap, "{name}");

    // Looser than the defaults: what only the defaults refuse is stored.
    let loose_cap = 2 * Limits::default().max_attempts_cap;
    let loose = Policy::builder()
        .limits(Limits {
            max_attempts_cap: loose_cap,
            ..Limits::default()
        })
        .backoff(suite_policy().backoff)
        .build()
        .expect("the loose policy is valid");
    let f = h.fresh(loose).await;
    let s = &*f.store;
    put(s, sched(1).max_attempts(loose_cap)).await;
    let listed = list_all_schedules(s).await.expect("list");
    assert_eq!(
        listed.len(),
        1,
        "{name}: the schedule at the loose cap is stored"
    );
    assert_eq!(listed[0].schedule.max_attempts, loose_cap, "{name}");
}

/// Many firers of one plan time at once (schedulers racing): one job, and
/// every firer is answered with it.
pub async fn concurrent_firers_of_one_plan_time_make_one_job<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let s = f.store.clone();
    let name = h.name();
    put(&*s, every("race")).await;
    let p = last_plan_time(&*s).await;
    let barrier = Arc::new(Barrier::new(RACE_CLAIMERS));
    let mut tasks = Vec::new();
    for _ in 0..RACE_CLAIMERS {
        let (s, b) = (s.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            b.wait().await;
            fire(&*s, "race", p).await
        }));
    }
    let mut ids = Vec::new();
    for t in tasks {
        match t.await.expect("firer") {
            Ok(id) => ids.push(id),
            Err(e) => panic!("{name}: a firer failed: {e}"),
        }
    }
    ids.dedup();
    assert_eq!(
        ids.len(),
        1,
        "{name}: every firer got the same job: {ids:?}"
    );
    assert_eq!(rows(&*s).await.len(), 1, "{name}: exactly one job");
}

/// Two schedulers ticking over the same store fire every plan time once.
pub async fn two_schedulers_fire_each_plan_time_once<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let s = f.store.clone();
    let name = h.name();
    put(&*s, every("both").catch_up(CatchUp::Each { max: 10 })).await;
    let cfg = |id: &str| {
        SchedulerConfig::builder(id)
            .tick(Millis(100))
            .misfire_grace(Millis(60_000))
            .build()
            .expect("config")
    };
    let mut a = Scheduler::new(s.clone(), TokioRuntime::new(), cfg("a"));
    let mut b = Scheduler::new(s.clone(), TokioRuntime::new(), cfg("b"));
    for _ in 0..3 {
        f.time.advance(EVERY).await;
        let ra = a.tick_once().await.expect("tick a");
        let rb = b.tick_once().await.expect("tick b");
        // Every plan time both fired was answered with the same job.
        for (_, plan, job) in &rb.fired {
            if let Some((_, _, other)) = ra.fired.iter().find(|(_, p, _)| p == plan) {
                assert_eq!(job, other, "{name}: {plan} answered two jobs");
            }
        }
        assert_eq!((ra.unknown, rb.unknown), (0, 0), "{name}");
    }
    let all = rows(&*s).await;
    let mut keys: Vec<String> = all
        .iter()
        .filter_map(|r| r.idempotency_key.clone())
        .collect();
    let n = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), n, "{name}: no plan time has two jobs");
    assert!(n >= 2, "{name}: plan times fired: {n}");
    assert_eq!(n, all.len(), "{name}: every job is a plan time's");
}
