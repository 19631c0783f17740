//! Runs a world breadth-first to the end and reports: states, time, and
//! the first violated invariant with a shortest path to it (the search in
//! [`crate::breadth_first`]; [`check_stateright`] makes the same search
//! with `stateright`'s checker, kept as its reference); or probes it
//! depth-first, up to a state budget, for a violation that lies deep in a
//! scope too large to search whole ([`probe`]).

use crate::ghost::{holds, Inv};
use crate::model::{World, CONCURRENCY};
use crate::report::{Report, Verdict, WATCH_EVERY};
use stateright::{Checker, HasDiscoveries, Model};
use std::time::{Duration, Instant};

/// Checks `world` breadth-first on `threads` threads (nothing found
/// depends on them: the counts, the verdict and its path are the same).
pub fn check(world: World, threads: usize) -> Report {
    check_watched(world, threads, |_, _| {})
}

/// [`check`], calling `watch(distinct states so far, time so far)` about
/// every [`WATCH_EVERY`] while the search runs (for progress output; it
/// reads counters only and cannot change what is explored).
pub fn check_watched(world: World, threads: usize, watch: impl FnMut(usize, Duration)) -> Report {
    crate::breadth_first::search(&world, threads, watch)
}

/// The same search made by `stateright`'s breadth-first checker on
/// `threads` threads: the reference [`check`] is measured against
/// (`tests/same_search.rs`). The state count does not depend on the
/// threads. `stateright` keeps, for each invariant, the path of the last
/// violating state it judged (each discovery replaces the one before), so
/// its path is the one of the deepest violating state its order met, not
/// necessarily a shortest one; on more than one thread that order varies.
pub fn check_stateright(world: World, threads: usize) -> Report {
    check_stateright_watched(world, threads, |_, _| {})
}

/// [`check_stateright`], watched as [`check_watched`] is.
pub fn check_stateright_watched(
    world: World,
    threads: usize,
    mut watch: impl FnMut(usize, Duration),
) -> Report {
    let start = Instant::now();
    let checker = world.checker().threads(threads.max(1)).spawn_bfs();
    wait(checker, start, &mut watch)
}

/// Searches `world` depth-first on one thread (the same order on every
/// run) until an invariant breaks or about `max_states` states were
/// generated. Not a proof: stopped at the budget, it says
/// [`Verdict::NoneWithin`]; [`Verdict::Holds`] only when the search ended
/// before it (every reachable state visited). The path of a violation is the
/// one the search went down, not a shortest one. For a scope whose whole
/// search does not fit (the full S1: 12.7 M states), it reaches
/// states a breadth-first run meets only near its end.
pub fn probe(world: World, max_states: usize, mut watch: impl FnMut(usize, Duration)) -> Report {
    let start = Instant::now();
    let checker = world
        .checker()
        .threads(1)
        .target_state_count(max_states.max(1))
        .finish_when(HasDiscoveries::AnyFailures)
        .spawn_dfs();
    let mut r = wait(checker, start, &mut watch);
    if r.verdict == Verdict::Holds && r.state_count >= max_states.max(1) {
        r.verdict = Verdict::NoneWithin { budget: max_states };
    }
    r
}

/// Waits for `checker` to finish, watching it, and reports what it found.
fn wait(
    checker: impl Checker<World>,
    start: Instant,
    watch: &mut impl FnMut(usize, Duration),
) -> Report {
    let horizon = checker.model().scope.horizon.0;
    // Polled in short sleeps so a small scope returns at once; bounded by
    // the search itself, which ends (the world is finite).
    let mut last = Instant::now();
    while !checker.is_done() {
        std::thread::sleep(Duration::from_millis(20));
        if last.elapsed() >= WATCH_EVERY {
            last = Instant::now();
            watch(checker.unique_state_count(), start.elapsed());
        }
    }
    let checker = checker.join();
    let elapsed = start.elapsed();
    let mut verdict = Verdict::Holds;
    let mut violated = Vec::new();
    for inv in Inv::ALL {
        if let Some(path) = checker.discovery(inv.name()) {
            violated.push(inv);
            let states = path.clone().into_states();
            let last = states.last().expect("a path has a state");
            let model = checker.model();
            let why = holds(inv, last, horizon, CONCURRENCY as usize, &|t, l| {
                model.runnable(t, l)
            })
            .err()
            .unwrap_or_default();
            let path = path.into_actions();
            let shorter = match &verdict {
                Verdict::Violated { path: p, .. } => path.len() < p.len(),
                _ => true,
            };
            if shorter {
                verdict = Verdict::Violated {
                    inv,
                    why,
                    path,
                    states,
                };
            }
        }
    }
    Report {
        unique_states: checker.unique_state_count(),
        state_count: checker.state_count(),
        max_depth: checker.max_depth(),
        elapsed,
        violated,
        verdict,
        shortest: false,
    }
}
