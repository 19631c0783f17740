//! The depth-first search (`src/depth_first.rs`) visits the states the
//! breadth-first search visits: on S1's pinned halves, the no-fault scope,
//! `reduced.rs`'s scopes (reduced and whole) and every planted wrong
//! transition's scope, both count the same distinct and generated states
//! and find the same invariants broken. A difference would be a search
//! bug, or a fingerprint that merges states which are not alike (the two
//! keep different members of a class: the first each reaches). Each
//! planted transition's invariant is found, and the path given is a real
//! run: replayed from its initial state through the world's own steps, it
//! ends in a state that breaks that invariant.

mod scopes;

use leasehold_exhaustive::depth_first::{search, search_until_violation};
use leasehold_exhaustive::ghost::holds;
use leasehold_exhaustive::model::CONCURRENCY;
use leasehold_exhaustive::{check, Inv, Plant, Report, Scope, Verdict, World};
use stateright::Model;

/// Both searches of `world()`, asserted to agree; the depth-first report.
fn same(world: impl Fn() -> World, what: &str) -> Report {
    let bfs = check(world(), 1);
    let dfs = search(&world(), |_| {});
    assert_eq!(
        (dfs.unique_states, dfs.state_count, &dfs.violated),
        (bfs.unique_states, bfs.state_count, &bfs.violated),
        "{what}: distinct, generated states and invariants broken"
    );
    assert!(
        !dfs.shortest,
        "{what}: the depth-first path is not claimed shortest"
    );
    match (&dfs.verdict, &bfs.verdict) {
        (Verdict::Holds, Verdict::Holds) => {}
        (
            Verdict::Violated {
                inv, path, states, ..
            },
            Verdict::Violated { path: p, .. },
        ) => {
            // Not shorter than a shortest path.
            assert!(
                path.len() >= p.len(),
                "{what}: shorter than breadth-first's"
            );
            assert_eq!(states.len(), path.len() + 1, "{what}: a state per step");
            replays(&world(), *inv, path, states, what);
        }
        (a, b) => panic!("{what}: verdicts differ: {a:?}\n{b:?}"),
    }
    dfs
}

/// `path` is a run of `world` from one of its initial states through
/// `states`, and its last state breaks `inv`.
fn replays(
    world: &World,
    inv: Inv,
    path: &[leasehold_exhaustive::Action],
    states: &[leasehold_exhaustive::world::State],
    what: &str,
) {
    assert!(
        world.init_states().contains(&states[0]),
        "{what}: the path starts at an initial state"
    );
    let mut actions = Vec::new();
    for (k, a) in path.iter().enumerate() {
        actions.clear();
        world.actions(&states[k], &mut actions);
        assert!(
            actions.contains(a),
            "{what}: step {k} is one of its state's actions"
        );
        let next = world
            .next_state(&states[k], a.clone())
            .expect("a step the search took");
        assert_eq!(
            next,
            states[k + 1],
            "{what}: step {k} reaches the next state"
        );
    }
    let last = states.last().expect("a state");
    assert!(
        holds(
            inv,
            last,
            world.scope.horizon.0,
            CONCURRENCY as usize,
            &|t, l| { world.runnable(t, l) }
        )
        .is_err(),
        "{what}: the path's last state breaks {inv}"
    );
}

#[test]
fn pinned_scopes_count_the_same_states() {
    let r = same(|| World::new(Scope::s1()), "S1");
    assert_eq!(r.unique_states, 227_848);
    let r = same(|| World::new(Scope::s1_crash()), "S1 crash");
    assert_eq!(r.unique_states, 418_081);
    let none = Scope::builder()
        .workers(2)
        .jobs(1)
        .lost(0)
        .conflicts(0)
        .build()
        .unwrap();
    let r = same(|| World::new(none.clone()), "no faults");
    assert_eq!(r.unique_states, 3_097);
}

#[test]
fn reduced_scopes_count_the_same_states_reduced_and_whole() {
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

/// Each planted wrong transition breaks its own invariant under the
/// depth-first search, as under the breadth-first one (`planted.rs`).
#[test]
fn each_planted_transition_breaks_its_invariant() {
    for (scope, plant, inv) in scopes::plants() {
        let scope = scope.build().unwrap();
        let r = same(
            || World::with_plant(scope.clone(), plant),
            &format!("{plant:?}"),
        );
        assert!(
            r.violated.contains(&inv),
            "{plant:?} breaks {inv}: {:?}",
            r.violated
        );
        let good = search(&World::new(scope), |_| {});
        assert!(
            !good.violated.contains(&inv),
            "without {plant:?}: {:?}",
            good.violated
        );
    }
    // I3's plant, explored past the violations it meets first.
    let s = scopes::i3_scope();
    let r = same(
        || World::with_plant(s.clone(), Plant::DriverIgnoresFence).explore_past_violations(),
        "DriverIgnoresFence",
    );
    assert!(r.violated.contains(&Inv::I3), "{:?}", r.violated);
    let good = search(&World::new(s), |_| {});
    assert!(!good.violated.contains(&Inv::I3), "{:?}", good.violated);
}

/// The depth-first search run to stop at the first violation
/// (`search_until_violation`, what `leasehold exhaust --search
/// depth-first` runs) stops on each planted scope with the invariant the
/// breadth-first search reports, a path that replays through the world's
/// steps to a state breaking it, and fewer states than the whole search;
/// on the correct core it runs to the end and counts what the
/// breadth-first search counts.
#[test]
fn stopping_at_the_first_violation_reports_the_breadth_first_invariant() {
    for (scope, plant, inv) in scopes::plants() {
        let scope = scope.build().unwrap();
        let what = format!("{plant:?}");
        let world = World::with_plant(scope.clone(), plant);
        let bfs = check(world.clone(), 1);
        let Verdict::Violated { inv: want, .. } = &bfs.verdict else {
            panic!("{what}: breadth-first finds no violation");
        };
        // (A plant may break another invariant first: a cancel over a
        // success breaks I4 on its shortest path, and I7.)
        assert!(bfs.violated.contains(&inv), "{what}: {:?}", bfs.violated);
        let dfs = search_until_violation(&world, |_| {});
        let Verdict::Violated {
            inv: got,
            path,
            states,
            ..
        } = &dfs.verdict
        else {
            panic!("{what}: depth-first stopped without a violation");
        };
        assert_eq!(got, want, "{what}: the same invariant as breadth-first");
        assert!(!dfs.shortest, "{what}: not claimed shortest");
        assert!(dfs.violated.contains(got), "{what}: {:?}", dfs.violated);
        assert!(
            dfs.violated.iter().all(|i| bfs.violated.contains(i)),
            "{what}: {:?} within {:?}",
            dfs.violated,
            bfs.violated
        );
        assert!(
            dfs.unique_states < bfs.unique_states,
            "{what}: stopped early ({} of {})",
            dfs.unique_states,
            bfs.unique_states
        );
        replays(&world, *got, path, states, &what);
        let good = search_until_violation(&World::new(scope.clone()), |_| {});
        let whole = check(World::new(scope), 1);
        assert_eq!(good.verdict, Verdict::Holds, "{what}: without the plant");
        assert_eq!(good.unique_states, whole.unique_states, "{what}");
    }
}
