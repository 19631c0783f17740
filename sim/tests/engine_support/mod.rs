//! Helpers shared by the engine tests.
#![allow(dead_code)]

use leasehold_sim::config::{InvariantId, SimConfig};
use leasehold_sim::runner::{run_seed, RunOutcome};

/// Runs a seed, failing the test on a harness error.
pub fn run(cfg: &SimConfig, seed: u64) -> RunOutcome {
    run_seed(cfg, seed).unwrap_or_else(|e| panic!("{} seed {seed}: harness error: {e}", cfg.name))
}

/// The invariants a run broke, sorted and deduplicated.
pub fn broken(out: &RunOutcome) -> Vec<InvariantId> {
    let mut v: Vec<InvariantId> = out.violations.iter().map(|v| v.invariant).collect();
    v.sort();
    v.dedup();
    v
}

/// Every violation of a run, as readable text.
pub fn describe(out: &RunOutcome, cfg: &SimConfig) -> String {
    out.violations
        .iter()
        .map(|v| leasehold_sim::report::violation_report(v, cfg, out.seed, None))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first seed in `seeds` whose run breaks `inv`, if any.
pub fn first_catching(
    cfg: &SimConfig,
    inv: InvariantId,
    seeds: std::ops::Range<u64>,
) -> Option<u64> {
    seeds
        .into_iter()
        .find(|&s| broken(&run(cfg, s)).contains(&inv))
}
