//! # leasehold-model
//!
//! What a simulation *is*, with no engine to run it and no checker to judge
//! it: the scenario types and their validation (one place: [`config`],
//! [`bounds`], [`feasible`], [`schedules`], the located [`scenario`]
//! loader), durations, per-host clock models, the seeded rng, the history
//! records a run writes and the wire types its hosts exchange (with the
//! bookkeeping of a merged batch on the wire, [`merged_batch`]), the
//! invariant ids and the named situations a run may reach, the simulated workload's key and payload format, the
//! built-in scenarios, and the one scenario → core configuration builder
//! ([`protocol`]).
//!
//! Everything here is a pure function of a scenario and a seed: no I/O
//! (beyond framing a wire message onto a byte stream), no wall clock, no OS
//! randomness.
//!
//! ## Depends on
//! `leasehold-core` (the configuration types the scenario maps onto) and
//! nothing of the simulator. It must never depend on the checker
//! (`leasehold-check`), the engine (`leasehold-sim`), turmoil, madsim or
//! any command-line crate: both the checker and the engine build on it, and
//! neither may reach the other through it.

#![warn(missing_docs)]

pub mod bounds;
pub mod builtin;
pub mod catalogue;
pub mod clock;
pub mod config;
pub mod duration;
pub mod feasible;
pub mod history;
pub mod merged_batch;
pub mod protocol;
pub mod rng;
pub mod scenario;
pub mod schedules;
pub mod situation;
pub mod store_kind;
pub mod timing;
pub mod wire;
pub mod wire_store;
pub mod workload;
