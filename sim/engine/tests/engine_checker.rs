//! The checker on hand-written histories: each invariant I1–I9 is reported
//! when a history breaks it (including breaks no catalogue variant can
//! produce, such as I8), and a clean history passes. I9 includes a
//! worker's own limit per queue.

// Event builders mirror every field of an event.
#![allow(clippy::too_many_arguments)]

use leasehold_check::checker::{check, check_store_events};
use leasehold_core::{
    CancelOutcome, Event, EventKind, JobId, JobRecord, JobState, Millis, Outcome, StoreTime, Token,
    WorkerId,
};
use leasehold_model::config::{InvariantId, ScriptedFault, SimConfig};
use leasehold_model::duration::Dur;
use leasehold_model::history::{BeliefWhat, HandlerPhase, History, Op, ReadRow, Record, Reply};

const T0: i64 = 1_704_067_200_000;

fn ev(
    job: u64,
    token: u64,
    w: Option<&str>,
    from: Option<JobState>,
    to: JobState,
    at: i64,
    version: u64,
    kind: EventKind,
) -> Event {
    Event {
        job: JobId(job),
        token: Token(token),
        worker: w.map(WorkerId::new),
        from,
        to,
        at: StoreTime(T0 + at),
        version,
        kind,
    }
}

fn enq(job: u64, at: i64) -> Event {
    ev(
        job,
        0,
        None,
        None,
        JobState::Pending,
        at,
        1,
        EventKind::Enqueued {
            queue: "q".into(),
            max_attempts: 3,
            run_at: StoreTime(T0 + at),
        },
    )
}

fn claim(job: u64, token: u64, w: &str, attempt: u32, at: i64, version: u64) -> Event {
    ev(
        job,
        token,
        Some(w),
        Some(JobState::Pending),
        JobState::Running,
        at,
        version,
        EventKind::Claimed {
            attempt,
            expires_at: StoreTime(T0 + at + 5_000),
        },
    )
}

fn released(
    job: u64,
    token: u64,
    w: &str,
    outcome: Outcome,
    to: JobState,
    at: i64,
    version: u64,
    run_at: Option<i64>,
) -> Event {
    ev(
        job,
        token,
        Some(w),
        Some(JobState::Running),
        to,
        at,
        version,
        EventKind::Released {
            outcome,
            run_at: run_at.map(|r| StoreTime(T0 + r)),
        },
    )
}

fn ok(bytes: &[u8]) -> Outcome {
    Outcome::Succeeded(bytes.to_vec())
}

fn invariants(events: &[Event], parallelism: Option<u32>) -> Vec<InvariantId> {
    let mut v: Vec<InvariantId> = check_store_events(events, parallelism)
        .iter()
        .map(|v| v.invariant)
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn a_clean_life_passes_every_events_check() {
    let e = [
        enq(1, 0),
        claim(1, 1, "w1", 1, 10, 2),
        released(
            1,
            1,
            "w1",
            Outcome::Failed {
                error: "x".into(),
                retryable: true,
            },
            JobState::Pending,
            20,
            3,
            Some(520),
        ),
        claim(1, 2, "w2", 2, 600, 4),
        released(1, 2, "w2", ok(b"r"), JobState::Succeeded, 700, 5, None),
        ev(
            1,
            2,
            None,
            Some(JobState::Succeeded),
            JobState::Succeeded,
            800,
            5,
            EventKind::Cancelled,
        ),
    ];
    // The last event is a late cancel that changed the state: see i7 below;
    // without it the life is clean.
    assert!(
        invariants(&e[..5], Some(1)).is_empty(),
        "{:?}",
        check_store_events(&e[..5], Some(1))
    );
}

#[test]
fn i1_second_grant_while_running_and_non_increasing_tokens() {
    let e = vec![
        enq(1, 0),
        claim(1, 1, "w1", 1, 10, 2),
        claim(1, 2, "w2", 2, 20, 3),
    ];
    assert!(invariants(&e, None).contains(&InvariantId::I1));
    let e = vec![
        enq(1, 0),
        claim(1, 1, "w1", 1, 10, 2),
        ev(
            1,
            1,
            Some("w1"),
            Some(JobState::Running),
            JobState::Pending,
            30,
            3,
            EventKind::Swept {
                expired_at: StoreTime(T0 + 15),
                attempt: 1,
            },
        ),
        claim(1, 1, "w2", 2, 40, 4),
    ];
    assert_eq!(invariants(&e, None), vec![InvariantId::I1]);
}

#[test]
fn i2_stale_token_release_and_second_terminal_transition() {
    let swept = ev(
        1,
        1,
        Some("w1"),
        Some(JobState::Running),
        JobState::Pending,
        30,
        3,
        EventKind::Swept {
            expired_at: StoreTime(T0 + 15),
            attempt: 1,
        },
    );
    let e = vec![
        enq(1, 0),
        claim(1, 1, "w1", 1, 10, 2),
        swept,
        claim(1, 2, "w2", 2, 40, 4),
        released(1, 1, "w1", ok(b"old"), JobState::Succeeded, 50, 5, None),
    ];
    assert!(invariants(&e, None).contains(&InvariantId::I2));
    let e = vec![
        enq(1, 0),
        claim(1, 1, "w1", 1, 10, 2),
        released(1, 1, "w1", ok(b"a"), JobState::Succeeded, 20, 3, None),
        released(
            1,
            1,
            "w1",
            Outcome::Failed {
                error: "e".into(),
                retryable: false,
            },
            JobState::Dead,
            30,
            4,
            None,
        ),
    ];
    assert!(invariants(&e, None).contains(&InvariantId::I2));
}

#[test]
fn i4_and_i7_a_late_cancel_that_overwrites_a_success() {
    let e = vec![
        enq(1, 0),
        claim(1, 1, "w1", 1, 10, 2),
        released(1, 1, "w1", ok(b"r"), JobState::Succeeded, 20, 3, None),
        ev(
            1,
            1,
            None,
            Some(JobState::Succeeded),
            JobState::Cancelled,
            30,
            4,
            EventKind::Cancelled,
        ),
    ];
    let inv = invariants(&e, None);
    assert!(inv.contains(&InvariantId::I7), "{inv:?}");
    assert!(inv.contains(&InvariantId::I4), "{inv:?}");
}

#[test]
fn i7_a_job_cancelled_while_pending_is_claimed_later() {
    let e = vec![
        enq(1, 0),
        ev(
            1,
            0,
            None,
            Some(JobState::Pending),
            JobState::Cancelled,
            5,
            2,
            EventKind::Cancelled,
        ),
        claim(1, 1, "w1", 1, 10, 3),
    ];
    assert!(invariants(&e, None).contains(&InvariantId::I7));
}

#[test]
fn i8_over_budget_early_claim_and_unjustified_death() {
    let mut over = claim(1, 4, "w1", 4, 10, 5);
    over.token = Token(1);
    let e = vec![enq(1, 0), over];
    assert!(invariants(&e, None).contains(&InvariantId::I8));
    let e = vec![
        enq(1, 0),
        claim(1, 1, "w1", 1, 10, 2),
        released(
            1,
            1,
            "w1",
            Outcome::Failed {
                error: "x".into(),
                retryable: true,
            },
            JobState::Pending,
            20,
            3,
            Some(5_000),
        ),
        claim(1, 2, "w1", 2, 100, 4),
    ];
    assert_eq!(
        invariants(&e, None),
        vec![InvariantId::I8],
        "claimed before run_at"
    );
    let e = vec![
        enq(1, 0),
        claim(1, 1, "w1", 1, 10, 2),
        released(
            1,
            1,
            "w1",
            Outcome::Failed {
                error: "x".into(),
                retryable: true,
            },
            JobState::Dead,
            20,
            3,
            None,
        ),
    ];
    assert_eq!(
        invariants(&e, None),
        vec![InvariantId::I8],
        "dead with budget left"
    );
}

#[test]
fn i9_more_running_jobs_than_the_queue_allows() {
    let e = vec![
        enq(1, 0),
        enq(2, 0),
        claim(1, 1, "w1", 1, 10, 2),
        claim(2, 1, "w2", 1, 11, 2),
    ];
    assert_eq!(invariants(&e, Some(1)), vec![InvariantId::I9]);
    assert!(invariants(&e, Some(2)).is_empty());
    assert!(invariants(&e, None).is_empty());
}

fn cfg() -> SimConfig {
    let mut c = SimConfig::default();
    c.protocol.lease = leasehold_model::duration::Dur::secs(5);
    // Hand-written histories have no client schedule to compare against.
    c.workload.jobs = 0;
    c
}

fn run_record(heal: u64) -> Record {
    Record::Run {
        scenario: "hand".into(),
        seed: 0,
        variant: None,
        heal_ms: heal,
        duration_ms: 600_000,
        tick_ms: 10,
        message_loss: 0.0,
        answer_loss: 0.0,
        store_conflict: 0.0,
        wake_loss: 0.0,
        store_cancel: 0.0,
        timing_assumption_broken: false,
    }
}

fn store_event(t: u64, seq: u64, req: Option<u64>, e: Event) -> Record {
    Record::StoreEvent {
        t,
        seq,
        req,
        event: e,
    }
}

fn belief(t: u64, w: &str, job: u64, token: u64, what: BeliefWhat) -> Record {
    Record::Belief {
        t,
        local: t,
        host: w.into(),
        worker: WorkerId::new(w),
        job: JobId(job),
        token: Token(token),
        what,
    }
}

fn claimed_until(until: u64) -> BeliefWhat {
    BeliefWhat::Claimed {
        until_local: until,
        until_true: Some(until),
    }
}

fn only(h: &History) -> Vec<InvariantId> {
    let mut v: Vec<InvariantId> = check(h, &cfg()).iter().map(|v| v.invariant).collect();
    v.sort();
    v.dedup();
    v
}

fn row(job: u64, state: JobState, result: Option<&[u8]>) -> JobRecord {
    JobRecord {
        id: JobId(job),
        queue: "q".into(),
        payload: vec![],
        priority: 0,
        run_at: StoreTime(T0),
        state,
        attempt: 1,
        max_attempts: 3,
        token: Token(1),
        holder: (state == JobState::Running).then(|| WorkerId::new("w1")),
        expires_at: (state == JobState::Running).then_some(StoreTime(T0 + 5_000)),
        cancel_requested: false,
        result: result.map(<[u8]>::to_vec),
        error: None,
        released: None,
        idempotency_key: None,
        version: 2,
        created_at: StoreTime(T0),
        updated_at: StoreTime(T0),
    }
}

#[test]
fn i3_two_workers_believe_at_once_and_a_handler_finishes_after_its_belief() {
    let h = History {
        records: vec![
            run_record(0),
            store_event(10, 0, None, enq(1, 10)),
            store_event(20, 1, None, claim(1, 1, "w1", 1, 20, 2)),
            belief(25, "w1", 1, 1, claimed_until(9_000)),
            store_event(
                6_000,
                2,
                None,
                ev(
                    1,
                    1,
                    Some("w1"),
                    Some(JobState::Running),
                    JobState::Pending,
                    6_000,
                    3,
                    EventKind::Swept {
                        expired_at: StoreTime(T0 + 5_020),
                        attempt: 1,
                    },
                ),
            ),
            store_event(6_100, 3, None, claim(1, 2, "w2", 2, 6_100, 4)),
            belief(6_110, "w2", 1, 2, claimed_until(11_000)),
            Record::Handler {
                t: 9_500,
                host: "w1".into(),
                worker: WorkerId::new("w1"),
                job: JobId(1),
                token: Token(1),
                phase: HandlerPhase::Done { ok: true },
            },
            Record::End {
                t: 12_000,
                quiet: false,
            },
        ],
    };
    let v = check(&h, &cfg());
    let i3: Vec<_> = v
        .iter()
        .filter(|v| v.invariant == InvariantId::I3)
        .collect();
    assert_eq!(i3.len(), 2, "{v:#?}");
    assert!(i3.iter().any(|v| v.message.contains("both believed")));
    assert!(i3.iter().any(|v| v.message.contains("no longer believed")));
}

#[test]
fn i5_reclaim_of_a_live_renewing_holder_and_a_too_early_reclaim() {
    let mut records = vec![
        run_record(0),
        store_event(10, 0, None, enq(1, 10)),
        store_event(20, 1, Some(1), claim(1, 1, "w1", 1, 20, 2)),
        belief(25, "w1", 1, 1, claimed_until(4_000)),
    ];
    // The holder renews on time (requests answered), yet is reclaimed.
    for (i, t) in [1_500u64, 3_000, 4_500].iter().enumerate() {
        let id = 10 + i as u64;
        records.push(Record::Request {
            t: *t,
            local: *t,
            host: "w1".into(),
            id,
            op: Op::Renew {
                job: JobId(1),
                token: Token(1),
                lease: Millis(5_000),
            },
            merged: false,
        });
        records.push(Record::Answer {
            t: t + 20,
            local: t + 20,
            host: "w1".into(),
            id,
            reply: Reply::RenewLost,
        });
    }
    records.push(store_event(
        3_000,
        2,
        None,
        ev(
            1,
            1,
            Some("w1"),
            Some(JobState::Running),
            JobState::Pending,
            3_000,
            3,
            EventKind::Swept {
                expired_at: StoreTime(T0 + 2_900),
                attempt: 1,
            },
        ),
    ));
    records.push(Record::End {
        t: 5_000,
        quiet: false,
    });
    let h = History { records };
    let v = check(&h, &cfg());
    assert!(
        v.iter().any(
            |v| v.invariant == InvariantId::I5 && v.message.contains("cannot expire that soon")
        ),
        "{v:#?}"
    );

    let mut late = h.clone();
    for r in &mut late.records {
        if let Record::StoreEvent { t, event, .. } = r {
            if matches!(event.kind, EventKind::Swept { .. }) {
                *t = 5_200;
            }
        }
    }
    let v = check(&late, &cfg());
    assert!(
        v.iter()
            .any(|v| v.invariant == InvariantId::I5 && v.message.contains("no fault touched")),
        "{v:#?}"
    );
}

fn request(t: u64, id: u64, op: Op, merged: bool) -> Record {
    Record::Request {
        t,
        local: t,
        host: "w1".into(),
        id,
        op,
        merged,
    }
}

fn answer(t: u64, id: u64, reply: Reply) -> Record {
    Record::Answer {
        t,
        local: t,
        host: "w1".into(),
        id,
        reply,
    }
}

fn sweep_of_w1(t: u64, seq: u64, expired: i64) -> Record {
    store_event(
        t,
        seq,
        None,
        ev(
            1,
            1,
            Some("w1"),
            Some(JobState::Running),
            JobState::Pending,
            t as i64,
            9,
            EventKind::Swept {
                expired_at: StoreTime(T0 + expired),
                attempt: 1,
            },
        ),
    )
}

fn release_of_w1() -> Op {
    Op::Release {
        job: JobId(1),
        token: Token(1),
        outcome: ok(b"r"),
    }
}

/// A release asked of the process's merger counts from when it went on the
/// wire: one that left only after the reclaim is no attempt (the lease had
/// lapsed in a partition), and a holder whose release waits unsent while
/// it stops renewing after a good renew let its lease go.
#[test]
fn i5_judges_attempts_from_when_they_left_and_a_holder_silent_after_a_good_renew() {
    let link = |t: u64, bad: bool| Record::Link {
        t,
        a: "store".into(),
        b: "w1".into(),
        drop_ab: bad,
        drop_ba: bad,
        held: false,
    };
    let renew = Op::Renew {
        job: JobId(1),
        token: Token(1),
        lease: Millis(5_000),
    };
    let gave_up = || Reply::Unavailable("caller gave up waiting".into());
    // Lease granted at 20 (expires 5,020); a partition until 5,100 loses
    // the renew; the release asked at 5,400 waits behind the batches the
    // partition lost and leaves at 6,400, after the sweep of 6,000.
    let lapsed = History {
        records: vec![
            run_record(0),
            store_event(10, 0, None, enq(1, 10)),
            store_event(20, 1, Some(1), claim(1, 1, "w1", 1, 20, 2)),
            belief(25, "w1", 1, 1, claimed_until(4_000)),
            link(500, true),
            request(3_000, 10, renew.clone(), false),
            answer(5_000, 10, gave_up()),
            link(5_100, false),
            request(5_400, 11, release_of_w1(), true),
            sweep_of_w1(6_000, 2, 5_020),
            Record::Sent {
                t: 6_400,
                local: 6_400,
                host: "w1".into(),
                ids: vec![11],
            },
            answer(7_400, 11, gave_up()),
            Record::End {
                t: 8_000,
                quiet: false,
            },
        ],
    };
    let v = check(&lapsed, &cfg());
    assert!(v.iter().all(|v| v.invariant != InvariantId::I5), "{v:#?}");
    // The same history judged at the moment the release was asked (no
    // `sent` record, not merged) fails: the attempt at 5,400 had no fault.
    let mut asked = lapsed.clone();
    asked.records.retain(|r| !matches!(r, Record::Sent { .. }));
    for r in &mut asked.records {
        if let Record::Request { merged, .. } = r {
            *merged = false;
        }
    }
    let v = check(&asked, &cfg());
    assert!(
        v.iter().any(|v| v.invariant == InvariantId::I5
            && v.message.contains("attempt at 5400ms failed with no fault")),
        "{v:#?}"
    );

    // Renewed at 3,000 (to 8,010), then silent: the release asked at 6,000
    // never leaves its merger, and no renew follows; the sweep of 8,100
    // reclaims a live, connected holder.
    let silent = History {
        records: vec![
            run_record(0),
            store_event(10, 0, None, enq(1, 10)),
            store_event(20, 1, Some(1), claim(1, 1, "w1", 1, 20, 2)),
            belief(25, "w1", 1, 1, claimed_until(4_000)),
            request(3_000, 10, renew, false),
            store_event(
                3_010,
                2,
                Some(10),
                ev(
                    1,
                    1,
                    Some("w1"),
                    Some(JobState::Running),
                    JobState::Running,
                    3_010,
                    3,
                    EventKind::Renewed {
                        expires_at: StoreTime(T0 + 8_010),
                    },
                ),
            ),
            answer(
                3_020,
                10,
                Reply::Renewed {
                    expires_at: StoreTime(T0 + 8_010),
                    cancel_requested: false,
                },
            ),
            belief(
                3_020,
                "w1",
                1,
                1,
                BeliefWhat::Renewed {
                    until_local: 7_500,
                    until_true: Some(7_500),
                },
            ),
            request(6_000, 11, release_of_w1(), true),
            answer(8_000, 11, gave_up()),
            sweep_of_w1(8_100, 3, 8_010),
            Record::End {
                t: 9_000,
                quiet: false,
            },
        ],
    };
    let v = check(&silent, &cfg());
    assert!(
        v.iter().any(|v| v.invariant == InvariantId::I5
            && v.message.contains("renewed at 3000ms")
            && v.message.contains("sent no renew after it until 7500ms")),
        "{v:#?}"
    );

    // The same holder, paused from 3,500 ms until past the belief deadline
    // its renew gave it (7,500 ms): by design it renews no more, and the
    // pause explains the reclaim.
    let mut paused = silent.clone();
    paused.records.insert(
        1,
        Record::Fault {
            t: 3_500,
            fault: ScriptedFault::Pause {
                host: "w1".into(),
                at: Dur::ms(3_500),
                len: Dur::ms(4_500),
            },
        },
    );
    let v = check(&paused, &cfg());
    assert!(v.iter().all(|v| v.invariant != InvariantId::I5), "{v:#?}");
}

#[test]
fn i6_a_job_still_running_long_after_healing() {
    let h = History {
        records: vec![
            run_record(1_000),
            store_event(10, 0, None, enq(1, 10)),
            store_event(20, 1, None, claim(1, 1, "w1", 1, 20, 2)),
            Record::ClientDone { t: 30 },
            Record::Final {
                row: row(1, JobState::Running, None),
            },
            Record::End {
                t: 600_000,
                quiet: false,
            },
        ],
    };
    assert_eq!(only(&h), vec![InvariantId::I6]);
}

#[test]
fn i4_a_reader_sees_a_succeeded_job_without_its_result() {
    let h = History {
        records: vec![
            run_record(0),
            store_event(10, 0, None, enq(1, 10)),
            store_event(20, 1, None, claim(1, 1, "w1", 1, 20, 2)),
            Record::Request {
                t: 30,
                local: 30,
                host: "w1".into(),
                id: 7,
                op: Op::Release {
                    job: JobId(1),
                    token: Token(1),
                    outcome: ok(b"r"),
                },
                merged: false,
            },
            store_event(
                31,
                2,
                Some(7),
                released(1, 1, "w1", ok(b"r"), JobState::Succeeded, 31, 3, None),
            ),
            Record::Request {
                t: 40,
                local: 40,
                host: "client".into(),
                id: 8,
                op: Op::List {
                    after: None,
                    limit: 10,
                },
                merged: false,
            },
            Record::Answer {
                t: 41,
                local: 41,
                host: "client".into(),
                id: 8,
                reply: Reply::Rows(vec![ReadRow {
                    result: None,
                    ..ReadRow::of(&row(1, JobState::Succeeded, Some(b"r")))
                }]),
            },
            Record::ClientDone { t: 45 },
            Record::Final {
                row: row(1, JobState::Succeeded, Some(b"r")),
            },
            Record::End { t: 50, quiet: true },
        ],
    };
    assert_eq!(only(&h), vec![InvariantId::I4]);
    let _ = CancelOutcome::Cancelled;
}

fn handler(t: u64, w: &str, job: u64, phase: HandlerPhase) -> Record {
    Record::Handler {
        t,
        host: w.split('.').next().unwrap_or(w).into(),
        worker: WorkerId::new(w),
        job: JobId(job),
        token: Token(1),
        phase,
    }
}

/// Handler runs of `worker-1.2` (a worker of a process with several):
/// `(job, start, done)`, on a worker limited to 2 handlers of queue `q`.
fn i9_worker_history(runs: &[(u64, u64, u64)]) -> Vec<String> {
    let mut records = vec![run_record(0)];
    for &(job, from, to) in runs {
        records.push(handler(from, "worker-1.2", job, HandlerPhase::Start));
        records.push(handler(
            to,
            "worker-1.2",
            job,
            HandlerPhase::Done { ok: true },
        ));
    }
    for &(job, ..) in runs {
        records.push(Record::Final {
            row: row(job, JobState::Succeeded, Some(b"r")),
        });
    }
    records.push(Record::End {
        t: 10_000,
        quiet: false,
    });
    let mut c = cfg();
    c.protocol.concurrency = 4;
    c.protocol.queue_limit = Some(2);
    check(&History { records }, &c)
        .into_iter()
        .filter(|v| v.invariant == InvariantId::I9)
        .map(|v| v.message)
        .collect()
}

#[test]
fn i9_a_worker_running_more_of_a_queue_than_its_limit() {
    let over = i9_worker_history(&[(1, 100, 500), (2, 100, 500), (3, 200, 300)]);
    assert_eq!(over.len(), 1, "{over:#?}");
    assert!(
        over[0].contains("worker-1.2 runs 3 handlers of queue \"q\" at once, its limit is 2"),
        "{over:#?}"
    );
    // A slot freed and taken in the same millisecond, and a run that ended
    // as it began (a poison payload), never overlap.
    let fine = i9_worker_history(&[(1, 100, 500), (2, 100, 500), (3, 500, 900), (4, 300, 300)]);
    assert!(fine.is_empty(), "{fine:#?}");
}
