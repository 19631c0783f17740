//! The planted scopes two searches are compared on (`same_search.rs`:
//! the hand-rolled breadth-first search against `stateright`'s;
//! `depth_first.rs`: the depth-first search against the breadth-first
//! one), kept once so the two comparisons cover the same worlds.

use leasehold_exhaustive::scope::ScopeBuilder;
use leasehold_exhaustive::{Inv, Plant, Scope};

/// Each planted transition with a scope of one crash where it breaks its
/// invariant, searched reduced and whole.
pub fn crash_plants() -> Vec<(ScopeBuilder, Plant)> {
    let crashing = |w, j| Scope::builder().workers(w).jobs(j).crashes(1);
    vec![
        (crashing(2, 1), Plant::ClaimSkipsStateGuard),
        (crashing(1, 1).lost(1), Plant::ReleaseSkipsRepeatGuard),
        (crashing(1, 1), Plant::ReleaseDropsResult),
        (crashing(1, 1), Plant::SweepSkipsExpiry),
        (crashing(1, 1), Plant::NeverClaims),
        (crashing(1, 1).cancels(1), Plant::CancelOverwritesSucceeded),
        (crashing(1, 1), Plant::ClaimPastBudget),
        (
            Scope::builder().workers(1).jobs(2),
            Plant::ClaimIgnoresSlots,
        ),
    ]
}

/// Each planted transition but I3's, with the smallest scope where it
/// breaks its invariant, and that invariant.
pub fn plants() -> Vec<(ScopeBuilder, Plant, Inv)> {
    let scope = |w, j| Scope::builder().workers(w).jobs(j);
    vec![
        (scope(2, 1), Plant::ClaimSkipsStateGuard, Inv::I1),
        (scope(1, 1).lost(1), Plant::ReleaseSkipsRepeatGuard, Inv::I2),
        (scope(1, 1), Plant::ReleaseDropsResult, Inv::I4),
        (scope(1, 1), Plant::SweepSkipsExpiry, Inv::I5),
        (scope(1, 1), Plant::NeverClaims, Inv::I6),
        (
            scope(1, 1).cancels(1),
            Plant::CancelOverwritesSucceeded,
            Inv::I7,
        ),
        (scope(1, 1), Plant::ClaimPastBudget, Inv::I8),
        (scope(1, 2), Plant::ClaimIgnoresSlots, Inv::I9),
    ]
}

/// The scope of I3's plant (`Plant::DriverIgnoresFence`): a handler that
/// outlives its lease, and a second attempt.
pub fn i3_scope() -> Scope {
    Scope::builder()
        .workers(2)
        .jobs(1)
        .max_job_time(leasehold_core::Millis(2_500))
        .max_attempts(2)
        .build()
        .unwrap()
}
