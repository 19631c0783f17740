//! Which (scenario, seed) runs a `leasehold run` performs, and which of
//! them belong to this CI shard.
//!
//! Seeds are `0..N`, where N is `--seeds` or the scenario's own `seeds`;
//! `--seed S` runs exactly seed S. Sharding (`--shard I/N`) walks the
//! runs in a fixed order (scenarios in load order, seeds ascending) and
//! gives the k-th *unit* to shard `k mod N + 1`. A unit is one seed of a
//! scenario that expects every invariant to hold, but all seeds of a
//! scenario that expects a violation: such a scenario passes when any of
//! its seeds finds the violation, so its seed budget is never split.

use std::fmt;
use std::str::FromStr;

/// `--shard I/N`: this machine is shard I (1-based) of N.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, from 1.
    pub index: u64,
    /// How many shards.
    pub count: u64,
}

impl Shard {
    /// The whole run on one machine.
    pub const ALL: Shard = Shard { index: 1, count: 1 };

    /// Whether unit number `k` (0-based, in plan order) is this shard's.
    pub fn owns(self, k: u64) -> bool {
        k % self.count == self.index - 1
    }
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("shard {s:?} must look like I/N, for example 2/4"))?;
        let index: u64 = i
            .trim()
            .parse()
            .map_err(|_| format!("shard index {i:?} is not a number"))?;
        let count: u64 = n
            .trim()
            .parse()
            .map_err(|_| format!("shard count {n:?} is not a number"))?;
        if count == 0 || index == 0 || index > count {
            return Err(format!("shard {s:?}: need 1 <= I <= N"));
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Which seeds to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seeds {
    /// Each scenario's own `seeds` setting: `0..seeds`.
    PerScenario,
    /// `0..n` for every scenario.
    Count(u64),
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
    /// Whether it expects a violation (its seeds stay together).
    pub expects_violation: bool,
}

/// The runs of this shard, in plan order.
pub fn plan(scenarios: &[PlanInput], seeds: Seeds, shard: Shard) -> Vec<Task> {
    plan_from(scenarios, seeds, 0, shard)
}

/// [`plan`] with seeds counted from `base` (`base..base+N`); a single
/// `--seed` is not moved.
pub fn plan_from(scenarios: &[PlanInput], seeds: Seeds, base: u64, shard: Shard) -> Vec<Task> {
    let mut out = Vec::new();
    let mut unit: u64 = 0;
    for (i, s) in scenarios.iter().enumerate() {
        let list: Vec<u64> = match seeds {
            Seeds::PerScenario => (0..s.seeds).map(|k| base.wrapping_add(k)).collect(),
            Seeds::Count(n) => (0..n).map(|k| base.wrapping_add(k)).collect(),
            Seeds::One(seed) => vec![seed],
        };
        if s.expects_violation {
            if shard.owns(unit) {
                out.extend(list.iter().map(|&seed| Task { scenario: i, seed }));
            }
            unit += 1;
        } else {
            for seed in list {
                if shard.owns(unit) {
                    out.push(Task { scenario: i, seed });
                }
                unit += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects_shards() {
        assert_eq!("2/4".parse(), Ok(Shard { index: 2, count: 4 }));
        for bad in ["0/4", "5/4", "1/0", "x/2", "3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn expected_violation_scenarios_are_never_split() {
        let input = [
            PlanInput {
                seeds: 3,
                expects_violation: false,
            },
            PlanInput {
                seeds: 5,
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
}
