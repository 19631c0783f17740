//! Helpers shared by the engine tests.
#![allow(dead_code)]

use leasehold_model::config::{InvariantId, SimConfig};
use leasehold_model::scenario::load_file;
use leasehold_sim::runner::{run_seed, HarnessError, PreparedConfig, RunOptions, SeedOutcome};
use leasehold_sim::stores::MemoryFactory;
use std::path::Path;
use std::sync::Arc;

/// Loads a scenario file of the library by its path under `scenarios/`,
/// failing the test with the loader's error.
pub fn scenario(rel: &str) -> SimConfig {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(rel);
    load_file(&path)
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
        .config
}

/// Runs a seed, failing the test on a harness error.
pub fn run(cfg: &SimConfig, seed: u64) -> SeedOutcome {
    memory_run(cfg, seed).unwrap_or_else(|e| panic!("{} seed {seed}: harness error: {e}", cfg.name))
}

/// Runs a seed and fails the test unless every invariant held, showing
/// each violation.
pub fn clean_run(cfg: &SimConfig, seed: u64) -> SeedOutcome {
    let out = run(cfg, seed);
    assert!(
        out.violations.is_empty(),
        "{} seed {seed}:\n{}",
        cfg.name,
        describe(&out, cfg)
    );
    out
}

/// One seed on the memory store, through the engine's one door.
pub fn memory_run(cfg: &SimConfig, seed: u64) -> Result<SeedOutcome, HarnessError> {
    let cfg = PreparedConfig::new(cfg.clone())?;
    run_seed(&cfg, seed, &Arc::new(MemoryFactory), RunOptions::default())
}

/// The invariants a run broke, sorted and deduplicated.
pub fn broken(out: &SeedOutcome) -> Vec<InvariantId> {
    let mut v: Vec<InvariantId> = out.violations.iter().map(|v| v.invariant).collect();
    v.sort();
    v.dedup();
    v
}

/// Every violation of a run, as readable text.
pub fn describe(out: &SeedOutcome, cfg: &SimConfig) -> String {
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

/// Asserts that `text` holds each of `needles`, naming the one it lacks.
#[track_caller]
pub fn assert_says(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "no {needle:?} in:\n{text}");
    }
}
