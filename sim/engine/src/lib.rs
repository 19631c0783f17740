//! # leasehold-sim
//!
//! The simulation engine: it runs the real leasehold core, worker runtime
//! and scheduler, over a real store (memory, SQLite, PostgreSQL or a user's
//! own, [`stores`]), as simulated hosts ([`hosts`]), each on a simulated
//! machine ([`machine`]: its clock, timers and the run's recorder), on one
//! executor of its own with event-driven time ([`exec`]) and a simulated network ([`net`]),
//! under the seed's faults ([`faults`]), and hands the
//! recorded history to the independent checker and to the coverage
//! observer ([`coverage`], the named situations a run reached). Around that: the runner
//! ([`runner`]), the public harness for a user's own store ([`harness`]),
//! shrinking ([`shrink`]) and violation reports ([`report`]).
//!
//! It re-exports nothing: the scenario model's names are imported from
//! `leasehold-model` and the checker's from `leasehold-check`, the crates
//! that own them.
//!
//! ## Depends on
//! `leasehold-model`, `leasehold-check` (without its Jepsen reader),
//! `leasehold-core`, `leasehold-memory` and tokio (its `sync` channels and
//! `select!` only inside simulated code); the SQL adapters
//! only with the `sql` feature. It must never depend on a command-line
//! crate (clap, indicatif, quick-junit, annotate-snippets): those belong to
//! `leasehold-cli`. And nothing in the model or the checker may depend on
//! it.

#![warn(missing_docs)]

pub mod coverage;
pub mod exec;
pub mod faults;
pub mod harness;
pub mod hosts;
pub mod machine;
pub mod net;
pub mod report;
pub mod runner;
pub mod shrink;
pub mod stores;
