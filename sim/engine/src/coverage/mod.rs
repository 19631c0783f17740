//! Coverage: the named situations ("sometimes" points) a run reached, and
//! how often.
//!
//! A situation is a state the library must reach at least once to test
//! what it was built to test (a renew answered within a tick of the fence,
//! a release retried after `Conflict` near expiry, a claim's answer lost
//! and the job swept, ...). Never reaching one is a test gap, not a bug;
//! a scenario may declare the ones it exists to reach (`[coverage]
//! expects`), and `leasehold run` fails a scenario none of whose seeds
//! reaches a declared one. `leasehold_model::situation::BUILTIN` lists the
//! built-in ones with their meanings; `docs/COVERAGE.md` says which
//! scenarios reach each.
//!
//! ## Two sources
//! - [`observe`]: the built-in situations, read off the run's recorded
//!   history after the run (one pass to index it, then one observer per
//!   family: `beliefs`, `releases`, `claims`, `store_host`, `hosts`,
//!   `schedules`, `pruning`).
//! - [`sometimes`]: a user's own situations, marked from simulated code
//!   (a handler, a store the simulation polls on its own thread) into the
//!   current run's registry.
//!
//! ## Near misses
//! For the situations defined by a threshold or a coincidence (a renew
//! within a tick of the fence, a cancel racing a claim, a store crash just
//! before a deadline, ...), the observers also record by how much a run
//! that missed one missed it ([`Coverage::distance`], [`Coverage::misses`];
//! `nearly` (in `registry`) for a user's own), read off the same history. The guided
//! explorer steers its spare runs by them toward situations no run reached.
//!
//! ## Observation only
//! Reaching a situation changes nothing the run does: the observers read
//! the finished history, and [`sometimes`] writes into a per-run map the
//! simulation never reads (no rng draw, message, timer or record). The
//! coverage is not part of the history, so history hashes are the same
//! with or without it.
//!
//! ## Independence
//! These files read the history and the scenario only (`leasehold-model`,
//! `leasehold-core`'s types); they never import the checker
//! (`leasehold-check`), and the checker never imports them
//! (`tests/coverage_independent.rs` holds both to that).

mod beliefs;
mod claims;
mod hosts;
mod index;
mod pruning;
mod registry;
mod releases;
mod schedules;
mod store_host;

pub(crate) use registry::enter;
pub use registry::{nearly, sometimes, MAX_SITUATIONS_PER_RUN};

use leasehold_model::config::SimConfig;
use leasehold_model::history::History;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one run (or many, merged) reached: each situation's name and how
/// many times it was reached, in name order. Situations never reached are
/// absent.
///
/// Beside the counts, how near the run came to the situations it missed
/// ([`Coverage::distance`]): for a situation defined by a threshold or a
/// coincidence, the smallest amount by which the run missed it (in the
/// situation's own unit, milliseconds for the timed ones). Only the counts
/// are serialized (the `coverage` of a report is the same as before the
/// distances were kept); a report that wants the distances asks
/// [`Coverage::misses`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Coverage {
    reached: BTreeMap<String, u64>,
    /// Each situation missed and measured: the smallest miss (> 0).
    #[serde(skip)]
    near: BTreeMap<String, u64>,
}

impl Coverage {
    /// Counts one more reach of `name`.
    pub fn mark(&mut self, name: &str) {
        self.add(name, 1);
    }

    /// Records that the run came within `distance` of `name` (0: reached
    /// it, counted as [`Coverage::mark`]); the smallest distance is kept.
    pub fn near_miss(&mut self, name: &str, distance: u64) {
        if distance == 0 {
            self.mark(name);
            return;
        }
        match self.near.get_mut(name) {
            Some(d) => *d = (*d).min(distance),
            None => {
                self.near.insert(name.to_string(), distance);
            }
        }
    }

    /// How near the run came to `name`: `Some(0)` when it reached it, the
    /// smallest miss recorded when it did not, `None` when nothing measured
    /// a miss.
    pub fn distance(&self, name: &str) -> Option<u64> {
        if self.reached(name) {
            return Some(0);
        }
        self.near.get(name).copied()
    }

    /// Every situation missed with a measured distance (never one reached),
    /// with its smallest miss, in name order.
    pub fn misses(&self) -> impl Iterator<Item = (&str, u64)> {
        self.near
            .iter()
            .filter(|(k, _)| !self.reached.contains_key(*k))
            .map(|(k, v)| (k.as_str(), *v))
    }

    /// Distinct names held, reached or measured (what the registry bounds).
    pub(crate) fn names(&self) -> usize {
        self.reached.len() + self.near.len()
    }

    /// Whether `name` is held, reached or measured.
    pub(crate) fn holds(&self, name: &str) -> bool {
        self.reached.contains_key(name) || self.near.contains_key(name)
    }

    /// Counts `n` more reaches of `name`.
    pub fn add(&mut self, name: &str, n: u64) {
        if n == 0 {
            return;
        }
        match self.reached.get_mut(name) {
            Some(c) => *c = c.saturating_add(n),
            None => {
                self.reached.insert(name.to_string(), n);
            }
        }
    }

    /// How many times `name` was reached (0: never).
    pub fn times(&self, name: &str) -> u64 {
        self.reached.get(name).copied().unwrap_or(0)
    }

    /// Whether `name` was reached.
    pub fn reached(&self, name: &str) -> bool {
        self.times(name) > 0
    }

    /// Every reached situation with its count, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.reached.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// Distinct situations reached.
    pub fn len(&self) -> usize {
        self.reached.len()
    }

    /// Whether nothing was reached.
    pub fn is_empty(&self) -> bool {
        self.reached.is_empty()
    }

    /// Adds every count of `other`, and keeps the smaller of each distance.
    pub fn merge(&mut self, other: &Coverage) {
        for (k, n) in other.iter() {
            self.add(k, n);
        }
        for (k, &d) in &other.near {
            self.near_miss(k, d);
        }
    }
}

/// Where the observers mark the built-in situations of one history.
struct Marks(Coverage);

impl Marks {
    fn hit(&mut self, name: &'static str) {
        debug_assert!(
            leasehold_model::situation::builtin(name).is_some(),
            "{name} is not a built-in situation"
        );
        self.0.mark(name);
    }

    /// Records that the run missed `name` by `by` (in the situation's own
    /// unit; 0 is a reach, and observers mark a reach with [`Marks::hit`]).
    fn miss(&mut self, name: &'static str, by: u64) {
        debug_assert!(
            leasehold_model::situation::builtin(name).is_some(),
            "{name} is not a built-in situation"
        );
        if by > 0 {
            self.0.near_miss(name, by);
        }
    }
}

/// The built-in situations `history` (a run of `cfg`) reached.
pub fn observe(history: &History, cfg: &SimConfig) -> Coverage {
    let ix = index::Index::of(history);
    let mut marks = Marks(Coverage::default());
    beliefs::observe(&ix, cfg, &mut marks);
    releases::observe(&ix, cfg, &mut marks);
    claims::observe(&ix, cfg, &mut marks);
    store_host::observe(&ix, cfg, &mut marks);
    hosts::observe(&ix, cfg, &mut marks);
    schedules::observe(&ix, cfg, &mut marks);
    pruning::observe(&ix, &mut marks);
    marks.0
}
