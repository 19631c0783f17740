//! The breadth-first search over the world's own steps ([`World`]'s
//! `actions` and `next_state`, its invariants and its symmetry-reduced
//! fingerprint, [`canonical`]), kept lean: the visited set holds bare
//! fingerprints ([`Fingerprints`]), only the frontier's states are kept,
//! and a visited state leaves behind just its parent's index and the index
//! of the action that reached it, from which the path to a violation is
//! rebuilt by replaying the steps (only when one is found).
//!
//! It is the search `stateright`'s breadth-first checker makes on one
//! thread, state for state: states in first-reached order, a state's
//! successors in the order of its actions, a class's first-reached member
//! kept, every state judged against I1-I9, and a state expanded unless
//! it breaks all nine. It was measured against it on the pinned scopes
//! (`tests/same_search.rs`). Two threads change nothing in it: each batch
//! of the frontier is cut in contiguous parts, each part expanded by a
//! thread against the visited set as it stood before the batch (read
//! only), and the parts' new states merged into the set and the next
//! frontier in order on one thread. So the counts, the states kept and the
//! path found are the same for any thread count, and the path is the
//! least in breadth-first order among the shortest.

use crate::fingerprints::Fingerprints;
use crate::ghost::{holds, Inv};
use crate::hash::canonical;
use crate::model::{Action, World, CONCURRENCY};
use crate::report::{Report, Verdict, WATCH_EVERY};
use crate::world::State;
use stateright::Model;
use std::time::{Duration, Instant};

/// States of the frontier expanded between two merges: enough that the
/// threads' start-up is small against their work, few enough that the
/// unmerged successors take little memory.
const BATCH: usize = 4096;
/// A state's index is a `u32`: the most states one search visits.
const MAX_STATES: usize = u32::MAX as usize;
/// The parent index of an initial state.
const ROOT: u32 = u32::MAX;
/// The fingerprint table's first size, in states (it grows past that).
const FIRST_CAPACITY: usize = 1 << 16;
/// Most search threads (the machine has two cores; more only contend).
pub const MAX_THREADS: usize = 8;

/// A state first reached in a batch, not yet merged.
struct Found {
    fp: u64,
    parent: u32,
    action: u16,
    state: State,
}

/// What one thread's part of a batch gave.
#[derive(Default)]
struct Part {
    found: Vec<Found>,
    /// `(state index, invariants it breaks)`, in the part's order.
    broken: Vec<(u32, Broken)>,
    generated: usize,
}

/// A set of invariants: bit `k` for `Inv::ALL[k]`.
pub(crate) type Broken = u16;
/// Every invariant broken.
pub(crate) const ALL_BROKEN: Broken = (1 << Inv::ALL.len()) - 1;

/// The invariants `s` breaks, by the world's own judgement (the same
/// function its `stateright` properties call).
pub(crate) fn broken(world: &World, s: &State) -> Broken {
    let horizon = world.scope.horizon.0;
    let runnable = |t: &_, l| world.runnable(t, l);
    let mut out = 0;
    for (k, inv) in Inv::ALL.into_iter().enumerate() {
        if holds(inv, s, horizon, CONCURRENCY as usize, &runnable).is_err() {
            out |= 1 << k;
        }
    }
    out
}

/// Expands `part` (frontier states with their indices) into `out`:
/// judges each state, and keeps each successor whose fingerprint neither
/// `seen` nor an earlier successor in this part holds. The part's states
/// are dropped here, on the thread that expanded them.
fn expand(
    world: &World,
    seen: &Fingerprints,
    part: Vec<(State, u32)>,
    local: &mut Fingerprints,
    out: &mut Part,
) {
    local.clear();
    out.found.clear();
    out.broken.clear();
    out.generated = 0;
    let mut actions = Vec::new();
    for (s, index) in part {
        let bad = broken(world, &s);
        if bad != 0 {
            out.broken.push((index, bad));
        }
        // `stateright` stops at a state only when every property is
        // already broken there.
        if bad == ALL_BROKEN {
            continue;
        }
        world.actions(&s, &mut actions);
        for (a, action) in actions.drain(..).enumerate() {
            let Some(next) = world.next_state(&s, action) else {
                continue;
            };
            out.generated += 1;
            let fp = canonical(&next);
            if seen.contains(fp) || !local.insert(fp) {
                continue;
            }
            out.found.push(Found {
                fp,
                parent: index,
                action: u16::try_from(a).expect("fewer than 65,536 actions in a state"),
                state: next,
            });
        }
    }
}

/// Expands `batch` on as many threads as `parts` has buffers, each a
/// contiguous share of it, into those buffers in the batch's order.
fn expand_batch(
    world: &World,
    seen: &Fingerprints,
    mut batch: Vec<(State, u32)>,
    locals: &mut [Fingerprints],
    parts: &mut [Part],
) {
    let threads = parts.len();
    let per = batch.len().div_ceil(threads).max(1);
    // Shares cut from the end, then put back in order.
    let mut shares: Vec<Vec<(State, u32)>> = Vec::with_capacity(threads);
    for k in (1..threads).rev() {
        shares.push(batch.split_off((k * per).min(batch.len())));
    }
    shares.push(batch);
    shares.reverse();
    std::thread::scope(|scope| {
        let mut work = shares
            .into_iter()
            .zip(locals.iter_mut())
            .zip(parts.iter_mut());
        let ((own, own_local), own_part) = work.next().expect("a thread");
        let others: Vec<_> = work
            .map(|((share, local), part)| {
                scope.spawn(move || expand(world, seen, share, local, part))
            })
            .collect();
        expand(world, seen, own, own_local, own_part);
        for h in others {
            h.join().expect("a search thread");
        }
    });
}

/// Searches `world` breadth-first to the end on `threads` threads (1 to
/// [`MAX_THREADS`]; the result does not depend on it), calling
/// `watch(distinct states so far, time so far)` about every
/// [`WATCH_EVERY`].
pub fn search(world: &World, threads: usize, mut watch: impl FnMut(usize, Duration)) -> Report {
    let start = Instant::now();
    let threads = threads.clamp(1, MAX_THREADS);
    let init = world.init_states();
    let mut seen = Fingerprints::with_capacity(FIRST_CAPACITY);
    // Per visited state, by index: its parent's index and the action's.
    let mut parents: Vec<u32> = Vec::new();
    let mut via: Vec<u16> = Vec::new();
    // A level's states in order, in blocks (one per merged batch: no
    // block is copied to grow).
    let mut frontier: Vec<Vec<(State, u32)>> = vec![Vec::new()];
    let mut generated = init.len();
    for (i, s) in init.into_iter().enumerate() {
        if seen.insert(canonical(&s)) {
            frontier[0].push((s, parents.len() as u32));
            parents.push(ROOT);
            via.push(u16::try_from(i).expect("few initial states"));
        }
    }
    // The first state (in breadth-first order) breaking each invariant.
    let mut first: Vec<(Inv, u32, usize)> = Vec::new();
    let mut depth = 0;
    let mut locals: Vec<Fingerprints> = (0..threads)
        .map(|_| Fingerprints::with_capacity(BATCH * 4))
        .collect();
    let mut parts: Vec<Part> = (0..threads).map(|_| Part::default()).collect();
    let mut last_watch = Instant::now();
    // Bounded: each level's states are new, and the world is finite.
    while frontier.iter().any(|b| !b.is_empty()) {
        depth += 1;
        let mut next: Vec<Vec<(State, u32)>> = Vec::new();
        for block in std::mem::take(&mut frontier) {
            let mut block = block.into_iter();
            // Bounded by the block's length.
            loop {
                let batch: Vec<(State, u32)> = block.by_ref().take(BATCH * threads).collect();
                if batch.is_empty() {
                    break;
                }
                // A small batch is not worth a thread.
                let n = if batch.len() < 64 * threads {
                    1
                } else {
                    threads
                };
                expand_batch(world, &seen, batch, &mut locals[..n], &mut parts[..n]);
                let found: usize = parts[..n].iter().map(|p| p.found.len()).sum();
                let mut merged = Vec::with_capacity(found);
                for part in &mut parts[..n] {
                    generated += part.generated;
                    for &(index, bad) in &part.broken {
                        for (k, inv) in Inv::ALL.into_iter().enumerate() {
                            if bad & (1 << k) != 0 && !first.iter().any(|f| f.0 == inv) {
                                first.push((inv, index, depth));
                            }
                        }
                    }
                    for f in part.found.drain(..) {
                        if seen.insert(f.fp) {
                            assert!(parents.len() < MAX_STATES, "more than {MAX_STATES} states");
                            merged.push((f.state, parents.len() as u32));
                            parents.push(f.parent);
                            via.push(f.action);
                        }
                    }
                }
                if !merged.is_empty() {
                    next.push(merged);
                }
                if last_watch.elapsed() >= WATCH_EVERY {
                    last_watch = Instant::now();
                    watch(seen.len(), start.elapsed());
                }
            }
        }
        frontier = next;
    }
    let elapsed = start.elapsed();
    let mut violated: Vec<Inv> = first.iter().map(|f| f.0).collect();
    violated.sort();
    // As `run`'s report of `stateright`'s discoveries: the invariants in
    // order, a later one taken only for a strictly shorter path.
    let mut verdict = Verdict::Holds;
    let mut best = usize::MAX;
    for inv in Inv::ALL {
        if let Some(&(_, index, d)) = first.iter().find(|f| f.0 == inv) {
            if d < best {
                best = d;
                verdict = replayed_violation(world, inv, index, &parents, &via);
            }
        }
    }
    Report {
        unique_states: seen.len(),
        state_count: generated,
        max_depth: depth,
        elapsed,
        violated,
        verdict,
        shortest: true,
    }
}

/// The path to the state of `index`, replayed from its initial state
/// through the recorded action indices, as a violation of `inv`.
fn replayed_violation(
    world: &World,
    inv: Inv,
    index: u32,
    parents: &[u32],
    via: &[u16],
) -> Verdict {
    let mut steps = Vec::new();
    let mut i = index;
    // Bounded by the path's depth: indices fall towards a root.
    while parents[i as usize] != ROOT {
        steps.push(via[i as usize]);
        i = parents[i as usize];
    }
    let mut s = world
        .init_states()
        .swap_remove(usize::from(via[i as usize]));
    let mut path = Vec::new();
    let mut states = vec![s.clone()];
    let mut actions = Vec::new();
    for &a in steps.iter().rev() {
        actions.clear();
        world.actions(&s, &mut actions);
        let action = actions.swap_remove(usize::from(a));
        s = world
            .next_state(&s, action.clone())
            .expect("a step taken in the search");
        path.push(action);
        states.push(s.clone());
    }
    violation_at_end(world, inv, path, states)
}

/// The violation of `inv` at the end of `path`, with
/// the invariant's own account of why (shared by both searches).
pub(crate) fn violation_at_end(
    world: &World,
    inv: Inv,
    path: Vec<Action>,
    states: Vec<State>,
) -> Verdict {
    let last = states.last().expect("a path has a state");
    let why = holds(
        inv,
        last,
        world.scope.horizon.0,
        CONCURRENCY as usize,
        &|t, l| world.runnable(t, l),
    )
    .err()
    .unwrap_or_default();
    Verdict::Violated {
        inv,
        why,
        path,
        states,
    }
}
