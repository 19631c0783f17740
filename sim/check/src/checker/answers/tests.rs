//! The replay on small hand-written histories: each case is one protocol
//! rule, answered right and then wrong.

use super::*;
use leasehold_core::{CancelOutcome, CrashReport, JobState, Millis, Outcome, WorkerId};
use leasehold_model::duration::Dur;
use leasehold_model::history::Blob;

fn cfg() -> SimConfig {
    let mut c = SimConfig::default();
    c.protocol.backoff_base = Dur::ms(1000);
    c.protocol.backoff_cap = Dur::ms(60_000);
    c.workload.queues = vec!["q".into()];
    c
}

/// A history written request by request: each call adds the request and
/// its `Served` record at store time `now` (true time = store time).
#[derive(Default)]
struct Script {
    records: Vec<Record>,
    next: u64,
}

impl Script {
    fn serve(&mut self, now: i64, op: Op, reply: Reply, after: Vec<ReadRow>) -> u64 {
        self.serve_as(now, op, reply, after, Fate::Answered)
    }

    fn serve_as(&mut self, now: i64, op: Op, reply: Reply, after: Vec<ReadRow>, fate: Fate) -> u64 {
        self.next += 1;
        let id = self.next;
        let t = now as u64;
        self.records.push(Record::Request {
            t,
            local: t,
            host: "w".into(),
            id,
            op,
            merged: false,
        });
        self.records.push(Record::Served {
            t,
            store_time: StoreTime(now),
            id,
            host: "w".into(),
            fate,
            reply: Some(reply),
            after,
        });
        id
    }

    fn history(&self) -> History {
        History {
            records: self.records.clone(),
        }
    }

    fn check(&self) -> Vec<Violation> {
        check(&self.history(), &cfg())
    }
}

fn enqueue_op(key: Option<&str>) -> Op {
    Op::Enqueue {
        key: key.map(str::to_string),
        queue: "q".into(),
        payload: Blob::of(b"p"),
        priority: 0,
        delay: Millis(0),
        max_attempts: 2,
    }
}

fn pending(job: u64, now: i64) -> ReadRow {
    ReadRow {
        job: JobId(job),
        queue: "q".into(),
        payload: Blob::of(b"p"),
        priority: 0,
        run_at: StoreTime(now),
        state: JobState::Pending,
        attempt: 0,
        max_attempts: 2,
        token: Token::NONE,
        holder: None,
        expires_at: None,
        cancel_requested: false,
        released_token: None,
        result: None,
        error: None,
        key: None,
        version: 1,
    }
}

fn running(mut r: ReadRow, token: u64, attempt: u32, until: i64) -> ReadRow {
    r.state = JobState::Running;
    r.token = Token(token);
    r.attempt = attempt;
    r.holder = Some(WorkerId::new("w"));
    r.expires_at = Some(StoreTime(until));
    r.version += 1;
    r
}

fn claim_op() -> Op {
    Op::Claim {
        worker: WorkerId::new("w"),
        queue: "q".into(),
        lease: Millis(100),
        max: 1,
    }
}

fn lease(job: u64, token: u64, attempt: u32, until: i64) -> LeaseRefT {
    leasehold_model::history::LeaseRef {
        job: JobId(job),
        token: Token(token),
        attempt,
        expires_at: StoreTime(until),
        queue: "q".into(),
        payload: Blob::of(b"p"),
    }
}

type LeaseRefT = leasehold_model::history::LeaseRef;

/// Enqueue job 1 at 0 and claim it at 10 (lease until 110).
fn claimed() -> (Script, ReadRow) {
    let mut s = Script::default();
    s.serve(
        0,
        enqueue_op(None),
        Reply::Job(JobId(1)),
        vec![pending(1, 0)],
    );
    let r = running(pending(1, 0), 1, 1, 110);
    s.serve(
        10,
        claim_op(),
        Reply::Leases(vec![lease(1, 1, 1, 110)]),
        vec![r.clone()],
    );
    (s, r)
}

/// Asserts that `v`'s message says each of `parts`.
#[track_caller]
fn assert_says(v: &Violation, parts: &[&str]) {
    for part in parts {
        assert!(v.message.contains(part), "{} lacks {part:?}", v.message);
    }
}

fn only_i11(v: &[Violation]) -> Vec<&str> {
    v.iter()
        .filter(|v| v.invariant == InvariantId::I11)
        .map(|v| v.message.as_str())
        .collect()
}

#[test]
fn a_correct_script_passes_and_a_wrong_now_is_named() {
    let (mut s, _) = claimed();
    s.serve(20, Op::Now, Reply::Time(StoreTime(20)), vec![]);
    assert!(s.check().is_empty(), "{:?}", s.check());
    s.serve(30, Op::Now, Reply::Time(StoreTime(29)), vec![]);
    let v = s.check();
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(
        v[0].message,
        "request #4 from w now(): the store answered time @29ms but the model expected time @30ms"
    );
    assert_eq!(v[0].store_time, Some(StoreTime(30)));
    assert_eq!(v[0].true_ms, 30);
}

#[test]
fn rejections_compare_by_variant() {
    let (mut s, _) = claimed();
    s.serve(
        20,
        Op::Renew {
            job: JobId(1),
            token: Token(5),
            lease: Millis(100),
        },
        Reply::Rejected("UnknownToken(JobId(1), Token(5))".into()),
        vec![],
    );
    s.serve(
        21,
        Op::Cancel { job: JobId(9) },
        Reply::Rejected("UnknownJob(JobId(9))".into()),
        vec![],
    );
    assert!(s.check().is_empty(), "{:?}", s.check());
    // A stale (not future) token is lost, not unknown.
    s.serve(
        22,
        Op::Release {
            job: JobId(1),
            token: Token(1),
            outcome: Outcome::Returned,
        },
        Reply::Rejected("UnknownJob(JobId(1))".into()),
        vec![],
    );
    let v = s.check();
    assert_eq!(only_i11(&v).len(), 1);
    assert_says(
        &v[0],
        &[
            "rejected \"UnknownJob(JobId(1))\"",
            "the model expected committed",
        ],
    );
}

#[test]
fn a_retry_time_inside_the_window_is_learnt_and_outside_it_is_reported() {
    for (run_at, ok) in [
        (1020, true),
        (810, true),
        (1210, true),
        (809, false),
        (1211, false),
    ] {
        let (mut s, r) = claimed();
        let mut after = r.clone();
        after.state = JobState::Pending;
        after.holder = None;
        after.expires_at = None;
        after.released_token = Some(Token(1));
        after.error = Some("boom".into());
        after.run_at = StoreTime(run_at);
        after.version += 1;
        let failed = Outcome::Failed {
            error: "boom".into(),
            retryable: true,
        };
        s.serve(
            10,
            Op::Release {
                job: JobId(1),
                token: Token(1),
                outcome: failed.clone(),
            },
            Reply::Committed,
            vec![after.clone()],
        );
        // The next claim depends on the learnt time.
        let due = run_at <= 1000;
        let mut claimed = running(after.clone(), 2, 2, 1100);
        claimed.run_at = after.run_at;
        let (reply, rows) = if due {
            (Reply::Leases(vec![lease(1, 2, 2, 1100)]), vec![claimed])
        } else {
            (Reply::Leases(vec![]), vec![])
        };
        s.serve(1000, claim_op(), reply, rows);
        let v = s.check();
        if ok {
            assert!(v.is_empty(), "{run_at}: {v:?}");
            let events = model_events(&s.history(), &cfg());
            let EventKind::Released { run_at: r, .. } = &events[2].2.kind else {
                panic!("{events:?}")
            };
            assert_eq!(*r, Some(StoreTime(run_at)));
        } else {
            assert_eq!(v.len(), 1, "{run_at}: {v:?}");
            let said = format!(
                "run_at=@{run_at}ms (model: within [@810ms, @1210ms], the backoff window after attempt 1)"
            );
            assert_says(&v[0], &[&said]);
        }
    }
}

#[test]
fn repeat_of_a_release_is_committed_even_after_a_new_claim() {
    let (mut s, r) = claimed();
    let mut after = r.clone();
    after.state = JobState::Pending;
    after.holder = None;
    after.expires_at = None;
    after.released_token = Some(Token(1));
    after.attempt = 0;
    after.run_at = StoreTime(20);
    after.version += 1;
    let op = Op::Release {
        job: JobId(1),
        token: Token(1),
        outcome: Outcome::Returned,
    };
    s.serve(20, op.clone(), Reply::Committed, vec![after.clone()]);
    let again = running(after.clone(), 2, 1, 130);
    s.serve(
        30,
        claim_op(),
        Reply::Leases(vec![lease(1, 2, 1, 130)]),
        vec![again.clone()],
    );
    s.serve(40, op.clone(), Reply::Committed, vec![again.clone()]);
    assert!(s.check().is_empty(), "{:?}", s.check());
    s.serve(41, op, Reply::ReleaseLost, vec![again]);
    let v = s.check();
    assert_eq!(v.len(), 1);
    assert_says(&v[0], &["release(job-1, t1, returned): the store answered lost but the model expected committed"]);
}

#[test]
fn unknown_outcome_suspends_judging_the_job_until_an_image_shows_it() {
    let (mut s, r) = claimed();
    // Unavailable with no image: the model cannot tell whether it committed.
    s.serve(
        20,
        Op::Release {
            job: JobId(1),
            token: Token(1),
            outcome: Outcome::Succeeded(b"r".to_vec()),
        },
        Reply::Unavailable("connection reset".into()),
        vec![],
    );
    // Any answer on the job is accepted until an image shows the row ...
    s.serve(
        30,
        Op::Renew {
            job: JobId(1),
            token: Token(1),
            lease: Millis(100),
        },
        Reply::RenewLost,
        vec![],
    );
    assert!(s.check().is_empty(), "{:?}", s.check());
    // ... and from the image on, the model judges again.
    let mut done = r.clone();
    done.state = JobState::Succeeded;
    done.holder = None;
    done.expires_at = None;
    done.released_token = Some(Token(1));
    done.result = Some(Blob::of(b"r"));
    done.version += 1;
    s.serve(
        40,
        Op::Get { job: JobId(1) },
        Reply::Row(Some(done.clone())),
        vec![],
    );
    s.serve(
        50,
        Op::Cancel { job: JobId(1) },
        Reply::Cancel(CancelOutcome::Cancelled),
        vec![done],
    );
    let v = s.check();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0]
        .message
        .contains("but the model expected already succeeded"));
}

#[test]
fn unknown_outcome_of_a_claim_stops_judging_the_run() {
    let mut s = Script::default();
    s.serve(
        0,
        enqueue_op(None),
        Reply::Job(JobId(1)),
        vec![pending(1, 0)],
    );
    s.serve(
        10,
        claim_op(),
        Reply::Unavailable("database gone".into()),
        vec![],
    );
    s.serve(20, claim_op(), Reply::Leases(vec![]), vec![]);
    assert!(s.check().is_empty(), "{:?}", s.check());
}

#[test]
fn answer_lost_is_judged_and_request_lost_is_not() {
    let mut s = Script::default();
    s.serve_as(
        0,
        enqueue_op(Some("k")),
        Reply::Job(JobId(1)),
        vec![ReadRow {
            key: Some("k".into()),
            ..pending(1, 0)
        }],
        Fate::AnswerLost,
    );
    s.records.push(Record::Request {
        t: 5,
        local: 5,
        host: "w".into(),
        id: 99,
        op: enqueue_op(Some("k")),
        merged: false,
    });
    s.records.push(Record::Served {
        t: 5,
        store_time: StoreTime(5),
        id: 99,
        host: "w".into(),
        fate: Fate::RequestLost,
        reply: None,
        after: vec![],
    });
    // The retried enqueue with the same key must get the same job.
    s.serve(10, enqueue_op(Some("k")), Reply::Job(JobId(2)), vec![]);
    let v = s.check();
    assert_eq!(v.len(), 1, "{v:?}");
    assert_says(
        &v[0],
        &["the store answered job-2 but the model expected job-1 (key \"k\" already names job-1)"],
    );
}

#[test]
fn a_sweep_to_dead_takes_the_stores_wording_and_ignores_wall() {
    let mut r = pending(1, 0);
    r.max_attempts = 1;
    let mut s = Script::default();
    let op = Op::Enqueue {
        key: None,
        queue: "q".into(),
        payload: Blob::of(b"p"),
        priority: 0,
        delay: Millis(0),
        max_attempts: 1,
    };
    s.serve(0, op, Reply::Job(JobId(1)), vec![r.clone()]);
    let run = running(r, 1, 1, 110);
    s.serve(
        10,
        claim_op(),
        Reply::Leases(vec![lease(1, 1, 1, 110)]),
        vec![run.clone()],
    );
    // A sweeper whose own clock is far ahead: a correct store ignores it.
    let early = Op::Sweep {
        limit: 10,
        wall: Some(StoreTime(99_999)),
    };
    s.serve(50, early.clone(), Reply::Swept(vec![]), vec![]);
    let mut dead = run.clone();
    dead.state = JobState::Dead;
    dead.holder = None;
    dead.expires_at = None;
    dead.error = Some("lease of w expired on attempt 1".into());
    dead.version += 1;
    let report = CrashReport {
        job: JobId(1),
        token: Token(1),
        holder: WorkerId::new("w"),
        expired_at: StoreTime(110),
        swept_at: StoreTime(120),
        to: JobState::Dead,
    };
    s.serve(
        120,
        Op::Sweep {
            limit: 10,
            wall: None,
        },
        Reply::Swept(vec![report.clone()]),
        vec![dead.clone()],
    );
    s.serve(
        130,
        Op::Get { job: JobId(1) },
        Reply::Row(Some(dead.clone())),
        vec![],
    );
    assert!(s.check().is_empty(), "{:?}", s.check());
    let events = model_events(&s.history(), &cfg());
    assert_eq!(
        events[2].2,
        Event {
            job: JobId(1),
            token: Token(1),
            worker: Some(WorkerId::new("w")),
            from: Some(JobState::Running),
            to: JobState::Dead,
            at: StoreTime(120),
            version: 3,
            kind: EventKind::Swept {
                expired_at: StoreTime(110),
                attempt: 1
            }
        }
    );
    // A store that honours wall reclaims the live lease early.
    let mut bad = Script {
        records: s.records[..4].to_vec(),
        next: 2,
    };
    bad.serve(50, early, Reply::Swept(vec![report]), vec![dead]);
    let v = bad.check();
    assert_eq!(v.len(), 1, "{v:?}");
    assert_says(&v[0], &["sweep(limit=10, wall=@99999ms): the store answered swept [job-1 t1 of w expired @110ms → dead] but the model expected swept [] (0 leases expired at @50ms; job-1 is running under t1 by w until @110ms)"]);
}

#[test]
fn reads_are_compared_field_by_field_and_listed_in_id_order() {
    let (mut s, r) = claimed();
    s.serve(
        20,
        Op::List {
            after: None,
            limit: 10,
        },
        Reply::Rows(vec![r.clone()]),
        vec![],
    );
    s.serve(21, Op::Get { job: JobId(7) }, Reply::Row(None), vec![]);
    assert!(s.check().is_empty(), "{:?}", s.check());
    let mut short = r.clone();
    short.payload = Blob {
        len: 0,
        fnv: short.payload.fnv,
    };
    s.serve(
        22,
        Op::Get { job: JobId(1) },
        Reply::Row(Some(short)),
        vec![],
    );
    s.serve(
        23,
        Op::List {
            after: Some(JobId(1)),
            limit: 10,
        },
        Reply::Rows(vec![r]),
        vec![],
    );
    let v = s.check();
    assert_eq!(v.len(), 2, "{v:?}");
    assert_says(&v[0], &["get(job-1): answered row job-1 running t1 v2 as the model expects, but the store's row job-1 has payload=0 bytes"]);
    assert_says(&v[1], &["list(after=job-1, limit=10): the store answered rows [job-1] but the model expected rows []"]);
}

#[test]
fn a_late_cancel_and_a_cancel_request_answer_and_change_as_the_spec_says() {
    let (mut s, r) = claimed();
    let mut asked = r.clone();
    asked.cancel_requested = true;
    asked.version += 1;
    s.serve(
        20,
        Op::Cancel { job: JobId(1) },
        Reply::Cancel(CancelOutcome::Requested),
        vec![asked.clone()],
    );
    // Asked twice: the same answer, no second change.
    s.serve(
        21,
        Op::Cancel { job: JobId(1) },
        Reply::Cancel(CancelOutcome::Requested),
        vec![asked.clone()],
    );
    s.serve(
        22,
        Op::Renew {
            job: JobId(1),
            token: Token(1),
            lease: Millis(100),
        },
        Reply::Renewed {
            expires_at: StoreTime(122),
            cancel_requested: true,
        },
        vec![ReadRow {
            expires_at: Some(StoreTime(122)),
            version: asked.version + 1,
            ..asked.clone()
        }],
    );
    assert!(s.check().is_empty(), "{:?}", s.check());
    let kinds: Vec<EventKind> = model_events(&s.history(), &cfg())
        .into_iter()
        .map(|e| e.2.kind)
        .collect();
    assert_eq!(kinds.len(), 4);
    assert_eq!(kinds[2], EventKind::CancelRequested);
    // A version bump on a no-op is reported.
    s.serve(
        23,
        Op::Cancel { job: JobId(1) },
        Reply::Cancel(CancelOutcome::Requested),
        vec![ReadRow {
            expires_at: Some(StoreTime(122)),
            version: asked.version + 2,
            ..asked
        }],
    );
    let v = s.check();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].message
            .ends_with("has version=5 (model: 4): it changed in 1 step(s) no answer showed"),
        "{}",
        v[0].message
    );
}

#[test]
fn a_conflict_applies_nothing_and_a_row_changed_under_it_is_reported() {
    let (mut s, r) = claimed();
    let renew = |token| Op::Renew {
        job: JobId(1),
        token: Token(token),
        lease: Millis(100),
    };
    // Answered `Conflict`, row unchanged: accepted, and the model still
    // expects the lease as it was (the renew after it extends it once).
    s.serve(
        20,
        renew(1),
        Reply::Rejected("Conflict(JobId(1))".into()),
        vec![r.clone()],
    );
    let mut renewed = r.clone();
    renewed.expires_at = Some(StoreTime(121));
    renewed.version += 1;
    s.serve(
        21,
        renew(1),
        Reply::Renewed {
            expires_at: StoreTime(121),
            cancel_requested: false,
        },
        vec![renewed.clone()],
    );
    assert!(s.check().is_empty(), "{:?}", s.check());
    // Answered `Conflict` but the row moved on: the write was applied.
    let mut applied = renewed.clone();
    applied.expires_at = Some(StoreTime(130));
    applied.version += 1;
    s.serve(
        30,
        renew(1),
        Reply::Rejected("Conflict(JobId(1))".into()),
        vec![applied],
    );
    let v = s.check();
    assert_eq!(only_i11(&v).len(), 1, "{v:?}");
    assert_says(&v[0], &["the store's row job-1"]);
}

#[test]
fn a_cancelled_release_applies_nothing_and_a_row_it_changed_is_reported() {
    let (mut s, r) = claimed();
    let release = Op::Release {
        job: JobId(1),
        token: Token(1),
        outcome: Outcome::Succeeded(b"done".to_vec()),
    };
    // Cancelled mid-transaction, row unchanged: accepted; the release sent
    // again after it commits as the model expects.
    let id = s.serve_as(
        20,
        release.clone(),
        Reply::Committed,
        vec![r.clone()],
        Fate::Cancelled,
    );
    strip_reply(&mut s, id);
    assert!(s.check().is_empty(), "{:?}", s.check());
    // Cancelled, but the row shows the release: it committed.
    let mut done = r.clone();
    done.state = JobState::Succeeded;
    done.version += 1;
    let id = s.serve_as(30, release, Reply::Committed, vec![done], Fate::Cancelled);
    strip_reply(&mut s, id);
    let v = s.check();
    assert_eq!(only_i11(&v).len(), 1, "{v:?}");
    assert_says(&v[0], &["the store's row job-1"]);
}

#[test]
fn a_sweep_answered_conflict_applies_nothing_and_a_reclaim_it_hid_is_reported() {
    // One attempt, so the reclaim ends the job (dead).
    let mut p = pending(1, 0);
    p.max_attempts = 1;
    let mut s = Script::default();
    let mut enqueue = enqueue_op(None);
    if let Op::Enqueue { max_attempts, .. } = &mut enqueue {
        *max_attempts = 1;
    }
    s.serve(0, enqueue, Reply::Job(JobId(1)), vec![p.clone()]);
    let r = running(p, 1, 1, 110);
    s.serve(
        10,
        claim_op(),
        Reply::Leases(vec![lease(1, 1, 1, 110)]),
        vec![r.clone()],
    );
    let sweep = Op::Sweep {
        limit: 10,
        wall: None,
    };
    // The lease expired at 110; the sweep at 120 is answered `Conflict`:
    // nothing reclaimed, and the sweep after it reclaims the lease.
    s.serve(
        120,
        sweep.clone(),
        Reply::Rejected("Conflict(JobId(0))".into()),
        vec![],
    );
    let mut dead = r.clone();
    dead.state = JobState::Dead;
    dead.holder = None;
    dead.expires_at = None;
    dead.error = Some("lease of w expired on attempt 1".into());
    dead.version += 1;
    let report = CrashReport {
        job: JobId(1),
        token: Token(1),
        holder: WorkerId::new("w"),
        expired_at: StoreTime(110),
        swept_at: StoreTime(130),
        to: JobState::Dead,
    };
    let mut ok = Script {
        records: s.records.clone(),
        next: s.next,
    };
    ok.serve(
        130,
        sweep.clone(),
        Reply::Swept(vec![report]),
        vec![dead.clone()],
    );
    assert!(ok.check().is_empty(), "{:?}", ok.check());
    // The conflicted sweep did reclaim it: the row read at 130 is dead.
    s.serve(
        130,
        Op::Get { job: JobId(1) },
        Reply::Row(Some(dead)),
        vec![],
    );
    let v = s.check();
    assert_eq!(only_i11(&v).len(), 1, "{v:?}");
    assert_says(&v[0], &["job-1"]);
}

#[test]
fn an_enqueue_answered_conflict_applies_nothing_and_a_job_it_made_is_reported() {
    let mut s = Script::default();
    s.serve(
        0,
        enqueue_op(None),
        Reply::Rejected("Conflict(JobId(0))".into()),
        vec![],
    );
    // Nothing was made: the next enqueue makes job 1.
    let mut ok = Script {
        records: s.records.clone(),
        next: s.next,
    };
    ok.serve(
        10,
        enqueue_op(None),
        Reply::Job(JobId(1)),
        vec![pending(1, 10)],
    );
    assert!(ok.check().is_empty(), "{:?}", ok.check());
    // The conflicted enqueue made job 1 after all: a read shows a job the
    // model never had.
    s.serve(
        10,
        Op::Get { job: JobId(1) },
        Reply::Row(Some(pending(1, 0))),
        vec![],
    );
    let v = s.check();
    assert_eq!(only_i11(&v).len(), 1, "{v:?}");
    assert_says(&v[0], &["job-1"]);
}

/// A cancelled request has no answer: its `Served` record carries none.
fn strip_reply(s: &mut Script, id: u64) {
    for r in &mut s.records {
        if let Record::Served { id: i, reply, .. } = r {
            if *i == id {
                *reply = None;
            }
        }
    }
}

mod prune;
