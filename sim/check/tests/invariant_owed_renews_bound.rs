//! How late an owed renew may be before I5 reports it: not at all past
//! the whole millisecond the schedule names (`docs/PROTOCOL.md` §3, "How
//! late is late"). The simulator's timers fire at the first true
//! millisecond at which the host's clock reads their target, and every
//! obligation is counted from an instant the holder acted at, so a renew
//! one millisecond past its due instant is late. Until this bound the
//! judge allowed `4·tick + 2·latency + 100` ms (here 160 ms), which hid
//! `fence-from-answer`'s first renew, 100 ms late.
//!
//! The deadline `D` a retry is spaced by is the protocol's (§2), not one
//! the holder believes past it: a holder that never fences still owes
//! its retry halfway to the protocol's `D`.
//!
//! Every history: 5 s leases, 3 s renew interval, 2 s request timeout, no
//! drift; `w1` is granted job 1 at 20 ms (store expiry 5,020 ms), believes
//! it until 4,700 ms (its fence), and from 2,000 ms on the link between
//! `w1` and the store drops everything, so every attempt from then on is
//! lost and explained; the sweep of 5,100 ms reclaims the lease.

mod histories;

use histories::{
    answer, belief, cfg, claimed_until, end, gave_up, messages, renew_of_w1, request, run_record,
    sweep_of_w1, w1_cut_off_at, w1_holds_job_1,
};
use leasehold_core::{Millis, WorkerId};
use leasehold_model::config::InvariantId;
use leasehold_model::history::{BeliefWhat, History, Op, Record, Reply};

/// The lease, the partition from 2,000 ms, `middle`, the fence, the sweep.
fn lease_with(middle: Vec<Record>) -> History {
    let mut records = vec![run_record(0)];
    records.extend(w1_holds_job_1(Some(1)));
    records.push(belief(25, "w1", 1, 1, claimed_until(4_700)));
    records.push(w1_cut_off_at(2_000));
    records.extend(middle);
    records.push(belief(
        4_700,
        "w1",
        1,
        1,
        BeliefWhat::Ended {
            why: "Fenced".into(),
        },
    ));
    records.push(sweep_of_w1(5_100, 2, 3, 5_020));
    records.push(end(6_000, false));
    History { records }
}

fn i5_messages(h: &History) -> Vec<String> {
    messages(h, &cfg(), InvariantId::I5)
}

/// The renew at 1,500 ms is answered `Unavailable` at 1,600 ms (before the
/// partition, by a store that refused it): the retry is owed half a renew
/// interval later, by 3,100 ms exactly (halfway to the 4,700 ms fence is
/// later). Sent at 3,100 ms it is on time; at 3,101 ms it is late, and the
/// reclaim is I5 though the partition took every later attempt.
#[test]
fn a_retry_one_millisecond_past_its_due_instant_is_reported_and_one_at_it_is_not() {
    let retry_at = |t: u64| {
        lease_with(vec![
            request(1_500, 10, renew_of_w1(), false),
            answer(1_600, 10, Reply::Unavailable("store unavailable".into())),
            request(t, 11, renew_of_w1(), false),
            answer(t + 2_000, 11, gave_up()),
        ])
    };
    let v = i5_messages(&retry_at(3_100));
    assert!(v.is_empty(), "on time: {v:#?}");

    let v = i5_messages(&retry_at(3_101));
    assert!(
        v.iter()
            .any(|m| m.contains("no retry until 3101ms") && m.contains("(3100ms at the latest")),
        "1 ms late: {v:#?}"
    );
}

/// After the grant (at 25 ms; the history names no claim request, so the
/// grant's instant stands for its send) the first renew is owed a renew
/// interval later, by 3,025 ms. 100 ms late is late: the flat 100 ms the
/// judge allowed before let exactly this through.
#[test]
fn a_first_renew_a_hundred_milliseconds_late_is_reported_and_one_on_time_is_not() {
    let first_renew_at = |t: u64| {
        lease_with(vec![
            request(t, 10, renew_of_w1(), false),
            answer(t + 2_000, 10, gave_up()),
            request(t + 2_000 + 100, 11, renew_of_w1(), false),
        ])
    };
    let v = i5_messages(&first_renew_at(3_025));
    assert!(v.is_empty(), "on time: {v:#?}");

    let v = i5_messages(&first_renew_at(3_125));
    assert!(
        v.iter()
            .any(|m| m.contains("sent no renew until 3125ms")
                && m.contains("(3025ms at the latest)")),
        "100 ms late: {v:#?}"
    );
    let v = i5_messages(&first_renew_at(3_026));
    assert!(
        v.iter().any(|m| m.contains("sent no renew until 3026ms")),
        "1 ms late: {v:#?}"
    );
}

/// `w1`'s claim (request 1) sent at 20 ms and granted at once, but `w1`
/// records no deadline at all ("never", as a worker with no fence does):
/// the protocol's is 20 ms plus the safe lease (5,000 ms at 1 % drift,
/// less the 200 ms margin: 4,700 ms), 4,720 ms. Its renew at 2,020 ms is
/// lost in the partition and times out at 4,020 ms; the retry is owed
/// halfway to that deadline, 350 ms later, by 4,370 ms, not half a renew
/// interval later (5,520 ms, past the reclaim), which is what the
/// holder's own "never" would owe.
#[test]
fn a_holder_that_never_fences_owes_its_retry_halfway_to_the_protocols_deadline() {
    let claim = Op::Claim {
        worker: WorkerId::new("w1"),
        queue: "q".into(),
        lease: Millis(5_000),
        max: 1,
    };
    let retry_at = |t: u64| {
        let mut records = vec![run_record(0), request(20, 1, claim.clone(), false)];
        records.extend(w1_holds_job_1(Some(1)));
        records.push(belief(
            20,
            "w1",
            1,
            1,
            BeliefWhat::Claimed {
                until_local: u64::MAX,
                until_true: None,
            },
        ));
        records.push(Record::Link {
            t: 2_000,
            a: "store".into(),
            b: "w1".into(),
            drop_ab: true,
            drop_ba: true,
            held: false,
        });
        records.extend([
            request(2_020, 10, renew_of_w1(), false),
            answer(4_020, 10, gave_up()),
            request(t, 11, renew_of_w1(), false),
            answer(t + 2_000, 11, gave_up()),
            sweep_of_w1(5_100, 2, 3, 5_020),
            end(6_000, false),
        ]);
        History { records }
    };
    let v = i5_messages(&retry_at(4_370));
    assert!(v.is_empty(), "on time: {v:#?}");
    let v = i5_messages(&retry_at(4_371));
    assert!(
        v.iter()
            .any(|m| m.contains("no retry until 4371ms") && m.contains("(4370ms at the latest")),
        "1 ms late: {v:#?}"
    );
}
