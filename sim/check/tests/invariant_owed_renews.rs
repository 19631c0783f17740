//! I5 judges the renews a holder owes over the whole life of its lease
//! (`docs/PROTOCOL.md` §3, "The renew schedule"), on hand-written
//! histories: after a renew with no outcome, after an `Unavailable`
//! answer, and while the release is retried, a holder that does not retry
//! at the promised spacing lets its lease lapse, and the reclaim is
//! reported though faults touched every failed attempt. The same histories
//! with the promised retry sent are excused.
//!
//! Every history: 5 s leases, 3 s renew interval, 2 s request timeout, no
//! drift; `w1` is granted job 1 at 20 ms (store expiry 5,020 ms) and
//! believes it until 4,700 ms; the link between `w1` and the store drops
//! everything from 1,000 ms on, so every failed attempt is explained; the
//! sweep of 5,100 ms reclaims the lease.

mod histories;

use histories::{
    answer, belief, cfg, claimed_until, end, gave_up, release_of_w1, renew_of_w1, request,
    run_record, sweep_of_w1, w1_cut_off_at, w1_holds_job_1,
};
use leasehold_check::checker::check;
use leasehold_model::config::InvariantId;
use leasehold_model::history::{BeliefWhat, History, Record, Reply};

fn store_unavailable() -> Reply {
    Reply::Unavailable("store unavailable".into())
}

/// The lease, the partition from 1,000 ms, `middle`, then the sweep.
fn lease_with(middle: Vec<Record>) -> History {
    let mut records = vec![run_record(0)];
    records.extend(w1_holds_job_1(Some(1)));
    records.push(belief(25, "w1", 1, 1, claimed_until(4_700)));
    records.push(w1_cut_off_at(1_000));
    records.extend(middle);
    records.push(sweep_of_w1(5_100, 2, 3, 5_020));
    records.push(end(6_000, false));
    History { records }
}

fn fenced(t: u64) -> Record {
    belief(
        t,
        "w1",
        1,
        1,
        BeliefWhat::Ended {
            why: "Fenced".into(),
        },
    )
}

fn i5_messages(h: &History) -> Vec<String> {
    check(h, &cfg())
        .into_iter()
        .filter(|v| v.invariant == InvariantId::I5)
        .map(|v| v.message)
        .collect()
}

/// The renew at 1,500 ms times out at 3,500 ms; the protocol owes a retry
/// halfway to the belief deadline (4,100 ms, plus slack), and the holder
/// sends none until it fences at 4,700 ms.
#[test]
fn a_holder_that_stops_after_one_unknown_renew_is_reported() {
    let stopped = lease_with(vec![
        request(1_500, 10, renew_of_w1(), false),
        answer(3_500, 10, gave_up()),
        fenced(4_700),
    ]);
    let v = i5_messages(&stopped);
    assert!(
        v.iter().any(
            |m| m.contains("renew sent at 1500ms ended with no outcome at 3500ms")
                && m.contains("no retry until 4700ms")
        ),
        "{v:#?}"
    );

    // The retry sent at 4,000 ms is lost too: the lease lapses anyway,
    // and the partition explains it.
    let kept = lease_with(vec![
        request(1_500, 10, renew_of_w1(), false),
        answer(3_500, 10, gave_up()),
        request(4_000, 11, renew_of_w1(), false),
        fenced(4_700),
        answer(6_000, 11, gave_up()),
    ]);
    let v = i5_messages(&kept);
    assert!(v.is_empty(), "{v:#?}");
}

/// The renew at 1,500 ms is answered `Unavailable` at 1,600 ms: the retry
/// is owed half a renew interval later (3,100 ms, plus slack). Waiting a
/// whole renew interval (4,600 ms) is too late, though the holder renews
/// before its fence and every attempt was lost in the partition.
#[test]
fn a_holder_that_spaces_retries_by_the_whole_renew_interval_is_reported() {
    let slow = lease_with(vec![
        request(1_500, 10, renew_of_w1(), false),
        answer(1_600, 10, store_unavailable()),
        request(4_600, 11, renew_of_w1(), false),
        fenced(4_700),
        answer(6_000, 11, gave_up()),
    ]);
    let v = i5_messages(&slow);
    assert!(
        v.iter().any(
            |m| m.contains("renew sent at 1500ms ended with no outcome at 1600ms")
                && m.contains("no retry until 4600ms")
        ),
        "{v:#?}"
    );

    let kept = lease_with(vec![
        request(1_500, 10, renew_of_w1(), false),
        answer(1_600, 10, store_unavailable()),
        request(3_000, 11, renew_of_w1(), false),
        fenced(4_700),
        answer(5_000, 11, gave_up()),
    ]);
    let v = i5_messages(&kept);
    assert!(v.is_empty(), "{v:#?}");
}

/// The handler is done at 2,000 ms and its release is retried (every try
/// lost); the heartbeat's renew at 2,500 ms is answered `Unavailable` at
/// 2,600 ms, and the holder renews no more though its belief deadline
/// (4,700 ms) is far: the retry was owed by 3,730 ms (plus slack).
#[test]
fn a_holder_that_stops_renewing_while_its_release_is_retried_is_reported() {
    let handler_done = belief(
        2_000,
        "w1",
        1,
        1,
        BeliefWhat::Ended {
            why: "HandlerDone".into(),
        },
    );
    let releasing = |renews: Vec<Record>| {
        let mut middle = vec![
            handler_done.clone(),
            request(2_000, 20, release_of_w1(), false),
            request(2_500, 10, renew_of_w1(), false),
            answer(2_600, 10, store_unavailable()),
        ];
        middle.extend(renews);
        middle.extend([
            answer(4_000, 20, gave_up()),
            request(4_100, 21, release_of_w1(), false),
        ]);
        lease_with(middle)
    };
    let stopped = releasing(Vec::new());
    let v = i5_messages(&stopped);
    assert!(
        v.iter().any(
            |m| m.contains("renew sent at 2500ms ended with no outcome at 2600ms")
                && m.contains("no retry until 4700ms")
        ),
        "{v:#?}"
    );

    let kept = releasing(vec![request(3_200, 11, renew_of_w1(), false)]);
    let v = i5_messages(&kept);
    assert!(v.is_empty(), "{v:#?}");
}

/// A `Conflict` answer owes a retry as an unknown outcome does.
#[test]
fn a_holder_that_stops_after_a_conflict_is_reported() {
    let conflict = lease_with(vec![
        request(1_500, 10, renew_of_w1(), false),
        answer(1_600, 10, Reply::Rejected("Conflict(JobId(1))".into())),
        request(4_600, 11, renew_of_w1(), false),
        fenced(4_700),
        answer(6_000, 11, gave_up()),
    ]);
    let v = i5_messages(&conflict);
    assert!(
        v.iter()
            .any(|m| m.contains("ended with Conflict at 1600ms") && m.contains("4600ms")),
        "{v:#?}"
    );
}

/// A release given up on a transient answer ends the lease's life only once
/// its holder no longer keeps the lease: the protocol retries the release,
/// and renews the lease, while it is kept (the brief: transient errors never
/// become crash reports or lost results). The holder here gives its release
/// up at 2,100 ms after one `Conflict`, still believing its lease until
/// 4,700 ms, and renews no more: reported whatever the scenario's
/// `protocol.release_tries` (ten conflicts in a row gave a renewed lease up
/// this way in the false-alarm sweep). The twin keeps renewing until its
/// belief deadline (every renew lost in the partition) and gives the
/// release up only after it: excused.
#[test]
fn a_release_given_up_while_the_lease_is_kept_does_not_end_it() {
    let handler_done = belief(
        2_000,
        "w1",
        1,
        1,
        BeliefWhat::Ended {
            why: "HandlerDone".into(),
        },
    );
    let given_up = |t: u64| {
        belief(
            t,
            "w1",
            1,
            1,
            BeliefWhat::Released {
                outcome: "Completed".into(),
                answer: None,
            },
        )
    };
    let conflict = || Reply::Rejected("Conflict(JobId(1))".into());
    let early = lease_with(vec![
        handler_done.clone(),
        request(2_000, 20, release_of_w1(), false),
        answer(2_050, 20, conflict()),
        given_up(2_100),
    ]);
    let i5 = |h: &History, tries: u32| {
        let mut c = cfg();
        c.protocol.release_tries = tries;
        check(h, &c)
            .into_iter()
            .filter(|v| v.invariant == InvariantId::I5)
            .map(|v| v.message)
            .collect::<Vec<_>>()
    };
    for tries in [1, 10] {
        let v = i5(&early, tries);
        assert!(
            v.iter().any(|m| m.contains("sent no renew until")),
            "gave up at 2100ms, believing until 4700ms ({tries} tries): {v:#?}"
        );
    }

    let late = lease_with(vec![
        request(1_500, 10, renew_of_w1(), false),
        handler_done,
        request(2_000, 20, release_of_w1(), false),
        answer(2_050, 20, conflict()),
        request(3_000, 21, release_of_w1(), false),
        answer(3_050, 21, conflict()),
        answer(3_500, 10, gave_up()),
        request(4_000, 11, renew_of_w1(), false),
        request(4_800, 22, release_of_w1(), false),
        answer(4_850, 22, conflict()),
        given_up(4_900),
        answer(6_000, 11, gave_up()),
    ]);
    for tries in [1, 3] {
        let v = i5(&late, tries);
        assert!(v.is_empty(), "gave up past its deadline: {v:#?}");
    }
}
