//! The `leasehold` command line: `run`, `replay`, `shrink`, `check`.

pub mod parallel;
pub mod plan;
pub mod progress;
