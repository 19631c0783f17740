//! A negative test per invariant: a wrong transition planted in the
//! checker's world fails the check with that invariant, and the same
//! scope without the plant holds it (so the plant, not the scope, is what
//! the check caught).

use leasehold_core::Millis;
use leasehold_exhaustive::{check, Inv, Plant, Scope, World};

fn scope(workers: u8, jobs: u8) -> leasehold_exhaustive::ScopeBuilder {
    Scope::builder().workers(workers).jobs(jobs)
}

fn caught(scope: Scope, plant: Plant, inv: Inv) {
    caught_in(World::with_plant(scope.clone(), plant), scope, plant, inv);
}

fn caught_in(world: World, scope: Scope, plant: Plant, inv: Inv) {
    let bad = check(world, 1);
    assert!(
        bad.violated.contains(&inv),
        "{plant:?} must break {inv}: found {:?}",
        bad.violated
    );
    let good = check(World::new(scope), 1);
    assert!(
        !good.violated.contains(&inv),
        "without {plant:?}, {inv} holds: found {:?}",
        good.violated
    );
}

#[test]
fn i1_a_claim_that_skips_the_state_guard() {
    caught(
        scope(2, 1).build().unwrap(),
        Plant::ClaimSkipsStateGuard,
        Inv::I1,
    );
}

#[test]
fn i2_a_release_applied_twice() {
    caught(
        scope(1, 1).lost(1).build().unwrap(),
        Plant::ReleaseSkipsRepeatGuard,
        Inv::I2,
    );
}

#[test]
fn i3_a_driver_that_ignores_the_fence() {
    // The lease the driver stops renewing is reclaimed from a live holder
    // (I5) before the second worker claims it: explore past that.
    let s = scope(2, 1)
        .max_job_time(Millis(2_500))
        .max_attempts(2)
        .build()
        .unwrap();
    let world = World::with_plant(s.clone(), Plant::DriverIgnoresFence).explore_past_violations();
    caught_in(world, s, Plant::DriverIgnoresFence, Inv::I3);
}

#[test]
fn i4_a_release_that_drops_the_result() {
    caught(
        scope(1, 1).build().unwrap(),
        Plant::ReleaseDropsResult,
        Inv::I4,
    );
}

#[test]
fn i5_a_sweep_that_skips_the_expiry() {
    caught(
        scope(1, 1).build().unwrap(),
        Plant::SweepSkipsExpiry,
        Inv::I5,
    );
}

/// The owed-retry I5 (`owed.rs`): the driver retries a failed renew a
/// whole interval late, and a second fault then lets the lease lapse. A
/// lost message is among the faults, so only the renew schedule's
/// judgement (not "none of its messages was lost") can catch it.
#[test]
fn i5_a_driver_whose_renew_retry_waits_a_full_interval() {
    let s = scope(1, 1).lost(2).conflicts(1).build().unwrap();
    caught(s.clone(), Plant::RetryWaitsFullInterval, Inv::I5);
    let bad = check(World::with_plant(s, Plant::RetryWaitsFullInterval), 1);
    match &bad.verdict {
        leasehold_exhaustive::Verdict::Violated { inv, why, .. } => {
            assert_eq!(*inv, Inv::I5);
            assert!(why.contains("never sent the renew it owed"), "{why}");
        }
        other => panic!("expected I5, got {other:?}"),
    }
}

#[test]
fn i6_workers_that_never_claim() {
    caught(scope(1, 1).build().unwrap(), Plant::NeverClaims, Inv::I6);
}

#[test]
fn i7_a_cancel_that_overwrites_a_success() {
    caught(
        scope(1, 1).cancels(1).build().unwrap(),
        Plant::CancelOverwritesSucceeded,
        Inv::I7,
    );
}

#[test]
fn i8_a_claim_past_the_budget() {
    caught(
        scope(1, 1).build().unwrap(),
        Plant::ClaimPastBudget,
        Inv::I8,
    );
}

#[test]
fn i9_a_driver_that_claims_without_slots() {
    caught(
        scope(1, 2).build().unwrap(),
        Plant::ClaimIgnoresSlots,
        Inv::I9,
    );
}
