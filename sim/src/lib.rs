//! # leasehold-sim
//!
//! Deterministic simulation of the real leasehold core and worker runtime
//! under network, clock and process faults, with an independent invariant
//! checker.

#![warn(missing_docs)]

pub mod bounds;
pub mod catalogue;
// The command line drives the SQL stores too.
#[cfg(feature = "sql")]
pub mod cli;
pub mod config;
pub mod duration;
pub mod feasible;
pub mod harness;
pub mod jepsen;
pub mod junit;
pub mod scenario;
pub mod schedules;
pub mod shrink;
pub mod timeline;

// Engine (issue 4).
pub mod checker;
pub mod clock;
pub mod faults;
pub mod history;
pub mod hosts;
pub mod net;
pub mod report;
pub mod rng;
pub mod runner;
pub mod stores;
