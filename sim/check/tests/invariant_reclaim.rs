//! I5 on hand-written histories: a reclaim of a holder that renewed on
//! time, a reclaim too early for its lease, and the judgement of a
//! holder's attempts from when they went on the wire.

mod histories;

use histories::{
    answer, belief, cfg, claimed_until, end, ev, release_of_w1, renew_of_w1, request, run_record,
    store_event, sweep_of_w1, w1_holds_job_1, T0,
};
use leasehold_check::checker::check;
use leasehold_core::{EventKind, JobState, StoreTime};
use leasehold_model::config::{InvariantId, ScriptedFault};
use leasehold_model::duration::Dur;
use leasehold_model::history::{BeliefWhat, History, Record, Reply};

/// Job 1 enqueued and claimed by `w1` after request 1, which believes it
/// holds the lease until 4,000 ms.
fn w1_claimed() -> Vec<Record> {
    let mut records = vec![run_record(0)];
    records.extend(w1_holds_job_1(Some(1)));
    records.push(belief(25, "w1", 1, 1, claimed_until(4_000)));
    records
}

#[test]
fn i5_reclaim_of_a_live_renewing_holder_and_a_too_early_reclaim() {
    let mut records = w1_claimed();
    // The holder renews on time (requests answered), yet is reclaimed.
    for (i, t) in [1_500u64, 3_000, 4_500].iter().enumerate() {
        let id = 10 + i as u64;
        records.push(request(*t, id, renew_of_w1(), false));
        records.push(answer(t + 20, id, Reply::RenewLost));
    }
    records.push(sweep_of_w1(3_000, 2, 3, 2_900));
    records.push(end(5_000, false));
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
    let gave_up = || Reply::Unavailable("caller gave up waiting".into());
    // Lease granted at 20 (expires 5,020); a partition until 5,100 loses
    // the renew; the release asked at 5,400 waits behind the batches the
    // partition lost and leaves at 6,400, after the sweep of 6,000.
    let mut records = w1_claimed();
    records.extend([
        link(500, true),
        request(3_000, 10, renew_of_w1(), false),
        answer(5_000, 10, gave_up()),
        link(5_100, false),
        request(5_400, 11, release_of_w1(), true),
        sweep_of_w1(6_000, 2, 9, 5_020),
        Record::Sent {
            t: 6_400,
            local: 6_400,
            host: "w1".into(),
            ids: vec![11],
        },
        answer(7_400, 11, gave_up()),
        end(8_000, false),
    ]);
    let lapsed = History { records };
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
    let renewed = ev(
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
    );
    let mut records = w1_claimed();
    records.extend([
        request(3_000, 10, renew_of_w1(), false),
        store_event(3_010, 2, Some(10), renewed),
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
        sweep_of_w1(8_100, 3, 9, 8_010),
        end(9_000, false),
    ]);
    let silent = History { records };
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

/// A claim asked in a partition waits out the fault (in its process's
/// merger) and is answered with little of its belief left: the holder's
/// first renew commits, but its answer cannot come back before the fence
/// the claim's deadline sets, so the holder abandons it and the lease is
/// swept. The fault that slowed the claim explains the abandoned renew
/// (sweep seed 1000106 of
/// `claim_answer_held_then_renews_cut_fences_from_the_send`); without the
/// fault the same early fence is reported.
#[test]
fn i5_excuses_a_renew_cut_off_by_the_fence_of_a_claim_a_fault_slowed() {
    use leasehold_core::{JobId, Millis, Token, WorkerId};
    use leasehold_model::history::{Blob, HandlerPhase, LeaseRef, Op};
    let link = |t: u64, bad: bool| Record::Link {
        t,
        a: "store".into(),
        b: "w1".into(),
        drop_ab: bad,
        drop_ba: bad,
        held: false,
    };
    let claim = Op::Claim {
        worker: WorkerId::new("w1"),
        queue: "q".into(),
        lease: Millis(5_000),
        max: 1,
    };
    let granted = ev(
        1,
        1,
        Some("w1"),
        Some(JobState::Pending),
        JobState::Running,
        5_000,
        2,
        EventKind::Claimed {
            attempt: 1,
            expires_at: StoreTime(T0 + 10_000),
        },
    );
    let renewed = ev(
        1,
        1,
        Some("w1"),
        Some(JobState::Running),
        JobState::Running,
        5_200,
        3,
        EventKind::Renewed {
            expires_at: StoreTime(T0 + 10_200),
        },
    );
    let lease = LeaseRef {
        job: JobId(1),
        token: Token(1),
        attempt: 1,
        expires_at: StoreTime(T0 + 10_000),
        queue: "q".into(),
        payload: Blob::of(b""),
    };
    // Partitioned 500..2,000; the claim asked at 1,000 leaves its merger
    // at 4,900, is granted at 5,000 and answered at 5,100, its belief
    // counted from 1,000 until 5,600. The renew sent at 5,100 commits at
    // 5,200 (to 10,200); the holder fences at 5,600 and gives it up; the
    // sweep of 10,300 reclaims the lease.
    let records = vec![
        run_record(0),
        store_event(10, 0, None, histories::enq(1, 10)),
        link(500, true),
        request(1_000, 1, claim, true),
        link(2_000, false),
        Record::Sent {
            t: 4_900,
            local: 4_900,
            host: "w1".into(),
            ids: vec![1],
        },
        store_event(5_000, 1, Some(1), granted),
        answer(5_100, 1, Reply::Leases(vec![lease])),
        belief(5_100, "w1", 1, 1, claimed_until(5_600)),
        request(5_100, 10, renew_of_w1(), false),
        histories::handler(5_100, "w1", 1, HandlerPhase::Start),
        store_event(5_200, 2, Some(10), renewed),
        histories::handler(5_600, "w1", 1, HandlerPhase::Dropped),
        belief(
            5_600,
            "w1",
            1,
            1,
            BeliefWhat::Ended {
                why: "Fenced".into(),
            },
        ),
        answer(
            5_600,
            10,
            Reply::Unavailable("caller gave up waiting".into()),
        ),
        sweep_of_w1(10_300, 3, 4, 10_200),
        end(12_000, false),
    ];
    let slowed = History { records };
    let v = check(&slowed, &cfg());
    assert!(v.iter().all(|v| v.invariant != InvariantId::I5), "{v:#?}");

    // No partition: nothing slowed the claim (it still waited in its
    // merger, behind nothing a fault took), so the fence came early for no
    // reason and the abandoned renew is reported.
    let mut healthy = slowed.clone();
    healthy
        .records
        .retain(|r| !matches!(r, Record::Link { .. }));
    let v = check(&healthy, &cfg());
    assert!(
        v.iter().any(|v| v.invariant == InvariantId::I5
            && v.message.contains("attempt at 5100ms failed with no fault")),
        "{v:#?}"
    );
}
