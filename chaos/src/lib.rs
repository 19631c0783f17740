//! # leasehold-chaos
//!
//! leasehold under real faults: real worker processes on a real PostgreSQL
//! database or SQLite file, by default in production's shape (several
//! `Worker`s per process on one store, several queues with limits, the
//! default concurrency, LISTEN/NOTIFY, `Coalescing`: [`shape`]), and a
//! seeded nemesis that SIGKILLs them (also while several Workers' batches
//! are in flight), SIGSTOPs them for longer than the lease, terminates
//! their PostgreSQL backends or just their LISTEN connection, restarts
//! PostgreSQL in immediate mode, or kills SQLite writers mid-transaction
//! (also while other Workers wait); then a healing phase, and checks of what was left
//! behind: the audit log (`lease_events`) through the simulator's offline
//! checker, the final rows, and the side effects every handler appended to
//! its process's log ([`checks`] lists them).
//!
//! Run it as `leasehold chaos --store postgres|sqlite …` or
//! `leasehold-chaos …` (the same arguments). The nemesis schedule is a
//! function of the seed ([`schedule`]) and replays exactly; what the
//! processes and the database were doing when a fault landed does not.
//!
//! ## The production example
//! The worker process, `src/bin/leasehold-chaos-worker/main.rs`, is written
//! as a production deployment would be: `PgStore` from a URL with
//! migrations, a `Worker` with a typed (serde) handler, a `Sweeper`,
//! graceful shutdown on SIGTERM that returns running leases, tracing
//! through `tracing-subscriber`, and a fresh worker identity per process
//! start. Its chaos-only parts (the side-effect log and the planted bug)
//! live in its `handler.rs` and are marked as such.
//!
//! ## Depends on
//! `leasehold-core`, the two SQL adapters, and the simulator's model and
//! checker (`leasehold-model`, `leasehold-check`) to judge what the
//! processes recorded. It must never depend on the simulation engine
//! (`leasehold-sim`) or a simulation runtime (madsim, turmoil): these are
//! real processes on real clocks.

#![warn(missing_docs)]

pub mod checks;
pub mod cli;
pub mod config;
pub mod effects;
pub mod error;
pub mod fault_kind;
pub mod fleet;
pub mod inflight;
pub mod job;
pub mod nemesis;
pub mod orchestrator;
pub mod report;
pub mod rng;
pub mod schedule;
pub mod shape;
pub mod signals;
pub mod store;
pub mod store_target;

pub use config::{ChaosConfig, FaultKind, StoreTarget};
pub use error::ChaosError;
pub use orchestrator::{run_blocking, ChaosOutcome};
pub use shape::Shape;
