//! What a search reports: its verdict and figures ([`Report`],
//! [`Verdict`]), shared by the breadth-first search
//! (`breadth_first.rs`) and the runs that start it (`run.rs`), which both
//! import it.
//! Figures are measurements only: nothing here feeds back into a search.

use crate::ghost::Inv;
use crate::model::Action;
use crate::world::State;
use std::time::Duration;

/// Longest wait between two calls of a `run::check_watched` watcher.
pub const WATCH_EVERY: Duration = Duration::from_secs(1);

/// What a run found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every reachable state satisfies I1-I9.
    Holds,
    /// A bounded search (`run::probe`) stopped at its budget without meeting
    /// a violation: not a proof that none exists.
    NoneWithin {
        /// The budget, in generated states.
        budget: usize,
    },
    /// An invariant is broken; `path` is a run to it (a shortest one when
    /// the report says [`Report::shortest`]).
    Violated {
        /// The invariant.
        inv: Inv,
        /// How the last state breaks it.
        why: String,
        /// The actions from an initial state, in order.
        path: Vec<Action>,
        /// The states along it (the initial one first).
        states: Vec<State>,
    },
}

/// A run's figures and verdict.
#[derive(Clone, Debug)]
pub struct Report {
    /// Distinct states (up to symmetry) visited.
    pub unique_states: usize,
    /// States generated, duplicates included.
    pub state_count: usize,
    /// Longest path explored.
    pub max_depth: usize,
    /// Wall time of the search (a measurement, never an input to it).
    pub elapsed: Duration,
    /// Every invariant with a violation found (the verdict's path is the
    /// shortest among them).
    pub violated: Vec<Inv>,
    /// What it found.
    pub verdict: Verdict,
    /// A violation's path is a shortest one (the breadth-first search's);
    /// `stateright`'s and the depth-first search's need not be.
    pub shortest: bool,
}

impl Report {
    /// Distinct states per second.
    pub fn states_per_sec(&self) -> f64 {
        self.unique_states as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}
