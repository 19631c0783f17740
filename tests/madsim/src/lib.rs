//! # leasehold-madsim-tests
//!
//! leasehold's real worker runtime inside a [madsim] simulation.
//!
//! Built with `RUSTFLAGS="--cfg madsim"`, `leasehold-core` takes its `tokio`
//! from madsim-tokio (see `core/Cargo.toml`), so the core's own
//! [`leasehold_core::TokioRuntime`] runs on madsim's clock, timers and
//! executor, with no `cfg(madsim)` anywhere in the core. This crate then
//! runs a store node (the memory adapter), worker nodes (the real
//! `leasehold_core::Worker`) and a sweeper node (the real `Sweeper`) as
//! madsim nodes talking over madsim's network, injects madsim's own faults
//! (node kill and restart, pause, partitions, packet loss, latency),
//! records the same history as the simulator (`leasehold-sim`) and checks
//! it with the same checker.
//!
//! - `scenario`: what a run simulates, and the bug catalogue's madsim
//!   scenarios;
//! - `run`: one seed (`run::simulate`), and the seed loops the tests use
//!   (`tests/madsim.rs`);
//! - `net`, `batch` and `wake`: the store over madsim's network, a worker
//!   node's merged batches as one message each, and wake-ups as messages.
//!
//! Run it with `scripts/test-madsim.sh`, or
//! `CARGO_TARGET_DIR=target/madsim RUSTFLAGS="--cfg madsim" cargo test -p leasehold-madsim-tests`.
//!
//! ## One clock
//! madsim keeps one clock per simulation: every node reads the same time.
//! There is no per-host skew or drift, so I3 (a), exclusive belief, is
//! asserted on every seed and always under the spec's timing assumption
//! (`timing_assumption_broken` is never set), and I5 never has a store
//! clock fault to excuse a reclaim: every reclaim must be explained by a
//! kill, a pause, a partition or a loss burst. The catalogue bugs that need
//! a skewed clock (`worker-wall-clock-deadline`, `sweeper-own-clock`)
//! cannot show under madsim; the simulator (`leasehold-sim`) covers them.
//!
//! In a normal build (without `--cfg madsim`) this crate is empty; its
//! tests there are the turmoil user's example and the check that
//! docs/EMBEDDING.md shows both examples as compiled.
//!
//! [madsim]: https://docs.rs/madsim
//!
//! ## Depends on
//! `leasehold-core`, `leasehold-memory`, madsim, and the simulator's model
//! and checker (`leasehold-model`, `leasehold-check`), whose wire table,
//! history records and checks it shares with the simulator. It must never
//! depend on the simulation engine (`leasehold-sim`) or a SQL adapter
//! (neither builds under `--cfg madsim`).

#![warn(missing_docs)]

#[cfg(madsim)]
mod batch;
#[cfg(madsim)]
mod faults;
#[cfg(madsim)]
mod net;
#[cfg(madsim)]
mod nodes;
#[cfg(madsim)]
pub mod run;
#[cfg(madsim)]
pub mod scenario;
#[cfg(madsim)]
mod wake;
#[cfg(madsim)]
mod world;
