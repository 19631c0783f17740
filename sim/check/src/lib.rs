//! # leasehold-check
//!
//! The independent judge of a simulation: every invariant of
//! `docs/PROTOCOL.md` (I1–I12) checked over a recorded history, the
//! reference model that judges every answer the store gave (I11), and, with
//! the `jepsen` feature (on by default), the reader and checker of Jepsen
//! EDN histories that `leasehold check --format jepsen` uses, and the
//! exporter that writes a leasehold history as one.
//!
//! It reads only what a run recorded ([`leasehold_model::history`]) and
//! the scenario it ran ([`leasehold_model::config`]); it never tells the
//! system under test what to do.
//!
//! ## Depends on
//! `leasehold-model` and `leasehold-core` (the protocol's own types and
//! names, never its transitions: the reference model is written afresh).
//! It must never depend on the engine (`leasehold-sim`), turmoil, madsim,
//! a store adapter or a command-line crate: what checks the system shares
//! no code with what runs it.

#![warn(missing_docs)]

pub mod checker;
pub mod finding;
#[cfg(feature = "jepsen")]
pub mod jepsen;

pub use checker::{check, Violation};
