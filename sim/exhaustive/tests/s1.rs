//! Scope S1 on the correct core: every reachable state satisfies I1-I9,
//! within 60 s on the 2-core machine, with a pinned state count (a change
//! to it is a visible decision, like a history hash).

use leasehold_exhaustive::{check, Scope, Verdict, World};
use std::time::Duration;

/// Distinct states of S1 up to symmetry.
const S1_STATES: usize = 1_219_506;

#[test]
fn s1_holds_on_the_correct_core_with_its_pinned_state_count() {
    let r = check(World::new(Scope::s1()), 2);
    if let Verdict::Violated { inv, why, path, .. } = &r.verdict {
        panic!("{inv}: {why}\n{path:#?}");
    }
    assert!(r.violated.is_empty(), "{:?}", r.violated);
    assert_eq!(r.unique_states, S1_STATES, "S1's state count changed");
    assert!(r.elapsed < Duration::from_secs(60), "{:?}", r.elapsed);
}
