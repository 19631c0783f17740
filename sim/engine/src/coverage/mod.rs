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
pub use registry::{sometimes, MAX_SITUATIONS_PER_RUN};

use leasehold_model::config::SimConfig;
use leasehold_model::history::History;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one run (or many, merged) reached: each situation's name and how
/// many times it was reached, in name order. Situations never reached are
/// absent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Coverage(BTreeMap<String, u64>);

impl Coverage {
    /// Counts one more reach of `name`.
    pub fn mark(&mut self, name: &str) {
        self.add(name, 1);
    }

    /// Counts `n` more reaches of `name`.
    pub fn add(&mut self, name: &str, n: u64) {
        if n == 0 {
            return;
        }
        match self.0.get_mut(name) {
            Some(c) => *c = c.saturating_add(n),
            None => {
                self.0.insert(name.to_string(), n);
            }
        }
    }

    /// How many times `name` was reached (0: never).
    pub fn times(&self, name: &str) -> u64 {
        self.0.get(name).copied().unwrap_or(0)
    }

    /// Whether `name` was reached.
    pub fn reached(&self, name: &str) -> bool {
        self.times(name) > 0
    }

    /// Every reached situation with its count, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// Distinct situations reached.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether nothing was reached.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &Coverage) {
        for (k, n) in other.iter() {
            self.add(k, n);
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
