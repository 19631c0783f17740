//! Pruning in the replay (spec §3 "Retention"): hand-written histories,
//! each answered right and then wrong.

use super::*;

/// `R` of every prune here: the declared minimum, 60 s.
const R: i64 = 60_000;

fn prune_op() -> Op {
    prune_of(R)
}

/// A prune of limit 10 with retention (and audit retention) `r` ms.
fn prune_of(r: i64) -> Op {
    Op::Prune {
        retention: Millis(r as u64),
        limit: 10,
        audit_retention: Millis(r as u64),
    }
}

/// Job 1 under key "k" (or none), claimed at 10 and succeeded at 20.
fn succeeded(key: Option<&str>) -> Script {
    let mut s = Script::default();
    let mut row = pending(1, 0);
    row.key = key.map(str::to_string);
    s.serve(0, enqueue_op(key), Reply::Job(JobId(1)), vec![row.clone()]);
    let r = running(row, 1, 1, 110);
    s.serve(
        10,
        claim_op(),
        Reply::Leases(vec![lease(1, 1, 1, 110)]),
        vec![r.clone()],
    );
    let mut done = r;
    done.state = JobState::Succeeded;
    done.holder = None;
    done.expires_at = None;
    done.released_token = Some(Token(1));
    done.result = Some(Blob::of(b"ok"));
    done.version += 1;
    s.serve(
        20,
        Op::Release {
            job: JobId(1),
            token: Token(1),
            outcome: Outcome::Succeeded(b"ok".to_vec()),
        },
        Reply::Committed,
        vec![done],
    );
    s
}

#[test]
fn a_job_pruned_before_r_is_reported_and_after_r_passes() {
    let mut early = succeeded(None);
    early.serve(
        20 + R - 1,
        prune_op(),
        Reply::Pruned(vec![JobId(1)]),
        vec![],
    );
    let v = early.check();
    assert_eq!(only_i11(&v).len(), 1, "{v:?}");
    assert_says(
        &v[0],
        &[
            "pruned job-1, which finished at @20ms",
            "before its retention ran out",
        ],
    );
    assert_eq!(v[0].job, Some(JobId(1)));

    let mut ok = succeeded(None);
    ok.serve(20 + R, prune_op(), Reply::Pruned(vec![JobId(1)]), vec![]);
    assert!(ok.check().is_empty(), "{:?}", ok.check());
}

#[test]
fn a_running_job_or_one_past_the_limit_is_never_pruned() {
    let (mut s, _) = claimed();
    s.serve(
        10 + 2 * R,
        prune_op(),
        Reply::Pruned(vec![JobId(1)]),
        vec![],
    );
    let v = s.check();
    assert_eq!(only_i11(&v).len(), 1, "{v:?}");
    assert_says(&v[0], &["pruned job-1 while it was running"]);

    let mut over = succeeded(None);
    over.serve(
        20 + R,
        Op::Prune {
            retention: Millis(R as u64),
            limit: 1,
            audit_retention: Millis(R as u64),
        },
        Reply::Pruned(vec![JobId(1), JobId(1)]),
        vec![],
    );
    assert_says(&over.check()[0], &["more than the limit 1"]);
}

#[test]
fn a_pruned_job_answers_as_an_unknown_job() {
    let mut s = succeeded(None);
    s.serve(20 + R, prune_op(), Reply::Pruned(vec![JobId(1)]), vec![]);
    s.serve(
        20 + R + 1,
        Op::Get { job: JobId(1) },
        Reply::Row(None),
        vec![],
    );
    s.serve(
        20 + R + 2,
        Op::Cancel { job: JobId(1) },
        Reply::Rejected("UnknownJob(JobId(1))".into()),
        vec![],
    );
    assert!(s.check().is_empty(), "{:?}", s.check());
    // The store still answering for it, as if it were there: reported.
    s.serve(
        20 + R + 3,
        Op::Cancel { job: JobId(1) },
        Reply::Cancel(CancelOutcome::AlreadyTerminal(JobState::Succeeded)),
        vec![],
    );
    let v = s.check();
    assert_eq!(only_i11(&v).len(), 1, "{v:?}");
    assert_says(&v[0], &["the model expected a rejection UnknownJob"]);
}

#[test]
fn a_pruned_key_makes_a_new_job_and_an_unpruned_one_answers_the_old() {
    let mut s = succeeded(Some("k"));
    let mut two = pending(2, 20 + R + 1);
    two.key = Some("k".into());
    // Within R the key still names job 1; a second job is reported.
    let mut within = succeeded(Some("k"));
    within.serve(
        30,
        enqueue_op(Some("k")),
        Reply::Job(JobId(2)),
        vec![two.clone()],
    );
    let v = within.check();
    assert_eq!(only_i11(&v).len(), 1, "{v:?}");
    assert_says(
        &v[0],
        &["the store answered job-2 but the model expected job-1"],
    );
    // After the prune the key is free: a new job is right, the old id wrong.
    s.serve(20 + R, prune_op(), Reply::Pruned(vec![JobId(1)]), vec![]);
    let mut old = s.records.clone();
    s.serve(
        20 + R + 1,
        enqueue_op(Some("k")),
        Reply::Job(JobId(2)),
        vec![two],
    );
    assert!(s.check().is_empty(), "{:?}", s.check());
    let mut stale = Script {
        next: s.next - 1,
        records: std::mem::take(&mut old),
    };
    stale.serve(
        20 + R + 1,
        enqueue_op(Some("k")),
        Reply::Job(JobId(1)),
        vec![],
    );
    let v = stale.check();
    assert_eq!(only_i11(&v).len(), 1, "{v:?}");
    assert_says(&v[0], &["job-1 was pruned; ids are never given out again"]);
}

/// A schedule "s" every 10 s, and job 1 made by its fire of @0.
fn fired() -> Script {
    let mut s = Script::default();
    s.serve(
        0,
        Op::PutSchedule {
            name: "s".into(),
            queue: "q".into(),
            payload: Blob::of(b"p"),
            rule: leasehold_core::Rule::Every {
                interval: Millis(10_000),
            },
            catch_up: leasehold_core::CatchUp::Latest,
            jitter: Millis(0),
            max_attempts: 2,
        },
        Reply::Done,
        vec![],
    );
    let mut row = pending(1, 0);
    row.key = Some("leasehold:schedule:s@0".into());
    row.priority = 0;
    s.serve(
        0,
        Op::Fire {
            name: "s".into(),
            plan_time: StoreTime(0),
        },
        Reply::Job(JobId(1)),
        vec![row.clone()],
    );
    let mut gone = row;
    gone.state = JobState::Cancelled;
    gone.version += 1;
    s.serve(
        1,
        Op::Cancel { job: JobId(1) },
        Reply::Cancel(CancelOutcome::Cancelled),
        vec![gone],
    );
    s.serve(1 + R, prune_op(), Reply::Pruned(vec![JobId(1)]), vec![]);
    s
}

#[test]
fn a_pruned_plan_time_is_refused_and_never_fired_again() {
    let fire = Op::Fire {
        name: "s".into(),
        plan_time: StoreTime(0),
    };
    let mut ok = fired();
    ok.serve(
        2 + R,
        fire.clone(),
        Reply::Rejected("PlanTimePruned(\"s\", @0ms, @0ms)".into()),
        vec![],
    );
    assert!(ok.check().is_empty(), "{:?}", ok.check());
    let mut again = fired();
    let mut row = pending(2, 2 + R);
    row.key = Some("leasehold:schedule:s@0".into());
    again.serve(2 + R, fire, Reply::Job(JobId(2)), vec![row]);
    let v = again.check();
    assert_eq!(only_i11(&v).len(), 1, "{v:?}");
    assert_says(&v[0], &["the model expected a rejection PlanTimePruned"]);
}

#[test]
fn an_unknown_prune_suspends_only_the_jobs_it_could_have_deleted() {
    let mut s = succeeded(Some("k"));
    s.serve(
        20 + R,
        prune_op(),
        Reply::Unavailable("store down".into()),
        vec![],
    );
    // Job 1 may be gone: its get and key are not judged either way.
    s.serve(
        20 + R + 1,
        Op::Get { job: JobId(1) },
        Reply::Row(None),
        vec![],
    );
    let mut two = pending(2, 20 + R + 2);
    two.key = Some("k".into());
    s.serve(
        20 + R + 2,
        enqueue_op(Some("k")),
        Reply::Job(JobId(2)),
        vec![two],
    );
    assert!(s.check().is_empty(), "{:?}", s.check());
    // The rest of the run is still judged: the get settled job 1 as gone.
    s.serve(
        20 + R + 3,
        Op::Get { job: JobId(1) },
        Reply::Row(Some(pending(1, 0))),
        vec![],
    );
    s.serve(20 + R + 4, Op::Now, Reply::Time(StoreTime(0)), vec![]);
    let v = s.check();
    assert_eq!(only_i11(&v).len(), 2, "{v:?}");
    assert_says(
        &v[0],
        &[
            "get(job-1): the store answered row job-1",
            "expected no row",
        ],
    );
    assert_says(&v[1], &["now(): the store answered time @0ms"]);
}

/// The `Pruner` retries a prune answered `Unavailable` with a new call:
/// a job that call names was still there, so it is judged in full. Job 1
/// finished at 20 and the lost prune at `20 + R` may have deleted it; the
/// retry one millisecond later with the same `R` may name it, and the
/// model then knows it is gone. A retry whose own cutoff is before the
/// finish (here a longer `R`, as an operator's `leasehold prune` after the
/// `Pruner`'s) named it too early: reported, though the lost prune could
/// have deleted it.
#[test]
fn a_retried_prune_is_judged_in_full_after_an_unknown_one() {
    let lost = |s: &mut Script| {
        s.serve(
            20 + R,
            prune_op(),
            Reply::Unavailable("store down".into()),
            vec![],
        );
    };
    let mut ok = succeeded(None);
    lost(&mut ok);
    ok.serve(
        20 + R + 1,
        prune_op(),
        Reply::Pruned(vec![JobId(1)]),
        vec![],
    );
    assert!(ok.check().is_empty(), "{:?}", ok.check());
    // Settled by the retry: job 1 is gone, and a row for it is reported.
    ok.serve(
        20 + R + 2,
        Op::Get { job: JobId(1) },
        Reply::Row(Some(pending(1, 0))),
        vec![],
    );
    let v = ok.check();
    assert_eq!(only_i11(&v).len(), 1, "{v:?}");
    assert_says(&v[0], &["get(job-1)", "expected no row"]);

    let mut early = succeeded(None);
    lost(&mut early);
    early.serve(
        20 + R + 1,
        prune_of(2 * R),
        Reply::Pruned(vec![JobId(1)]),
        vec![],
    );
    let v = early.check();
    assert_eq!(only_i11(&v).len(), 1, "{v:?}");
    assert_says(
        &v[0],
        &[
            "pruned job-1, which finished at @20ms",
            "before its retention ran out",
        ],
    );
    assert_eq!(v[0].job, Some(JobId(1)));
}
