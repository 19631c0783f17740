//! `--shard I/N` splits the runs so that every (scenario, seed) of the
//! unsharded run is done by exactly one shard, and a catalogue scenario's
//! seed budget is never split.

use leasehold_cli::cli::plan::{plan, PlanInput, Seeds, Shard, Task};
use leasehold_model::scenario::load_paths;
use std::collections::BTreeMap;
use std::path::Path;

fn inputs() -> Vec<PlanInput> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    load_paths(&[dir])
        .unwrap()
        .iter()
        .map(|s| PlanInput {
            seeds: s.config.seeds,
            first_seed: s.config.first_seed,
            expects_violation: s.config.expect.violation.is_some(),
        })
        .collect()
}

#[test]
fn shards_cover_every_seed_exactly_once() {
    let inputs = inputs();
    for seeds in [Seeds::PerScenario, Seeds::Count(7), Seeds::One(42)] {
        let whole = plan(&inputs, seeds, Shard::ALL);
        for n in [1u64, 2, 3, 5, 16, 1000] {
            let mut count: BTreeMap<Task, u32> = BTreeMap::new();
            for i in 1..=n {
                for t in plan(&inputs, seeds, Shard { index: i, count: n }) {
                    *count.entry(t).or_default() += 1;
                }
            }
            assert_eq!(count.len(), whole.len(), "{n} shards, {seeds:?}");
            assert!(count.values().all(|&c| c == 1), "{n} shards, {seeds:?}");
            assert!(whole.iter().all(|t| count.contains_key(t)));
        }
    }
}

#[test]
fn shards_are_balanced_and_keep_catalogue_budgets_whole() {
    let inputs = inputs();
    let n = 4;
    let shards: Vec<Vec<Task>> = (1..=n)
        .map(|i| plan(&inputs, Seeds::PerScenario, Shard { index: i, count: n }))
        .collect();
    for (idx, input) in inputs.iter().enumerate() {
        let holders = shards
            .iter()
            .filter(|s| s.iter().any(|t| t.scenario == idx))
            .count();
        if input.expects_violation {
            assert_eq!(
                holders, 1,
                "catalogue scenario {idx} split over {holders} shards"
            );
        }
    }
    let sizes: Vec<usize> = shards.iter().map(Vec::len).collect();
    let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
    assert!(max - min <= 20, "unbalanced shards {sizes:?}");
}

#[test]
fn the_same_shard_plans_the_same_runs() {
    let inputs = inputs();
    let a = plan(&inputs, Seeds::PerScenario, "2/3".parse().unwrap());
    let b = plan(&inputs, Seeds::PerScenario, "2/3".parse().unwrap());
    assert_eq!(a, b);
}
