//! The depth-first search over the world's own steps: the same states as
//! the breadth-first search ([`crate::breadth_first`]) with a memory that
//! does not hold a frontier. It visits every reachable state class once
//! against the same visited set of bare fingerprints ([`Fingerprints`]),
//! through the same `actions`, `next_state`, invariants and symmetry-reduced
//! fingerprint ([`canonical`]), and keeps only the current path: an
//! explicit stack (no recursion) of the states from an initial one to the
//! state being expanded, each with its actions and the next one to take.
//! Memory is the fingerprint table plus that stack.
//!
//! Why it exists: S2's breadth-first levels hold millions of whole states
//! and ran out of 8 GB at 12.9 M states (docs/EXHAUSTIVE.md, "S2"), while
//! the visited set costs 8 to 16 bytes a state.
//!
//! What it keeps of the breadth-first search: a state is judged against
//! I1-I9 when first reached, and expanded unless it breaks all nine (the
//! rule `stateright` follows), so the set of visited classes, the
//! generated count and the invariants found broken are those of the
//! breadth-first search whenever the fingerprint is exact (a class's
//! members have the same invariants and successors up to renaming):
//! `tests/depth_first.rs` pins that on the scopes both finish. What it
//! does not keep: its path to a violation is the one on the stack when
//! the violating state was first reached, not necessarily a shortest one,
//! and its depth is the deepest stack, not the number of levels.
//!
//! Two ways to run it: [`search`] goes to the end (every reachable state,
//! every invariant broken: the comparison with the breadth-first search),
//! and [`search_until_violation`] stops at the first violating state it
//! meets and reports it there, with the stack as its path, so a long run
//! (S2) says what it met when it meets it instead of after hours, or
//! never when a cap stops it first.

use crate::breadth_first::{broken, violation_at_end, Broken, ALL_BROKEN};
use crate::fingerprints::Fingerprints;
use crate::ghost::Inv;
use crate::hash::canonical;
use crate::model::{Action, World};
use crate::report::{Report, Verdict, WATCH_EVERY};
use crate::world::State;
use stateright::Model;
use std::time::{Duration, Instant};

/// The fingerprint table's first size, in states (it grows past that).
const FIRST_CAPACITY: usize = 1 << 16;
/// The deepest stack: a bound that only stops a runaway (the world is
/// finite and a state is pushed once; S1's deepest path is a few hundred
/// steps).
pub const MAX_DEPTH: usize = 1 << 20;
/// Generated states between two looks at the clock for the watcher.
const CLOCK_EVERY: usize = 1 << 12;

/// One state on the current path.
struct Frame {
    state: State,
    /// Its actions, in the world's order.
    actions: Vec<Action>,
    /// The index of the next action to take.
    next: usize,
}

/// How far a running search has got, for a watcher (read only: nothing
/// here feeds back into the search).
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Distinct states (up to symmetry) so far.
    pub states: usize,
    /// States generated so far, duplicates included.
    pub generated: usize,
    /// The stack's current depth (states on the current path).
    pub depth: usize,
    /// The deepest stack so far.
    pub max_depth: usize,
    /// Bytes of the fingerprint table.
    pub table_bytes: usize,
    /// Time since the search started.
    pub elapsed: Duration,
}

/// Searches `world` depth-first to the end on one thread, calling
/// `watch` about every [`WATCH_EVERY`].
pub fn search(world: &World, watch: impl FnMut(&Progress)) -> Report {
    run(world, false, watch)
}

/// Searches `world` depth-first on one thread and stops at the first state
/// that breaks an invariant: the report's verdict is that violation (the
/// least invariant the state breaks), its path the stack's (a run of the
/// world, not necessarily a shortest one), `violated` the invariants that
/// state breaks, and its counts those reached so far. Without a violation
/// it is [`search`]'s report.
pub fn search_until_violation(world: &World, watch: impl FnMut(&Progress)) -> Report {
    run(world, true, watch)
}

fn run(world: &World, stop_at_first: bool, mut watch: impl FnMut(&Progress)) -> Report {
    let start = Instant::now();
    // Dense (7/8 before doubling): S2's memory is this table.
    let mut seen = Fingerprints::dense(FIRST_CAPACITY);
    let init = world.init_states();
    let mut generated = init.len();
    let mut max_depth = 0;
    // The first violation met of each invariant: its path's actions and
    // states (copied off the stack when met).
    let mut first: Vec<(Inv, Vec<Action>, Vec<State>)> = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut last_watch = Instant::now();
    let mut since_clock = 0;
    for s in init {
        if !seen.insert(canonical(&s)) {
            continue;
        }
        visit(world, s, &mut stack, &mut first);
        max_depth = max_depth.max(stack.len());
        if stop_at_first && !first.is_empty() {
            break;
        }
        // Bounded: every push is of a state not seen before, and the world
        // is finite; each frame's actions are taken once.
        while let Some(top) = stack.last_mut() {
            let Some(action) = top.actions.get(top.next).cloned() else {
                stack.pop();
                continue;
            };
            top.next += 1;
            let Some(next) = world.next_state(&top.state, action) else {
                continue;
            };
            generated += 1;
            since_clock += 1;
            if since_clock >= CLOCK_EVERY {
                since_clock = 0;
                if last_watch.elapsed() >= WATCH_EVERY {
                    last_watch = Instant::now();
                    watch(&Progress {
                        states: seen.len(),
                        generated,
                        depth: stack.len(),
                        max_depth,
                        table_bytes: seen.table_bytes(),
                        elapsed: start.elapsed(),
                    });
                }
            }
            if !seen.insert(canonical(&next)) {
                continue;
            }
            assert!(stack.len() < MAX_DEPTH, "a path deeper than {MAX_DEPTH}");
            visit(world, next, &mut stack, &mut first);
            max_depth = max_depth.max(stack.len());
            if stop_at_first && !first.is_empty() {
                break;
            }
        }
        if stop_at_first && !first.is_empty() {
            break;
        }
    }
    let elapsed = start.elapsed();
    let mut violated: Vec<Inv> = first.iter().map(|f| f.0).collect();
    violated.sort();
    // The shortest of the paths met, the least invariant among equals.
    let verdict = Inv::ALL
        .into_iter()
        .filter_map(|inv| first.iter().find(|f| f.0 == inv))
        .min_by_key(|f| f.1.len())
        .map_or(Verdict::Holds, |(inv, path, states)| {
            violation_at_end(world, *inv, path.clone(), states.clone())
        });
    Report {
        unique_states: seen.len(),
        state_count: generated,
        max_depth,
        elapsed,
        violated,
        verdict,
        shortest: false,
    }
}

/// Judges `s`, newly reached, with `stack` its path; records the first
/// violation of each invariant it breaks, and pushes it to be expanded
/// unless it breaks all nine.
fn visit(
    world: &World,
    s: State,
    stack: &mut Vec<Frame>,
    first: &mut Vec<(Inv, Vec<Action>, Vec<State>)>,
) {
    let bad: Broken = broken(world, &s);
    if bad != 0 {
        for (k, inv) in Inv::ALL.into_iter().enumerate() {
            if bad & (1 << k) != 0 && !first.iter().any(|f| f.0 == inv) {
                let path = stack
                    .iter()
                    .map(|f| f.actions[f.next - 1].clone())
                    .collect();
                let mut states: Vec<State> = stack.iter().map(|f| f.state.clone()).collect();
                states.push(s.clone());
                first.push((inv, path, states));
            }
        }
    }
    if bad == ALL_BROKEN {
        return;
    }
    let mut actions = Vec::new();
    world.actions(&s, &mut actions);
    stack.push(Frame {
        state: s,
        actions,
        next: 0,
    });
}
