//! Which (scenario, seed) runs a `leasehold run` performs, and which of
//! them belong to this CI shard.
//!
//! Seeds are `0..N`, where N is `--seeds` or the scenario's own `seeds`;
//! `--seed S` runs exactly seed S. Sharding (`--shard I/N`) splits the runs
//! into *units*: one seed of a scenario that expects every invariant to
//! hold, but all seeds of a scenario that expects a violation (such a
//! scenario passes when any of its seeds finds the violation, so its seed
//! budget is never split). Units go to the least-loaded shard (fewest runs
//! so far, the lowest index on a tie): first the whole-scenario units,
//! largest first, then the single seeds in load order, which fill the
//! shards up evenly. Every machine computes the same plan from the same
//! scenarios, and the shards' sizes differ by at most one run unless the
//! whole-scenario units alone are already uneven.

pub use super::shard::Shard;

/// Which seeds to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seeds {
    /// Each scenario's own `seeds` setting: `0..seeds`.
    PerScenario,
    /// `0..n` for every scenario.
    Count(u64),
    /// `0..seeds×k`: each scenario's own count, k times.
    Factor(u64),
    /// Exactly this seed.
    One(u64),
}

/// One run: scenario index (in load order) and seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Task {
    /// Index into the loaded scenarios.
    pub scenario: usize,
    /// The seed.
    pub seed: u64,
}

/// What the planner needs to know of each scenario.
#[derive(Clone, Copy, Debug)]
pub struct PlanInput {
    /// The scenario's own default seed count.
    pub seeds: u64,
    /// The scenario's first seed (`first_seed`): its seeds start there.
    pub first_seed: u64,
    /// Whether it expects a violation (its seeds stay together).
    pub expects_violation: bool,
}

/// The runs of this shard, in plan order.
pub fn plan(scenarios: &[PlanInput], seeds: Seeds, shard: Shard) -> Vec<Task> {
    plan_from(scenarios, seeds, 0, shard)
}

/// [`plan`] with seeds counted from `base` (`first_seed+base..` for each
/// scenario); a single `--seed` is not moved.
pub fn plan_from(scenarios: &[PlanInput], seeds: Seeds, base: u64, shard: Shard) -> Vec<Task> {
    let lists: Vec<Vec<u64>> = scenarios
        .iter()
        .map(|s| match seeds {
            Seeds::PerScenario => (0..s.seeds)
                .map(|k| s.first_seed.wrapping_add(base).wrapping_add(k))
                .collect(),
            Seeds::Count(n) => (0..n)
                .map(|k| s.first_seed.wrapping_add(base).wrapping_add(k))
                .collect(),
            Seeds::Factor(f) => (0..s.seeds.saturating_mul(f))
                .map(|k| s.first_seed.wrapping_add(base).wrapping_add(k))
                .collect(),
            Seeds::One(seed) => vec![seed],
        })
        .collect();
    let count = usize::try_from(shard.count).unwrap_or(usize::MAX).max(1);
    // More shards than runs leaves some empty; the loads never need more.
    let mut load: Vec<usize> = vec![0; count.min(lists.iter().map(Vec::len).sum::<usize>() + 1)];
    let mut least = |n: usize| -> usize {
        let (i, _) = load
            .iter()
            .enumerate()
            .min_by_key(|&(i, l)| (*l, i))
            .expect("at least one shard");
        load[i] += n;
        i
    };
    let mut whole: Vec<usize> = (0..scenarios.len())
        .filter(|&i| scenarios[i].expects_violation)
        .collect();
    whole.sort_by_key(|&i| (std::cmp::Reverse(lists[i].len()), i));
    let mine = usize::try_from(shard.index - 1).unwrap_or(usize::MAX);
    let mut owned = vec![false; scenarios.len()];
    for i in whole {
        owned[i] = least(lists[i].len()) == mine;
    }
    let mut out = Vec::new();
    for (i, s) in scenarios.iter().enumerate() {
        if s.expects_violation {
            if owned[i] {
                out.extend(lists[i].iter().map(|&seed| Task { scenario: i, seed }));
            }
        } else {
            for &seed in &lists[i] {
                if least(1) == mine {
                    out.push(Task { scenario: i, seed });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_factor_deepens_each_scenario_by_its_own_count() {
        let input = [(3, 0), (5, 100)].map(|(seeds, first_seed)| PlanInput {
            seeds,
            first_seed,
            expects_violation: false,
        });
        let all = plan_from(&input, Seeds::Factor(4), 10, Shard::ALL);
        let of = |i: usize| -> Vec<u64> {
            all.iter()
                .filter(|t| t.scenario == i)
                .map(|t| t.seed)
                .collect()
        };
        assert_eq!(of(0), (10..22).collect::<Vec<_>>());
        assert_eq!(of(1), (110..130).collect::<Vec<_>>());
    }

    #[test]
    fn expected_violation_scenarios_are_never_split() {
        let input = [
            PlanInput {
                seeds: 3,
                first_seed: 0,
                expects_violation: false,
            },
            PlanInput {
                seeds: 5,
                first_seed: 0,
                expects_violation: true,
            },
        ];
        for n in 1..=4 {
            let owners: Vec<u64> = (1..=n)
                .filter(|&i| {
                    plan(&input, Seeds::PerScenario, Shard { index: i, count: n })
                        .iter()
                        .any(|t| t.scenario == 1)
                })
                .collect();
            assert_eq!(owners.len(), 1, "{n} shards: {owners:?}");
        }
    }

    #[test]
    fn shards_cover_every_run_once_and_single_seeds_fill_the_smallest() {
        let input: Vec<PlanInput> = [(30, false), (50, true), (7, false), (10, true), (3, true)]
            .iter()
            .map(|&(seeds, expects_violation)| PlanInput {
                seeds,
                first_seed: 0,
                expects_violation,
            })
            .collect();
        let all = plan(&input, Seeds::PerScenario, Shard::ALL);
        assert_eq!(all.len(), 100);
        for n in 1..=7 {
            let shards: Vec<Vec<Task>> = (1..=n)
                .map(|i| plan(&input, Seeds::PerScenario, Shard { index: i, count: n }))
                .collect();
            let mut union: Vec<Task> = shards.iter().flatten().copied().collect();
            union.sort();
            assert_eq!(union, all, "{n} shards: every run exactly once");
            // Single seeds always go to a least-loaded shard, so a shard
            // that got one ends at most one run above the smallest shard;
            // only the never-split seed budgets can stand out.
            let min = shards.iter().map(Vec::len).min().unwrap();
            for (k, s) in shards.iter().enumerate() {
                let singles = s.iter().any(|t| !input[t.scenario].expects_violation);
                assert!(
                    !singles || s.len() <= min + 1,
                    "{n} shards: shard {k} has {} runs, the smallest {min}",
                    s.len()
                );
            }
        }
    }
}
