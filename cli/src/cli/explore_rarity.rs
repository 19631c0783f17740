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
//! A scenario's own seeds tell how much of it is left to find. One whose
//! seeds so far all reached exactly the same situations, none of them
//! rare, is *settled* ([`Rarity::settled`]), and the guided explorer gives
//! half of its turns on the wheel to the scenarios that still vary. (A
//! looser rule, settled when no situation was reached by exactly one of
//! its seeds, settled scenarios whose first seeds happened to agree and
//! lost the rare situations their later seeds reach: docs/PERFORMANCE.md,
//! "Guided exploration".) Among the others, the situations exactly one of
//! its seeds reached (Good-Turing's singletons) estimate how likely its
//! next seed is to reach something its seeds have not.
//!
//! A scenario also says what it is for: the situations its `[coverage]`
//! table declares. One whose runs have not yet reached a situation it
//! declares is never settled, and weighs more in the draw
//! ([`DECLARED_WEIGHT`]): its author knew where that situation lives, and
//! in this library the late rare situations (a cancel racing a claim, a
//! renew answered within a tick of the fence, a release retried after a
//! `Conflict` near expiry) are reached on a few seeds of the scenarios that
//! declare them.
//!
//! A run also says how near it came to the situations it missed
//! ([`leasehold_sim::coverage::Coverage::misses`]: milliseconds before a
//! fence, between a cancel and a claim, ...). For a situation no run has
//! reached yet, the smallest such distance so far is its *record*
//! ([`Rarity::learn_near`]); a run that beats it came closer than any
//! before, and the scenario whose runs came closest weighs more in the
//! draw ([`NEAR_WEIGHT`]): in this library the late situations (a cancel
//! racing a claim, a renew within a tick of the fence) are reached by a
//! few seeds of scenarios whose other seeds come near them.
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
/// A scenario's novelty term weighs `UNIT * singletons / (NOVELTY_DIVISOR *
/// fresh runs)`: Good-Turing's estimate that its next seed reaches a
/// situation none of its seeds reached, at an eighth of a situation
/// reached once, because a situation new to one scenario is seldom new
/// to all.
pub const NOVELTY_DIVISOR: u64 = 8;
/// A declared situation the scenario's runs have not reached weighs
/// `DECLARED_WEIGHT * UNIT * 4 / (fresh runs + 4)`: as much as four
/// situations reached once, at first, and less with every seed that still
/// misses it (a situation the explorer's fault mixes cannot reach must
/// not hold the draw forever).
pub const DECLARED_WEIGHT: u64 = 4;
/// A situation no run has reached weighs `NEAR_WEIGHT * UNIT` in all (as
/// two situations reached once), shared among the scenarios whose runs
/// missed it by their closeness, `record / their nearest distance`: the
/// only scenario near it gets all of it, one of ten at the record a tenth,
/// and a scenario ten times further than another a tenth of its share.
/// A scenario's share fades as `4 / (runs since the scenario last came
/// nearer + 4)`: a scenario whose runs stay near a situation they never
/// reach (one no correct scenario of the explored set reaches, as
/// `two-workers-believe-one-job-within-a-tick` here) must not hold the
/// spare turns.
pub const NEAR_WEIGHT: u64 = 2;
/// Fresh runs a scenario needs before it can be settled: below it, a
/// scenario's seeds are too few to agree by more than chance.
pub const SETTLED_AFTER: u64 = 3;

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
    /// Each scenario: its fresh runs (its own seeds, not mutations).
    fresh_runs: Vec<u64>,
    /// Each scenario: each situation, how many of its fresh runs reached it.
    fresh_reaching: Vec<BTreeMap<String, u64>>,
    /// Each scenario: the situations it declares (`[coverage] expects`).
    declared: Vec<Vec<String>>,
    /// Each situation no run reached and some run missed by a measured
    /// distance: the smallest distance so far (its record).
    near_record: BTreeMap<String, u64>,
    /// Each scenario: each situation its runs missed, the nearest miss and
    /// the scenario's runs when it came that near.
    scenario_near: Vec<BTreeMap<String, (u64, u64)>>,
}

impl Rarity {
    /// Nothing learnt yet, over `scenarios` scenarios.
    pub fn new(scenarios: usize) -> Rarity {
        Rarity {
            runs: 0,
            reaching: BTreeMap::new(),
            scenario_runs: vec![0; scenarios],
            scenario_reached: vec![BTreeSet::new(); scenarios],
            fresh_runs: vec![0; scenarios],
            fresh_reaching: vec![BTreeMap::new(); scenarios],
            declared: vec![Vec::new(); scenarios],
            near_record: BTreeMap::new(),
            scenario_near: vec![BTreeMap::new(); scenarios],
        }
    }

    /// Records that `scenario` declares `situations` (its `[coverage]`
    /// table).
    pub fn declare(&mut self, scenario: usize, situations: &[String]) {
        if let Some(d) = self.declared.get_mut(scenario) {
            d.clone_from(&situations.to_vec());
        }
    }

    /// Situations `scenario` declares that none of its runs reached yet.
    pub fn missing(&self, scenario: usize) -> u64 {
        let reached = self.scenario_reached.get(scenario);
        let declared = self.declared.get(scenario).into_iter().flatten();
        declared
            .filter(|s| !reached.is_some_and(|r| r.contains(*s)))
            .count() as u64
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

    /// Learns one run of `scenario` that reached `situations`, `fresh` if
    /// it ran one of the scenario's own seeds (not a mutation). Answers
    /// the situations reached for the first time, and whether the run
    /// reached one that was new or rare before it.
    pub fn learn<'a>(
        &mut self,
        scenario: usize,
        fresh: bool,
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
            if let Some(counts) = self.fresh_reaching.get_mut(scenario).filter(|_| fresh) {
                *counts.entry(name.to_string()).or_insert(0) += 1;
            }
        }
        if let Some(r) = self.scenario_runs.get_mut(scenario) {
            *r += 1;
        }
        if let Some(r) = self.fresh_runs.get_mut(scenario).filter(|_| fresh) {
            *r += 1;
        }
        self.runs += 1;
        (new, rare)
    }

    /// Learns how near one run of `scenario` came to the situations it
    /// missed (call it after [`Rarity::learn`] of the same run, so a
    /// situation the run reached has no record). Answers the situations
    /// no run has reached whose record this run beat (the first distance
    /// measured is a record too), with the run's distance.
    pub fn learn_near<'a>(
        &mut self,
        scenario: usize,
        misses: impl Iterator<Item = (&'a str, u64)>,
    ) -> Vec<(String, u64)> {
        let mut closer = Vec::new();
        for (name, d) in misses {
            if self.reaching(name) > 0 {
                continue;
            }
            let runs = self.scenario_runs.get(scenario).copied().unwrap_or(0);
            if let Some(own) = self.scenario_near.get_mut(scenario) {
                let best = own.entry(name.to_string()).or_insert((d, runs));
                if d < best.0 {
                    *best = (d, runs);
                }
            }
            let record = self.near_record.entry(name.to_string()).or_insert(u64::MAX);
            if d < *record {
                *record = d;
                closer.push((name.to_string(), d));
            }
        }
        closer
    }

    /// The record of `situation`: the nearest any run came to it while no
    /// run reached it (`None` once reached, or never measured).
    pub fn record(&self, situation: &str) -> Option<u64> {
        if self.reaching(situation) > 0 {
            return None;
        }
        self.near_record.get(situation).copied()
    }

    /// The weight of a run that missed `situation` by `distance`: `UNIT`
    /// at the record, `UNIT * record / distance` further away, 0 once any
    /// run reached it.
    pub fn near_weight(&self, situation: &str, distance: u64) -> u64 {
        match self.record(situation) {
            Some(record) => UNIT * record.max(1) / distance.max(1),
            None => 0,
        }
    }

    /// Situations exactly one of `scenario`'s fresh runs reached.
    pub fn singletons(&self, scenario: usize) -> u64 {
        let counts = self.fresh_reaching.get(scenario).into_iter().flatten();
        counts.filter(|(_, n)| **n == 1).count() as u64
    }

    /// Whether `scenario` is settled: at least [`SETTLED_AFTER`] fresh
    /// runs, every situation they reached reached by all of them, none of
    /// its runs reached a rare situation, and they reached every situation
    /// it declares. Its next seed is then the least likely to reach
    /// anything new.
    pub fn settled(&self, scenario: usize) -> bool {
        let fresh = self.fresh_runs.get(scenario).copied().unwrap_or(0);
        let rare = self
            .scenario_reached
            .get(scenario)
            .into_iter()
            .flatten()
            .any(|s| self.is_rare(s));
        let counts = self.fresh_reaching.get(scenario).into_iter().flatten();
        let all_alike = counts.into_iter().all(|(_, n)| *n == fresh);
        fresh >= SETTLED_AFTER && all_alike && !rare && self.missing(scenario) == 0
    }

    /// The weight of a situation now: `UNIT / runs reaching it`.
    pub fn situation_weight(&self, situation: &str) -> u64 {
        UNIT / self.reaching(situation).max(1)
    }

    /// The weight of `scenario` when the explorer draws the scenario of a
    /// fresh run: each rare situation its runs reached weighs
    /// `UNIT / runs reaching it`, the scenario's own term lifts a
    /// scenario never or rarely run, and its novelty term one whose seeds
    /// still disagree, and each situation it declares and has not reached
    /// lifts it too. So the scenarios that alone reach what is rare, or
    /// still seek what they exist for, get most of the fresh runs.
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
        let fresh = self.fresh_runs.get(scenario).copied().unwrap_or(0);
        let novelty = UNIT * self.singletons(scenario) / (NOVELTY_DIVISOR * fresh.max(1));
        let declared = DECLARED_WEIGHT * UNIT * 4 * self.missing(scenario) / (fresh + 4);
        let near: u64 = self
            .scenario_near
            .get(scenario)
            .into_iter()
            .flatten()
            .map(|(s, &(d, at))| {
                // This scenario's share of the situation's closeness over
                // every scenario that missed it: a distance many scenarios
                // share (a cancel 1 ms off its claim) lifts none of them
                // much.
                let all: u64 = self
                    .scenario_near
                    .iter()
                    .filter_map(|own| own.get(s))
                    .map(|&(d, _)| self.near_weight(s, d))
                    .sum();
                let own = self.near_weight(s, d) * 4 / (runs.saturating_sub(at) + 4);
                (NEAR_WEIGHT * UNIT).saturating_mul(own) / all.max(1)
            })
            .sum();
        rare + UNIT / (RUN_TERM_DIVISOR * (runs + 1)) + novelty + declared + near
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_settles_when_its_seeds_agree_and_it_reached_what_it_declares() {
        let mut r = Rarity::new(4);
        r.declare(2, &["declared".to_string()]);
        // Scenario 0's seeds all reach the same; scenario 1's differ on
        // one; scenario 2 reaches the same as 0 but not what it declares;
        // scenario 3's reach "half" on every other seed (no singleton, and
        // not rare: 20 runs of 160).
        for k in 0..40 {
            r.learn(0, true, ["common"].into_iter());
            let extra: &[&str] = if k == 7 {
                &["common", "once"]
            } else {
                &["common"]
            };
            r.learn(1, true, extra.iter().copied());
            r.learn(2, true, ["common"].into_iter());
            let half: &[&str] = if k % 2 == 0 {
                &["common", "half"]
            } else {
                &["common"]
            };
            r.learn(3, true, half.iter().copied());
            if k == 1 {
                assert!(!r.settled(0), "two runs are too few to agree");
            }
        }
        // "once" was reached by one run: rare, and a singleton of 1.
        assert!(r.settled(0));
        assert!(!r.settled(1), "a seed of its own reached something");
        assert_eq!(r.singletons(1), 1);
        assert!(!r.settled(2), "it has not reached what it declares");
        assert_eq!(r.missing(2), 1);
        assert!(!r.is_rare("half") && r.singletons(3) == 0);
        assert!(!r.settled(3), "its seeds still differ");
        let (w0, w2) = (r.scenario_weight(0), r.scenario_weight(2));
        assert!(
            w2 > 4 * w0,
            "a declared situation still sought lifts it: {w0} {w2}"
        );
        // A mutated run does not count among its seeds: "once" is still
        // reached by one of scenario 1's seeds.
        r.learn(1, false, ["common", "once"].into_iter());
        assert_eq!(r.singletons(1), 1);
        r.learn(2, false, ["declared"].into_iter());
        assert_eq!(r.missing(2), 0, "reached, by a mutation of it");
    }

    #[test]
    fn a_run_nearer_than_any_before_to_an_unreached_situation_sets_its_record() {
        let mut r = Rarity::new(3);
        r.learn(0, true, ["common"].into_iter());
        assert_eq!(
            r.learn_near(0, [("target", 400), ("common", 9)].into_iter()),
            vec![("target".to_string(), 400)],
            "the first distance is a record; a reached situation has none"
        );
        assert!(r.learn_near(1, [("target", 401)].into_iter()).is_empty());
        assert_eq!(
            r.learn_near(2, [("target", 100)].into_iter()),
            vec![("target".to_string(), 100)]
        );
        assert_eq!(r.record("target"), Some(100));
        assert_eq!(r.near_weight("target", 100), UNIT, "at the record");
        assert_eq!(r.near_weight("target", 200), UNIT / 2, "twice as far");
        // Scenarios 1 and 2 differ only by their nearest miss: each has its
        // share of NEAR_WEIGHT * UNIT by closeness (record / distance).
        let w: Vec<u64> = (0..3).map(|s| r.scenario_weight(s)).collect();
        let closeness = [UNIT * 100 / 400, UNIT * 100 / 401, UNIT];
        let all: u64 = closeness.iter().sum();
        let share = |c: u64, fade: u64| NEAR_WEIGHT * UNIT * (c * 4 / (fade + 4)) / all;
        assert_eq!(
            w[2] - w[1],
            share(closeness[2], 0) - share(closeness[1], 0),
            "{w:?}"
        );
        assert!(share(closeness[2], 0) > NEAR_WEIGHT * UNIT / 2);
        // Twelve runs each that come no nearer: their shares fade to a quarter.
        for _ in 0..12 {
            r.learn(1, true, std::iter::empty());
            r.learn(2, true, std::iter::empty());
        }
        let faded = r.scenario_weight(2) - r.scenario_weight(1);
        assert_eq!(faded, share(closeness[2], 12) - share(closeness[1], 12));
        let w: Vec<u64> = (0..3).map(|s| r.scenario_weight(s)).collect();
        // Reached: no record, no near weight, no term in the draw.
        r.learn(1, true, ["target"].into_iter());
        assert_eq!(r.record("target"), None);
        assert_eq!(r.near_weight("target", 100), 0);
        assert!(r.learn_near(2, [("target", 1)].into_iter()).is_empty());
        assert!(r.scenario_weight(2) < w[2]);
    }

    #[test]
    fn rare_is_a_share_of_the_runs_with_a_floor() {
        assert!(rare_share(12, 240), "5 % of 240 is 12");
        assert!(!rare_share(13, 240));
        assert!(rare_share(30, 600));
        assert!(!rare_share(3, 20), "3 of 20 is 15 %");
        let mut r = Rarity::new(1);
        for _ in 0..20 {
            r.learn(0, true, ["everywhere"].into_iter());
        }
        for _ in 0..7 {
            r.learn(0, true, ["seven"].into_iter());
        }
        // 7 of 27 runs is above 5 %, but under the floor of 8 runs.
        assert!(r.is_rare("seven"));
        assert!(!r.is_rare("everywhere"));
        r.learn(0, true, ["seven"].into_iter());
        assert!(!r.is_rare("seven"), "8 of 28 runs: no longer rare");
    }

    #[test]
    fn a_scenario_reaching_a_rare_situation_or_rarely_run_weighs_more() {
        let mut r = Rarity::new(4);
        // Scenarios 0 and 1 run 60 times each, reaching a common
        // situation; scenario 1 once reached a rare one too.
        for k in 0..60 {
            r.learn(0, true, ["common"].into_iter());
            let rare: &[&str] = if k == 0 {
                &["common", "rare"]
            } else {
                &["common"]
            };
            r.learn(1, true, rare.iter().copied());
        }
        // Scenario 2 ran 60 times and reached only the common one too
        // (the same as 0); scenario 3 never ran.
        for _ in 0..60 {
            r.learn(2, true, ["common"].into_iter());
        }
        let w: Vec<u64> = (0..4).map(|s| r.scenario_weight(s)).collect();
        assert_eq!(w[0], w[2], "the same runs and reach, the same weight");
        assert!(
            w[1] > 4 * w[0],
            "a rare situation lifts its scenario: {w:?}"
        );
        assert!(w[3] > w[0], "a scenario never run is lifted: {w:?}");
        assert!(!r.is_rare("common"));
        assert_eq!(r.learn(3, true, ["rare"].into_iter()), (Vec::new(), true));
        assert_eq!(r.reached(), 2);
    }
}
