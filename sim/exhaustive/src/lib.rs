//! # leasehold-exhaustive
//!
//! Every interleaving of a small world, checked: W workers each running
//! the core's own lease machine ([`leasehold_core::worker::lease_machine`],
//! [`leasehold_core::worker::release_retries`],
//! [`leasehold_core::worker::slots`]), J jobs in a store that applies the
//! core's own pure transitions, a sweeper, requests and answers that arrive
//! in any order, are lost or are refused (`Conflict`, `Unavailable`), a
//! worker crash with a restart under a fresh identity, and per-host clocks
//! drifting at the bound. Every reachable state is visited once (state
//! hashing with symmetry reduction over workers and jobs, [`hash`]) and
//! I1-I9 are judged on every one by the checker's own definitions
//! ([`ghost`]). The search is breadth-first ([`breadth_first`], over a
//! set of bare fingerprints, [`fingerprints`]), so a violation comes with
//! a shortest path to it; the world is a `stateright` model, whose
//! checkers make the same breadth-first search (the reference it is
//! measured against) and the depth-first probe. A depth-first search
//! ([`depth_first`]) visits the same states holding only the current path
//! besides the fingerprints, for scopes (S2) whose breadth-first frontier
//! does not fit in memory.
//!
//! What it holds: the scope ([`scope`]), the world's state ([`world`]) and
//! steps ([`model`]), the invariants ([`ghost`]; the renews a holder
//! owes, which I5 judges, in [`owed`]), the planted wrong
//! transitions of the negative tests ([`plant`]), the search's reductions
//! and why they lose no violation ([`reduce`]), the searches themselves
//! ([`breadth_first`], [`depth_first`]) and the run report ([`run`]).
//!
//! ## Depends on
//! `leasehold-core` and `stateright`, nothing else of the workspace. It
//! must never depend on the simulation engine (`leasehold-sim`), on a SQL
//! adapter, or on the simulator's checker: it is a second, independent
//! judge of the same core, and shares no invariant code with the other.

#![warn(missing_docs)]

pub mod breadth_first;
pub mod clock;
pub mod counterexample;
pub mod depth_first;
pub mod fingerprints;
pub mod ghost;
pub mod hash;
pub mod ident;
pub mod model;
pub mod owed;
pub mod plant;
pub mod record;
pub mod reduce;
pub mod report;
pub mod run;
pub mod scope;
pub mod shared;
pub mod trace;
pub mod world;

pub use model::{Action, World};
pub use plant::Plant;
pub use record::Inv;
pub use report::{Report, Verdict};
pub use run::check;
pub use scope::{Scope, ScopeBuilder, ScopeError};
