//! The checks over store events alone (`check_store_events`) on
//! hand-written lives of a job: a clean life passes, and each break of
//! I1, I2, I4, I7, I8 and I9 is reported (I8 included, which no
//! catalogue variant can produce).

mod histories;

use histories::{
    cancelled, claim, enq, failed, invariants, ok, released, swept, w1_fails_retryably,
};
use leasehold_check::checker::check_store_events;
use leasehold_core::{Event, JobState, Token};
use leasehold_model::config::InvariantId;

/// Job 1 enqueued, then claimed by `w1` (token 1), then `rest`.
fn w1_holds(rest: Vec<Event>) -> Vec<Event> {
    [vec![enq(1, 0), claim(1, 1, "w1", 1, 10, 2)], rest].concat()
}

#[test]
fn a_clean_life_passes_every_events_check() {
    let e = [
        enq(1, 0),
        claim(1, 1, "w1", 1, 10, 2),
        w1_fails_retryably(520),
        claim(1, 2, "w2", 2, 600, 4),
        released(1, 2, "w2", ok(b"r"), JobState::Succeeded, 700, 5, None),
        cancelled(1, 2, JobState::Succeeded, JobState::Succeeded, 800, 5),
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
    let e = w1_holds(vec![claim(1, 2, "w2", 2, 20, 3)]);
    assert!(invariants(&e, None).contains(&InvariantId::I1));
    let e = w1_holds(vec![
        swept(1, 1, "w1", 30, 3, 15),
        claim(1, 1, "w2", 2, 40, 4),
    ]);
    assert_eq!(invariants(&e, None), vec![InvariantId::I1]);
}

#[test]
fn i2_stale_token_release_and_second_terminal_transition() {
    let e = w1_holds(vec![
        swept(1, 1, "w1", 30, 3, 15),
        claim(1, 2, "w2", 2, 40, 4),
        released(1, 1, "w1", ok(b"old"), JobState::Succeeded, 50, 5, None),
    ]);
    assert!(invariants(&e, None).contains(&InvariantId::I2));
    let e = w1_holds(vec![
        released(1, 1, "w1", ok(b"a"), JobState::Succeeded, 20, 3, None),
        released(1, 1, "w1", failed("e", false), JobState::Dead, 30, 4, None),
    ]);
    assert!(invariants(&e, None).contains(&InvariantId::I2));
}

#[test]
fn i4_and_i7_a_late_cancel_that_overwrites_a_success() {
    let e = w1_holds(vec![
        released(1, 1, "w1", ok(b"r"), JobState::Succeeded, 20, 3, None),
        cancelled(1, 1, JobState::Succeeded, JobState::Cancelled, 30, 4),
    ]);
    let inv = invariants(&e, None);
    assert!(inv.contains(&InvariantId::I7), "{inv:?}");
    assert!(inv.contains(&InvariantId::I4), "{inv:?}");
}

#[test]
fn i7_a_job_cancelled_while_pending_is_claimed_later() {
    let e = vec![
        enq(1, 0),
        cancelled(1, 0, JobState::Pending, JobState::Cancelled, 5, 2),
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
    let e = w1_holds(vec![
        w1_fails_retryably(5_000),
        claim(1, 2, "w1", 2, 100, 4),
    ]);
    assert_eq!(
        invariants(&e, None),
        vec![InvariantId::I8],
        "claimed before run_at"
    );
    let e = w1_holds(vec![released(
        1,
        1,
        "w1",
        failed("x", true),
        JobState::Dead,
        20,
        3,
        None,
    )]);
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
