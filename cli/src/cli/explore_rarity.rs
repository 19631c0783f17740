//! What the guided explorer ([`super::explore_guided`]) counts as rare,
//! and how much a scenario weighs when it draws the scenario of its next
//! run: the runs reaching each situation so far, each scenario's runs and
//! the situations its runs reached.
//!
//! A situation is rare when at most [`RARE_PERCENT`] of the runs so far
//! reached it. In this library a situation is rare *across* scenarios:
//! one or two scenarios reach it on most of their seeds and the others
//! never do, so it is reached by one or two scenarios' share of the runs.
//! The wheel of the 56 correct scenarios gives one scenario about 1.8 % of
//! the runs, so 5 % holds "reached by about two scenarios' runs or
//! fewer"; the earlier 1 % held only a situation reached once or twice in
//! 240 runs, which at such budgets is chance, not rarity. Early on, when
//! 5 % of the runs is less than a few runs, anything reached by fewer than
//! [`RARE_RUNS`] runs is rare too, so the first runs reaching a situation
//! are kept while it is still new.
//!
//! Invariants: every count is one entry per situation name or per
//! scenario (bounded by the scenarios explored and the situations they
//! mark); the weights are integers, a pure function of the counts, so a
//! draw by weight is deterministic.

use std::collections::{BTreeMap, BTreeSet};

/// A situation reached by at most this share of the runs so far, in
/// percent, is rare (see the module's doc for why 5).
pub const RARE_PERCENT: u64 = 5;
/// A situation reached by fewer runs than this is rare whatever the
/// share (early on, 5 % of the runs is under one run).
pub const RARE_RUNS: u64 = 8;
/// The weight of a situation reached by one run: a situation reached by
/// `n` runs weighs `UNIT / n`.
pub const UNIT: u64 = 1 << 20;
/// A scenario's own term weighs `UNIT / (RUN_TERM_DIVISOR * (runs + 1))`:
/// a quarter of what a situation reached as often would, because the
/// wheel's share already serves every scenario by its seeds, and the term
/// only lifts the scenarios it serves least (one seed per turn of a wheel
/// of over a thousand) above those that reached nothing rare.
pub const RUN_TERM_DIVISOR: u64 = 4;

/// Whether a situation `reaching` runs of `runs` reached is rare by the
/// share alone (what `--compare` reports, over a whole budget).
pub fn rare_share(reaching: u64, runs: u64) -> bool {
    reaching.saturating_mul(100) <= runs.saturating_mul(RARE_PERCENT)
}

/// What the guided explorer has learnt about rarity so far.
#[derive(Debug)]
pub struct Rarity {
    /// Runs learnt from.
    runs: u64,
    /// Each situation: how many runs reached it.
    reaching: BTreeMap<String, u64>,
    /// Each scenario: its runs.
    scenario_runs: Vec<u64>,
    /// Each scenario: the situations any of its runs reached.
    scenario_reached: Vec<BTreeSet<String>>,
}

impl Rarity {
    /// Nothing learnt yet, over `scenarios` scenarios.
    pub fn new(scenarios: usize) -> Rarity {
        Rarity {
            runs: 0,
            reaching: BTreeMap::new(),
            scenario_runs: vec![0; scenarios],
            scenario_reached: vec![BTreeSet::new(); scenarios],
        }
    }

    /// Distinct situations reached so far.
    pub fn reached(&self) -> usize {
        self.reaching.len()
    }

    /// Runs reaching `situation` so far.
    pub fn reaching(&self, situation: &str) -> u64 {
        self.reaching.get(situation).copied().unwrap_or(0)
    }

    /// Whether `situation` is rare now: reached by fewer than
    /// [`RARE_RUNS`] runs, or by at most [`RARE_PERCENT`] of them.
    pub fn is_rare(&self, situation: &str) -> bool {
        let n = self.reaching(situation);
        n < RARE_RUNS || rare_share(n, self.runs)
    }

    /// Learns one run of `scenario` that reached `situations`. Answers
    /// the situations reached for the first time, and whether the run
    /// reached one that was new or rare before it.
    pub fn learn<'a>(
        &mut self,
        scenario: usize,
        situations: impl Iterator<Item = &'a str>,
    ) -> (Vec<String>, bool) {
        let mut new = Vec::new();
        let mut rare = false;
        let situations: Vec<&str> = situations.collect();
        for name in &situations {
            rare |= self.is_rare(name);
        }
        for name in situations {
            let n = self.reaching.entry(name.to_string()).or_insert(0);
            if *n == 0 {
                new.push(name.to_string());
            }
            *n += 1;
            if let Some(set) = self.scenario_reached.get_mut(scenario) {
                set.insert(name.to_string());
            }
        }
        if let Some(r) = self.scenario_runs.get_mut(scenario) {
            *r += 1;
        }
        self.runs += 1;
        (new, rare)
    }

    /// The weight of a situation now: `UNIT / runs reaching it`.
    pub fn situation_weight(&self, situation: &str) -> u64 {
        UNIT / self.reaching(situation).max(1)
    }

    /// The weight of `scenario` when the explorer draws the scenario of a
    /// fresh run: each rare situation its runs reached weighs
    /// `UNIT / runs reaching it`, and the scenario's own term lifts a
    /// scenario never or rarely run. So the scenarios that alone reach
    /// what is rare get most of the fresh runs, until it is rare no more.
    pub fn scenario_weight(&self, scenario: usize) -> u64 {
        let rare: u64 = self
            .scenario_reached
            .get(scenario)
            .into_iter()
            .flatten()
            .filter(|s| self.is_rare(s))
            .map(|s| self.situation_weight(s))
            .sum();
        let runs = self.scenario_runs.get(scenario).copied().unwrap_or(0);
        rare + UNIT / (RUN_TERM_DIVISOR * (runs + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rare_is_a_share_of_the_runs_with_a_floor() {
        assert!(rare_share(12, 240), "5 % of 240 is 12");
        assert!(!rare_share(13, 240));
        assert!(rare_share(30, 600));
        assert!(!rare_share(3, 20), "3 of 20 is 15 %");
        let mut r = Rarity::new(1);
        for _ in 0..20 {
            r.learn(0, ["everywhere"].into_iter());
        }
        for _ in 0..7 {
            r.learn(0, ["seven"].into_iter());
        }
        // 7 of 27 runs is above 5 %, but under the floor of 8 runs.
        assert!(r.is_rare("seven"));
        assert!(!r.is_rare("everywhere"));
        r.learn(0, ["seven"].into_iter());
        assert!(!r.is_rare("seven"), "8 of 28 runs: no longer rare");
    }

    #[test]
    fn a_scenario_reaching_a_rare_situation_or_rarely_run_weighs_more() {
        let mut r = Rarity::new(4);
        // Scenarios 0 and 1 run 60 times each, reaching a common
        // situation; scenario 1 once reached a rare one too.
        for k in 0..60 {
            r.learn(0, ["common"].into_iter());
            let rare: &[&str] = if k == 0 {
                &["common", "rare"]
            } else {
                &["common"]
            };
            r.learn(1, rare.iter().copied());
        }
        // Scenario 2 ran 60 times and reached only the common one too
        // (the same as 0); scenario 3 never ran.
        for _ in 0..60 {
            r.learn(2, ["common"].into_iter());
        }
        let w: Vec<u64> = (0..4).map(|s| r.scenario_weight(s)).collect();
        assert_eq!(w[0], w[2], "the same runs and reach, the same weight");
        assert!(
            w[1] > 4 * w[0],
            "a rare situation lifts its scenario: {w:?}"
        );
        assert!(w[3] > w[0], "a scenario never run is lifted: {w:?}");
        assert!(!r.is_rare("common"));
        assert_eq!(r.learn(3, ["rare"].into_iter()), (Vec::new(), true));
        assert_eq!(r.reached(), 2);
    }
}
