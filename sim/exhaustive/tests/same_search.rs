//! The breadth-first search (`src/breadth_first.rs`) is the search
//! `stateright`'s breadth-first checker makes: on S1's pinned halves, on
//! `reduced.rs`'s scopes (reduced and whole) and on each planted wrong
//! transition's scope, both count the same distinct and generated states
//! and the same depth, and find the same invariants broken. The path the
//! new search gives is a shortest one: `stateright`, stopped just short of
//! its length, meets no violation of that invariant, and one step further
//! meets it. (`stateright`'s own path is the last violating state it
//! judged, which can be longer: `run::check_stateright`.) One thread and
//! two give the same report; `stateright` runs on one, where its order is
//! breadth-first level by level.

mod scopes;

use leasehold_exhaustive::run::check_stateright;
use leasehold_exhaustive::{check, Inv, Plant, Report, Scope, Verdict, World};
use stateright::{Checker, Model};

/// Whether `stateright`, judging only states at most `steps` steps from
/// an initial one, meets a violation of `inv`.
fn stateright_meets_within(world: World, inv: Inv, steps: usize) -> bool {
    // A state's depth counts the initial state as 1; depths at or past
    // the target are skipped.
    let c = world
        .checker()
        .target_max_depth(steps + 2)
        .spawn_bfs()
        .join();
    c.discovery(inv.name()).is_some()
}

fn same(world: impl Fn() -> World, what: &str) -> Report {
    let new = check(world(), 2);
    // One thread: on more, `stateright` is not level by level (a thread
    // can reach a state by a longer path before another reaches it by a
    // shorter one), so its depth and paths can differ, though not its
    // counts.
    let reference = check_stateright(world(), 1);
    assert_eq!(
        (new.unique_states, new.state_count, new.max_depth),
        (
            reference.unique_states,
            reference.state_count,
            reference.max_depth
        ),
        "{what}: distinct, generated states and depth"
    );
    assert_eq!(
        new.violated, reference.violated,
        "{what}: invariants broken"
    );
    let one = check(world(), 1);
    assert_eq!(
        (one.unique_states, one.state_count, &one.violated),
        (new.unique_states, new.state_count, &new.violated),
        "{what}: one thread"
    );
    match (&new.verdict, &reference.verdict, &one.verdict) {
        (Verdict::Holds, Verdict::Holds, Verdict::Holds) => {}
        (
            Verdict::Violated { inv, path, .. },
            Verdict::Violated {
                path: theirs,
                inv: their_inv,
                ..
            },
            Verdict::Violated { path: p1, .. },
        ) => {
            assert_eq!(path, p1, "{what}: the same path on one thread");
            assert!(
                path.len() <= theirs.len(),
                "{what}: {inv} in {} steps, stateright's {their_inv} in {}",
                path.len(),
                theirs.len()
            );
            assert!(
                !stateright_meets_within(world(), *inv, path.len() - 1),
                "{what}: stateright breaks {inv} in fewer than {} steps",
                path.len()
            );
            assert!(
                stateright_meets_within(world(), *inv, path.len()),
                "{what}: stateright breaks {inv} within {} steps",
                path.len()
            );
        }
        (a, b, c) => panic!("{what}: verdicts differ: {a:?}\n{b:?}\n{c:?}"),
    }
    new
}

#[test]
fn s1_halves_are_the_same_search() {
    let r = same(|| World::new(Scope::s1()), "S1");
    assert_eq!(r.unique_states, 227_848);
    let r = same(|| World::new(Scope::s1_crash()), "S1 crash");
    assert_eq!(r.unique_states, 418_081);
}

#[test]
fn reduced_scopes_are_the_same_search_reduced_and_whole() {
    let scope = Scope::builder()
        .workers(2)
        .jobs(1)
        .crashes(1)
        .build()
        .unwrap();
    same(|| World::new(scope.clone()), "2x1 crash");
    same(|| World::new(scope.clone()).unreduced(), "2x1 crash whole");
    for (scope, plant) in scopes::crash_plants() {
        let scope = scope.build().unwrap();
        let what = format!("{plant:?}");
        same(|| World::with_plant(scope.clone(), plant), &what);
        same(
            || World::with_plant(scope.clone(), plant).unreduced(),
            &format!("{what} whole"),
        );
    }
}

#[test]
fn planted_scopes_are_the_same_search() {
    for (scope, plant, _) in scopes::plants() {
        let scope = scope.build().unwrap();
        same(
            || World::with_plant(scope.clone(), plant),
            &format!("{plant:?}"),
        );
    }
    // I3's plant, explored past the violations it meets first.
    let s = scopes::i3_scope();
    same(
        || World::with_plant(s.clone(), Plant::DriverIgnoresFence).explore_past_violations(),
        "DriverIgnoresFence",
    );
}
