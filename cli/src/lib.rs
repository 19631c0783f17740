//! # leasehold-cli
//!
//! The `leasehold` command-line tool as a library (the binary is a thin
//! `main`): `run` (sharded over machines too), `merge` (the shards'
//! verdict), `explore` (continuous exploration into a corpus), `replay`,
//! `shrink`, `check` (leasehold and Jepsen histories), `export`, `chaos`
//! (real processes, from `leasehold-chaos`), and the operator's commands
//! on a real store (`migrate`, `status`, `list`, `show`, `retry`,
//! `cancel`), with everything that exists only for people and CI systems:
//! argument parsing (clap), progress bars (indicatif), JUnit XML
//! ([`junit`]), the HTML timeline ([`timeline`]) and annotated scenario
//! errors ([`diagnostic`]).
//!
//! ## Depends on
//! The engine (`leasehold-sim`, with the bug catalogue and the SQL
//! stores), the checker (`leasehold-check`, with its Jepsen reader), the
//! model, the chaos crate, and the SQL adapters (`leasehold-sqlite`,
//! `leasehold-postgres`, `leasehold-sql`) for the operator's commands. It
//! is the top of the crate graph: no other crate of the workspace may
//! depend on it, and it is the only one that may depend on clap,
//! indicatif, quick-junit or annotate-snippets.

#![warn(missing_docs)]

pub mod cli;
pub mod diagnostic;
pub mod junit;
pub mod timeline;

pub use cli::main;
