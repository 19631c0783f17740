//! Near misses: a run that missed a situation defined by a threshold
//! records by how much, read off the same history (0, or no miss, when it
//! reached it), and recording them changes no history.

mod engine_support;

use engine_support::scenario;
use leasehold_model::history::{Record, Reply};
use leasehold_model::situation::EDGE_MS;
use leasehold_sim::runner::{run_seed, PreparedConfig, RunOptions};
use leasehold_sim::stores::MemoryFactory;
use std::sync::Arc;

const SWEEP: &str = "sweep-within-a-tick-of-expiry";

/// The least time any sweep of `records` came after the expiry it
/// reclaimed, counted from the history itself (not the observer).
fn least_lateness(records: &[Record]) -> Option<u64> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Served {
                reply: Some(Reply::Swept(reports)),
                ..
            } => Some(reports),
            _ => None,
        })
        .flatten()
        .filter(|c| c.swept_at.0 >= c.expired_at.0)
        .map(|c| (c.swept_at.0 - c.expired_at.0) as u64)
        .min()
}

#[test]
fn a_sweep_that_missed_the_tick_after_expiry_records_by_how_much() {
    // Its sweeps come at or shortly after the expiries: most seeds reach
    // the situation, some miss it by a few milliseconds.
    let cfg = PreparedConfig::new(scenario(
        "catalogue/fence_ignores_drift_believes_past_the_store_expiry_at_the_bound.toml",
    ))
    .expect("valid");
    let memory = Arc::new(MemoryFactory);
    let (mut reached, mut missed) = (0, 0);
    for seed in 0..20 {
        let o = run_seed(&cfg, seed, &memory, RunOptions::default()).expect("runs");
        let Some(late) = least_lateness(&o.history.records) else {
            assert_eq!(
                o.coverage.distance(SWEEP),
                None,
                "seed {seed}: no sweep, no distance"
            );
            continue;
        };
        if late <= EDGE_MS {
            reached += 1;
            assert!(o.coverage.reached(SWEEP), "seed {seed}");
            assert_eq!(
                o.coverage.distance(SWEEP),
                Some(0),
                "seed {seed}: reached is 0"
            );
            assert!(o.coverage.misses().all(|(n, _)| n != SWEEP), "seed {seed}");
        } else {
            missed += 1;
            assert!(!o.coverage.reached(SWEEP), "seed {seed}");
            assert_eq!(
                o.coverage.distance(SWEEP),
                Some(late - EDGE_MS),
                "seed {seed}: missed by its least lateness past the tick"
            );
        }
        // Every miss is of a situation the run did not reach, by more than 0.
        for (name, d) in o.coverage.misses() {
            assert!(
                d > 0 && !o.coverage.reached(name),
                "seed {seed}: {name} {d}"
            );
        }
        // Recording distances changes no history.
        let off = RunOptions {
            skip_coverage: true,
            ..RunOptions::default()
        };
        let quiet = run_seed(&cfg, seed, &memory, off).expect("runs");
        assert_eq!(quiet.history_hash, o.history_hash, "seed {seed}");
        assert_eq!(quiet.coverage.misses().count(), 0, "seed {seed}: skipped");
    }
    assert!(
        reached > 0 && missed > 0,
        "reached {reached}, missed {missed}"
    );
}
