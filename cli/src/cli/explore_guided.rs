//! Where `leasehold explore` draws its next runs: uniformly (the library's
//! seed wheel with a swarm mix for half the seeds), or guided by coverage.
//!
//! The guided explorer turns the same wheel as the uniform one, one turn
//! per run, so from its first round on its `k`-th run is the uniform
//! explorer's `k`-th turn. Its first round is the wheel's (every scenario
//! once, its first seed: in this library a situation is rare *across*
//! scenarios, one or two scenarios reach it, so no scenario may wait),
//! in another order ([`first_round_order`]): first the scenarios that
//! declare a situation few others declare, rarest first, so what only a
//! few scenarios exist to reach is reached in the first runs rather than
//! wherever the file order puts them; then the others, in the wheel's
//! order. Both explorers have run the same inputs when the round ends.
//! After that round a turn
//! runs its scenario's next seed, unless the scenario is settled
//! ([`super::explore_rarity::Rarity::settled`]: its seeds so far all
//! reached the same situations, none of them rare, and every situation it
//! declares in its `[coverage]` table); then every other one
//! of its turns is spare, and a spare turn runs one of two:
//! - [`MUTATE_SHARE_PERCENT`]: a mutation ([`super::explore_mutate`]) of a
//!   kept input (the corpus keeps the inputs that reached a new or rare
//!   situation, and those that came nearer than any run before to a
//!   situation no run reached), drawn by its energy; an input kept for
//!   coming nearer after a timing mutation is narrowed again the same way
//!   half the time ([`super::explore_mutate::narrow_again`]);
//! - the rest: the next seed of a scenario drawn by its weight
//!   ([`super::explore_rarity::Rarity::scenario_weight`]: the scenarios
//!   that still seek a situation they declare, that alone reached a rare
//!   situation, whose seeds still disagree, or that were rarely run, weigh
//!   most).
//!
//! So from the end of the first round on, a scenario that is not settled
//! has run each of its seeds no later than the uniform explorer (its own
//! turns come at the same runs, and a spare turn only brings its later
//! seeds sooner), and a settled one at least half as fast: guidance
//! spends only the turns of the scenarios whose seeds keep agreeing.
//! Inside the first round a scenario that declares nothing rare may run
//! up to a round's length later than under the uniform explorer.
//!
//! A fresh run of a scenario (of the wheel or by weight) is its next seed
//! on the wheel (`base`, `base + 1`, ... for each scenario) with that
//! seed's swarm mix: the very inputs the uniform explorer runs, in another
//! order, never one twice.
//!
//! Invariants:
//! - determinism: the runs drawn are a pure function of the explore seed
//!   and of the results of the runs before them, folded in run order (the
//!   explorer runs a generation of [`GENERATION`] runs at a time and
//!   learns from the whole generation before drawing the next), so the
//!   same seed and the same count of runs draw the same runs, whatever the
//!   thread count and timing;
//! - every queue is bounded: the corpus holds at most [`MAX_KEPT`]
//!   inputs (the least useful one leaves for a new one), and the counts
//!   one entry per situation name and per scenario.

use super::explore_mutate::{mutate_with, narrow_again, Draws, Mutation, Narrowing};
use super::explore_rarity::Rarity;
use super::swarm_mix;
use leasehold_model::config::SimConfig;
use leasehold_model::scenario::Scenario;
use leasehold_sim::coverage::Coverage;
use std::collections::{BTreeMap, BTreeSet};

/// Runs drawn before the explorer learns from them (a barrier: a
/// generation's runs go to the threads together, and the next generation
/// is drawn from everything they reached).
pub const GENERATION: u64 = 16;
/// Most inputs the guided corpus keeps.
pub const MAX_KEPT: usize = 256;
/// Share of the guided explorer's spare turns that mutate a kept input,
/// in percent (the rest draw a scenario by its weight).
pub const MUTATE_SHARE_PERCENT: u64 = 25;
/// Largest seed a mutation draws (corpus files pin seeds as TOML integers).
const MAX_DRAWN_SEED: u64 = (i64::MAX as u64) / 2;
/// `how` of a run in the wheel's order.
pub const WHEEL: &str = "wheel";
/// `how` of a run of a scenario drawn by its weight.
pub const WEIGHTED: &str = "weighted";

/// Whether a run drawn as `how` mutated a kept input (its configuration
/// is then not the scenario's own nor a swarm mix of it).
pub fn is_mutation(how: &str) -> bool {
    how != WHEEL && how != WEIGHTED
}

/// One run's inputs: the scenario, the seed, and the configuration that
/// runs (the scenario's own, mixed or mutated).
#[derive(Clone, Debug)]
pub struct Input {
    /// Index of the scenario.
    pub scenario: usize,
    /// The seed.
    pub seed: u64,
    /// What runs.
    pub config: SimConfig,
    /// Kinds the swarm mix switched off (empty for a mutated input: its
    /// header names the mutation instead).
    pub off: Vec<&'static str>,
    /// How it was drawn: [`WHEEL`], [`WEIGHTED`], or the mutation of a
    /// kept input.
    pub how: String,
    /// The timing range its mutation narrowed, if it was one.
    pub narrowed: Option<Narrowing>,
}

/// The library's seed mix as a cycle: each scenario once per seed of its
/// own `seeds`.
pub struct Wheel {
    /// (scenario, its occurrence on the wheel, its seeds per turn).
    pub(super) slots: Vec<(usize, u64, u64)>,
}

impl Wheel {
    /// The wheel of `scenarios`.
    pub fn new(scenarios: &[Scenario]) -> Wheel {
        let mut slots = Vec::new();
        // Interleaved, so every scenario appears early in each turn.
        let most = scenarios
            .iter()
            .map(|s| s.config.seeds.max(1))
            .max()
            .unwrap_or(1);
        for occ in 0..most {
            for (i, s) in scenarios.iter().enumerate() {
                let per = s.config.seeds.max(1);
                if occ < per {
                    slots.push((i, occ, per));
                }
            }
        }
        Wheel { slots }
    }

    /// Exploration seed k: the scenario and its seed offset from the base
    /// (a scenario's turns on the wheel have offsets 0, 1, 2, ... in
    /// order).
    pub fn turn(&self, k: u64) -> (usize, u64) {
        let w = self.slots.len() as u64;
        let (i, occ, per) = self.slots[(k % w) as usize];
        (i, (k / w).wrapping_mul(per).wrapping_add(occ))
    }

    /// Scenario `i`'s seed `base + n` as an input, with its swarm mix
    /// unless `no_mix`.
    pub fn input(
        &self,
        scenarios: &[Scenario],
        base: u64,
        (i, n): (usize, u64),
        no_mix: bool,
    ) -> Input {
        let seed = base.wrapping_add(n);
        let s = &scenarios[i].config;
        let (config, off) = if no_mix {
            (s.clone(), Vec::new())
        } else {
            swarm_mix::mix(s, seed).unwrap_or_else(|| (s.clone(), Vec::new()))
        };
        Input {
            scenario: i,
            seed,
            config,
            off,
            how: WHEEL.into(),
            narrowed: None,
        }
    }
}

/// The order in which the guided explorer's first round runs
/// `scenarios`, each once: a scenario that declares situations in its
/// `[coverage]` table ranks by the one of them the fewest scenarios
/// declare (a situation one scenario alone exists to reach first), and
/// the scenarios that declare nothing come last; equals keep the wheel's
/// (file) order. A declaration is what its author knew about where a
/// situation lives: the library declares, for each scenario, only what its
/// own seeds reach, so a situation few scenarios declare is one few reach.
pub fn first_round_order(scenarios: &[Scenario]) -> Vec<usize> {
    let mut declaring: BTreeMap<&str, usize> = BTreeMap::new();
    for s in scenarios {
        for name in &s.config.coverage.expects {
            *declaring.entry(name.as_str()).or_default() += 1;
        }
    }
    let rank = |s: &Scenario| {
        s.config
            .coverage
            .expects
            .iter()
            .map(|n| declaring.get(n.as_str()).copied().unwrap_or(usize::MAX))
            .min()
            .unwrap_or(usize::MAX)
    };
    let mut order: Vec<usize> = (0..scenarios.len()).collect();
    order.sort_by_key(|&i| (rank(&scenarios[i]), i));
    debug_assert!({
        let mut sorted = order.clone();
        sorted.sort_unstable();
        sorted == (0..scenarios.len()).collect::<Vec<_>>()
    });
    order
}

/// A kept input and the situations its run reached.
#[derive(Clone, Debug)]
struct Kept {
    input: Input,
    reached: BTreeSet<String>,
    /// The situations no run had reached that it came nearer to than any
    /// run before it, with its distance to each.
    near: Vec<(String, u64)>,
    /// How many times it was mutated (the least used of equals goes first).
    picked: u64,
}

/// The explorer's source of runs: the wheel alone (uniform), or the wheel,
/// the scenarios' weights and the corpus (guided).
pub struct Source {
    guided: bool,
    base: u64,
    no_mix: bool,
    wheel: Wheel,
    /// Next turn of the wheel.
    turn: u64,
    /// Turns of the first round (every scenario once).
    first_round: u64,
    /// The guided explorer's first round: which scenario each of its
    /// turns runs ([`first_round_order`]).
    first_order: Vec<usize>,
    /// Each scenario: its turns on the wheel while settled (every other
    /// one is spare).
    settled_turns: Vec<u64>,
    /// Each scenario: its seeds taken so far (its next seed's offset).
    next_seed: Vec<u64>,
    draws: Draws,
    kept: Vec<Kept>,
    rarity: Rarity,
}

impl Source {
    /// A source over `scenarios` from seed `base`.
    pub fn new(scenarios: &[Scenario], base: u64, no_mix: bool, guided: bool) -> Source {
        Source {
            guided,
            base,
            no_mix,
            wheel: Wheel::new(scenarios),
            turn: 0,
            first_round: scenarios.len() as u64,
            first_order: first_round_order(scenarios),
            settled_turns: vec![0; scenarios.len()],
            next_seed: vec![0; scenarios.len()],
            draws: Draws::new(base),
            kept: Vec::new(),
            rarity: {
                let mut r = Rarity::new(scenarios.len());
                for (i, s) in scenarios.iter().enumerate() {
                    r.declare(i, &s.config.coverage.expects);
                }
                r
            },
        }
    }

    /// Whether this source is guided.
    pub fn guided(&self) -> bool {
        self.guided
    }

    /// Inputs kept so far.
    pub fn kept(&self) -> usize {
        self.kept.len()
    }

    /// Distinct situations reached so far.
    pub fn reached(&self) -> usize {
        self.rarity.reached()
    }

    /// The next `n` runs.
    pub fn draw(&mut self, scenarios: &[Scenario], n: u64) -> Vec<Input> {
        (0..n).map(|_| self.next(scenarios)).collect()
    }

    fn next(&mut self, scenarios: &[Scenario]) -> Input {
        if !self.guided {
            return self.next_on_wheel(scenarios);
        }
        if self.turn < self.first_round {
            // The wheel's first round takes every scenario's first seed,
            // each once: so does this one, in its own order.
            let i = self.first_order[self.turn as usize];
            self.turn += 1;
            return self.fresh(scenarios, i);
        }
        let (i, _) = self.wheel.turn(self.turn);
        if !self.spare(i) {
            return self.next_on_wheel(scenarios);
        }
        self.turn += 1;
        if self.draws.below(100) < MUTATE_SHARE_PERCENT && !self.kept.is_empty() {
            return self.mutated(scenarios);
        }
        let j = self.weighted_scenario();
        let mut input = self.fresh(scenarios, j);
        input.how = WEIGHTED.into();
        input
    }

    /// Whether scenario `i`'s turn now is spare: it is settled, and this
    /// is the first, third, ... of its turns while settled.
    fn spare(&mut self, i: usize) -> bool {
        if !self.rarity.settled(i) {
            return false;
        }
        self.settled_turns[i] += 1;
        self.settled_turns[i] % 2 == 1
    }

    /// The next scenario in the wheel's order, at its next seed.
    fn next_on_wheel(&mut self, scenarios: &[Scenario]) -> Input {
        let (i, _) = self.wheel.turn(self.turn);
        self.turn += 1;
        self.fresh(scenarios, i)
    }

    /// Scenario `i`'s next seed on the wheel (for the uniform explorer,
    /// exactly the wheel's turn: a scenario's turns take its seeds in
    /// order).
    fn fresh(&mut self, scenarios: &[Scenario], i: usize) -> Input {
        let n = self.next_seed[i];
        self.next_seed[i] += 1;
        self.wheel.input(scenarios, self.base, (i, n), self.no_mix)
    }

    /// A scenario drawn with weight its
    /// [`Rarity::scenario_weight`].
    fn weighted_scenario(&mut self) -> usize {
        let weights: Vec<u64> = (0..self.next_seed.len())
            .map(|i| self.rarity.scenario_weight(i))
            .collect();
        self.by_weight(&weights)
    }

    /// An index drawn with weight `weights[i]` (the first when all are 0).
    fn by_weight(&mut self, weights: &[u64]) -> usize {
        let total: u64 = weights.iter().sum();
        let mut at = self.draws.below(total.max(1));
        for (i, w) in weights.iter().enumerate() {
            if at < *w {
                return i;
            }
            at -= w;
        }
        0
    }

    /// A mutation of a kept input drawn by its energy.
    fn mutated(&mut self, scenarios: &[Scenario]) -> Input {
        let energies: Vec<u64> = self.kept.iter().map(|k| self.energy(k)).collect();
        let at = self.by_weight(&energies);
        self.kept[at].picked += 1;
        let came_nearer = !self.kept[at].near.is_empty();
        // An input that came nearer after a timing mutation: half the time,
        // the same range narrowed again toward the same end.
        let again = match self.kept[at].input.narrowed.filter(|_| came_nearer) {
            Some(n) if self.draws.below(2) == 0 => {
                narrow_again(&self.kept[at].input.config, n).map(|(c, m)| (c, m, Some(n)))
            }
            _ => None,
        };
        let kept = &self.kept[at].input;
        let original = &scenarios[kept.scenario].config;
        let (config, m, narrowed) =
            again.unwrap_or_else(|| mutate_with(original, &kept.config, &mut self.draws));
        let seed = if m == Mutation::Seed {
            self.draws.below(MAX_DRAWN_SEED)
        } else {
            kept.seed
        };
        Input {
            scenario: kept.scenario,
            seed,
            config,
            off: Vec::new(),
            how: format!("{m} (of {} seed {})", original.name, kept.seed),
            narrowed,
        }
    }

    /// Integer energy of a kept input: each situation it reached counts
    /// its [`Rarity::situation_weight`], and each it came nearest to while
    /// no run reached it its [`Rarity::near_weight`] (so the input holding
    /// a situation's record weighs as much as one that reached a situation
    /// once, one twice as far half that, and none once a run reached it);
    /// halved with every 16 mutations of it so a kept input that leads
    /// nowhere new gives way.
    fn energy(&self, k: &Kept) -> u64 {
        let reached: u64 = k
            .reached
            .iter()
            .map(|s| self.rarity.situation_weight(s))
            .sum();
        let near: u64 = k
            .near
            .iter()
            .map(|(s, d)| self.rarity.near_weight(s, *d))
            .sum();
        ((reached + near) >> (k.picked / 16).min(16)).max(1)
    }

    /// Learns from one run (in run order): answers the situations it
    /// reached for the first time. A run that reached a new or rare
    /// situation is kept, and so is one that came nearer than any run
    /// before to a situation no run reached ([`Rarity::learn_near`]).
    pub fn learn(&mut self, input: &Input, coverage: &Coverage) -> Vec<String> {
        let fresh = !is_mutation(&input.how);
        let (new, rare) = self
            .rarity
            .learn(input.scenario, fresh, coverage.iter().map(|(s, _)| s));
        let near = self.rarity.learn_near(input.scenario, coverage.misses());
        if self.guided && (rare || !near.is_empty()) {
            self.keep(Kept {
                input: input.clone(),
                reached: coverage.iter().map(|(s, _)| s.to_string()).collect(),
                near,
                picked: 0,
            });
        }
        new
    }

    /// The kept inputs that came nearer than any run before them to a
    /// situation no run had reached.
    #[cfg(test)]
    fn kept_near(&self) -> Vec<&Kept> {
        self.kept.iter().filter(|k| !k.near.is_empty()).collect()
    }

    /// Keeps `k`; when full, the kept input of least energy leaves (the
    /// oldest of equals), or `k` itself if it has less.
    fn keep(&mut self, k: Kept) {
        if self.kept.len() < MAX_KEPT {
            self.kept.push(k);
            return;
        }
        let (at, least) = self
            .kept
            .iter()
            .enumerate()
            .map(|(i, e)| (i, self.energy(e)))
            .min_by_key(|(i, e)| (*e, *i))
            .unwrap_or((0, 0));
        if self.energy(&k) > least {
            self.kept.remove(at);
            self.kept.push(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::explore_rarity::SETTLED_AFTER;
    use super::*;

    fn library() -> (tempfile::TempDir, Vec<Scenario>) {
        let dir = tempfile::tempdir().unwrap();
        for (name, seeds) in [("a", 3), ("b", 1), ("c", 5)] {
            std::fs::write(
                dir.path().join(format!("{name}.toml")),
                format!(
                    "seeds = {seeds}\n[faults]\npartition_rate = [0.0, 0.2]\npause_rate = 0.1\n"
                ),
            )
            .unwrap();
        }
        let s = leasehold_model::scenario::load_paths(&[dir.path().to_path_buf()]).unwrap();
        (dir, s)
    }

    /// A stand-in for a run: what an input "reaches" is a pure function of
    /// it (its seed's low bits name situations, one of them rare).
    fn fake_run(i: &Input) -> Coverage {
        let mut c = Coverage::default();
        c.mark("common");
        c.mark(&format!("scenario-{}", i.scenario));
        if i.seed % 97 == 3 {
            c.mark("rare");
        }
        if is_mutation(&i.how) {
            c.mark(&format!("mutated-{}", i.seed % 1_000));
        }
        c
    }

    fn explore(
        s: &[Scenario],
        base: u64,
        runs: u64,
        guided: bool,
    ) -> (Vec<(usize, u64, String)>, Source) {
        let mut src = Source::new(s, base, false, guided);
        let mut seen = Vec::new();
        let mut done = 0;
        while done < runs {
            let gen = src.draw(s, GENERATION.min(runs - done));
            for i in &gen {
                src.learn(i, &fake_run(i));
                seen.push((i.scenario, i.seed, i.how.clone()));
            }
            done += gen.len() as u64;
        }
        (seen, src)
    }

    #[test]
    fn the_same_seed_and_budget_draw_the_same_runs() {
        let (_d, s) = library();
        let (a, _) = explore(&s, 11, 300, true);
        let (b, _) = explore(&s, 11, 300, true);
        let (c, _) = explore(&s, 12, 300, true);
        assert_eq!(a, b, "same explore seed, same runs");
        assert_ne!(a, c, "another seed, other runs");
        // A shorter budget draws a prefix of the longer one.
        let (short, _) = explore(&s, 11, 100, true);
        assert_eq!(short[..], a[..100]);
    }

    #[test]
    fn kept_inputs_are_mutated_and_fresh_runs_are_the_uniform_inputs() {
        let (_d, s) = library();
        let (runs, src) = explore(&s, 5, 400, true);
        assert!(src.kept() > 0, "new situations keep their inputs");
        let count = |p: &dyn Fn(&str) -> bool| runs.iter().filter(|r| p(&r.2)).count();
        let mutated = count(&|h| is_mutation(h));
        let weighted = count(&|h| h == WEIGHTED);
        let wheel = count(&|h| h == WHEEL);
        // Spare turns (a settled scenario's every other turn) mutate a
        // quarter of the time and draw by weight otherwise; every other
        // turn after the first round is the wheel's.
        assert!(mutated > 0 && weighted > mutated, "{mutated} {weighted}");
        assert!(wheel > 2 * (mutated + weighted), "wheel: {wheel}");
        assert!(runs.iter().any(|r| r.2.starts_with("seed")));
        assert!(runs
            .iter()
            .any(|r| !r.2.starts_with("seed") && is_mutation(&r.2)));
        // The uniform source never mutates and keeps nothing.
        let (uniform, u) = explore(&s, 5, 2_000, false);
        assert!(uniform.iter().all(|r| r.2 == WHEEL));
        assert_eq!(u.kept(), 0);
        // A fresh run (of the wheel or by weight) is an input the uniform
        // explorer runs too: each scenario's seeds in order, none twice.
        let fresh: Vec<_> = runs.iter().filter(|r| !is_mutation(&r.2)).collect();
        let uniform_inputs: BTreeSet<(usize, u64)> = uniform.iter().map(|r| (r.0, r.1)).collect();
        assert_eq!(uniform_inputs.len(), uniform.len(), "uniform never repeats");
        for (i, _) in s.iter().enumerate() {
            let seeds: Vec<u64> = fresh.iter().filter(|r| r.0 == i).map(|r| r.1).collect();
            let expected: Vec<u64> = (0..seeds.len() as u64).map(|n| 5 + n).collect();
            assert_eq!(seeds, expected, "scenario {i}: its wheel seeds in order");
            assert!(seeds.iter().all(|&n| uniform_inputs.contains(&(i, n))));
        }
    }

    /// A library of `n` scenarios of one seed each.
    fn many(n: usize) -> (tempfile::TempDir, Vec<Scenario>) {
        let dir = tempfile::tempdir().unwrap();
        for k in 0..n {
            std::fs::write(
                dir.path().join(format!("s{k:02}.toml")),
                "seeds = 1\n[faults]\npartition_rate = [0.0, 0.2]\npause_rate = 0.1\n",
            )
            .unwrap();
        }
        let s = leasehold_model::scenario::load_paths(&[dir.path().to_path_buf()]).unwrap();
        (dir, s)
    }

    #[test]
    fn the_first_round_runs_every_scenario_before_any_other_draw() {
        // More scenarios than a generation: the first generation already
        // reaches new situations (each scenario its own), so a corpus is
        // kept before the round ends; the round still comes first.
        let (_d, s) = many(GENERATION as usize + 9);
        let n = s.len();
        for base in [1, 2, 77] {
            let (runs, src) = explore(&s, base, n as u64, true);
            assert!(src.kept() > 0);
            let order: Vec<usize> = runs.iter().map(|r| r.0).collect();
            assert_eq!(
                order,
                (0..n).collect::<Vec<_>>(),
                "every scenario once, in order"
            );
            assert!(runs.iter().all(|r| r.2 == WHEEL && r.1 == base));
        }
    }

    #[test]
    fn the_first_round_runs_first_what_few_scenarios_declare() {
        // Six scenarios: s3 alone declares one situation, s1 and s4 another
        // (s4 both), the rest nothing.
        let dir = tempfile::tempdir().unwrap();
        let rare = "[coverage]\nexpects = [\"cancel-racing-a-claim\"]\n";
        let shared = "[coverage]\nexpects = [\"wake-up-lost\"]\n";
        let both = "[coverage]\nexpects = [\"wake-up-lost\", \"lease-returned-at-shutdown\"]\n";
        for (k, extra) in ["", shared, "", rare, both, ""].iter().enumerate() {
            std::fs::write(
                dir.path().join(format!("s{k}.toml")),
                format!("seeds = 2\n[faults]\npause_rate = 0.1\n{extra}"),
            )
            .unwrap();
        }
        let s = leasehold_model::scenario::load_paths(&[dir.path().to_path_buf()]).unwrap();
        // s4's rarest: lease-returned-at-shutdown, which it alone declares,
        // ties with s3's (one declarer each): file order between them.
        assert_eq!(first_round_order(&s), vec![3, 4, 1, 0, 2, 5]);
        let (g, _) = explore(&s, 9, 12, true);
        let (u, _) = explore(&s, 9, 12, false);
        let firsts = |runs: &[(usize, u64, String)]| -> Vec<usize> {
            runs[..6].iter().map(|r| r.0).collect()
        };
        assert_eq!(firsts(&g), vec![3, 4, 1, 0, 2, 5], "guided: rarest first");
        assert_eq!(firsts(&u), vec![0, 1, 2, 3, 4, 5], "uniform: file order");
        // The same inputs by the round's end: each scenario's first seed.
        let mut gr: Vec<_> = g[..6].iter().map(|r| (r.0, r.1)).collect();
        gr.sort();
        let ur: Vec<_> = u[..6].iter().map(|r| (r.0, r.1)).collect();
        assert_eq!(gr, ur);
        // Scenarios that declare nothing keep the wheel's order.
        let (_d, plain) = many(5);
        assert_eq!(first_round_order(&plain), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_scenario_reaching_a_rare_situation_gets_more_of_the_runs() {
        // 24 scenarios; only scenario 5 reaches "only-five", on every seed
        // (rare across scenarios, as the library's rare situations are).
        let (_d, s) = many(24);
        let run = |i: &Input| {
            let mut c = Coverage::default();
            c.mark("common");
            if i.scenario == 5 {
                c.mark("only-five");
            }
            c
        };
        // Each scenario's runs, and those of them drawn by weight.
        let runs_of = |guided: bool| {
            let mut src = Source::new(&s, 3, false, guided);
            let mut per = vec![(0u64, 0u64); s.len()];
            for _ in 0..(480 / GENERATION) {
                for i in src.draw(&s, GENERATION) {
                    src.learn(&i, &run(&i));
                    per[i.scenario].0 += 1;
                    per[i.scenario].1 += u64::from(i.how == WEIGHTED);
                }
            }
            per
        };
        let (g, u) = (runs_of(true), runs_of(false));
        assert_eq!(u, vec![(20, 0); 24], "uniform: each scenario alike");
        let most_other = |f: fn(&(u64, u64)) -> u64| {
            g.iter()
                .enumerate()
                .filter(|(k, _)| *k != 5)
                .map(|(_, x)| f(x))
                .max()
                .unwrap()
        };
        assert!(g[5].0 >= 3 * u[5].0, "guided runs scenario 5 most: {g:?}");
        assert!(most_other(|x| x.0) < g[5].0 / 2, "{g:?}");
        assert!(g.iter().all(|x| x.0 >= 3), "no scenario starved: {g:?}");
    }

    #[test]
    fn a_scenario_whose_seeds_differ_runs_each_seed_no_later_than_uniform() {
        // 24 scenarios of one seed each: the first 12 reach the same
        // situation on every seed (they settle), the last 12 something of
        // each seed's own (never settled).
        let (_d, s) = many(24);
        let run = |i: &Input| {
            let mut c = Coverage::default();
            c.mark("common");
            if i.scenario >= 12 && !is_mutation(&i.how) {
                c.mark(&format!("varied-{}-{}", i.scenario, i.seed));
            }
            c
        };
        // After each run, each scenario's fresh runs so far.
        let fresh_counts = |guided: bool| {
            let mut src = Source::new(&s, 40, false, guided);
            let mut per = vec![0u64; s.len()];
            let mut after = Vec::new();
            for _ in 0..(960 / GENERATION) {
                for i in src.draw(&s, GENERATION) {
                    src.learn(&i, &run(&i));
                    per[i.scenario] += u64::from(!is_mutation(&i.how));
                    after.push(per.clone());
                }
            }
            after
        };
        let (g, u) = (fresh_counts(true), fresh_counts(false));
        for (r, (g, u)) in g.iter().zip(&u).enumerate() {
            for k in 0..24 {
                if k >= 12 {
                    assert!(g[k] >= u[k], "run {r}, scenario {k}: {} < {}", g[k], u[k]);
                } else {
                    // Settled after SETTLED_AFTER runs, then every other turn.
                    let floor =
                        u[k].saturating_sub(SETTLED_AFTER).div_ceil(2) + SETTLED_AFTER.min(u[k]);
                    assert!(
                        g[k] + 1 >= floor,
                        "run {r}, scenario {k}: {} of {}",
                        g[k],
                        u[k]
                    );
                }
            }
        }
        // Guidance spent the settled scenarios' spare turns: they ran fewer
        // seeds, the varied ones more.
        let (gl, ul) = (g.last().unwrap(), u.last().unwrap());
        let settled = |c: &Vec<u64>| c[..12].iter().sum::<u64>();
        let varied = |c: &Vec<u64>| c[12..].iter().sum::<u64>();
        assert!(settled(gl) * 10 < settled(ul) * 7, "{gl:?} {ul:?}");
        assert!(varied(gl) > varied(ul) + 100, "{gl:?} {ul:?}");
    }

    #[test]
    fn fresh_runs_are_drawn_by_the_scenarios_weight() {
        // After the first round, scenario 5 alone reached a situation, once:
        // it weighs UNIT + UNIT/8, each other scenario UNIT/8, so about 27 %
        // of the runs drawn by weight go to it (1 in 24 if drawn evenly).
        let (_d, s) = many(24);
        let mut src = Source::new(&s, 8, false, true);
        for i in src.draw(&s, 24) {
            let mut c = Coverage::default();
            if i.scenario == 5 {
                c.mark("only-five");
            }
            src.learn(&i, &c);
        }
        let mut per = [0u32; 24];
        for _ in 0..2_400 {
            per[src.weighted_scenario()] += 1;
        }
        let most_other = per.iter().enumerate().filter(|(k, _)| *k != 5);
        let most_other = most_other.map(|x| *x.1).max().unwrap();
        assert!((500..=800).contains(&per[5]), "{per:?}");
        assert!(per[5] > 4 * most_other, "{per:?}");
        assert!(per.iter().all(|&n| n > 0), "none left out: {per:?}");
    }

    #[test]
    fn an_input_that_came_nearer_is_kept_and_mutated() {
        // 24 scenarios that all reach the same (they settle and give spare
        // turns); scenario 7's runs never reach "target" but miss it by a
        // distance of their seed's, so some of its runs beat the record.
        let (_d, s) = many(24);
        let run = |i: &Input| {
            let mut c = Coverage::default();
            c.mark("common");
            if i.scenario == 7 {
                c.near_miss("target", 1 + i.seed.wrapping_mul(0x9e37_79b9) % 1_000);
            }
            c
        };
        let mut src = Source::new(&s, 21, false, true);
        let mut runs = Vec::new();
        for _ in 0..(960 / GENERATION) {
            for i in src.draw(&s, GENERATION) {
                src.learn(&i, &run(&i));
                runs.push(i);
            }
        }
        let near = src.kept_near();
        assert!(near.len() >= 2, "records are kept: {}", near.len());
        // Kept in run order, each nearer than every one before it.
        let distances: Vec<u64> = near.iter().map(|k| k.near[0].1).collect();
        assert!(distances.windows(2).all(|w| w[1] < w[0]), "{distances:?}");
        assert!(near
            .iter()
            .all(|k| k.input.scenario == 7 && k.near[0].0 == "target"));
        // The spare turns mutate them.
        let name = &s[7].config.name;
        let of_kept = |i: &Input| {
            near.iter().any(|k| {
                i.how
                    .ends_with(&format!("(of {name} seed {})", k.input.seed))
            })
        };
        let mutated = runs.iter().filter(|i| is_mutation(&i.how) && of_kept(i));
        assert!(mutated.count() > 0, "no mutation of a nearer input");
        // And the scenario nearest to a situation no run reached gets more
        // of the fresh runs drawn by weight than any other.
        let weighted = |k: usize| {
            runs.iter()
                .filter(|i| i.scenario == k && i.how == WEIGHTED)
                .count()
        };
        let most_other = (0..24).filter(|&k| k != 7).map(weighted).max().unwrap();
        assert!(weighted(7) > 2 * most_other, "{} {most_other}", weighted(7));
        // Once a run reaches it, it has no record and weighs nothing near.
        let mut c = Coverage::default();
        c.mark("target");
        let mut reaching = runs[0].clone();
        reaching.scenario = 3;
        src.learn(&reaching, &c);
        assert_eq!(src.rarity.record("target"), None);
        assert_eq!(src.rarity.near_weight("target", 5), 0);
    }

    #[test]
    fn the_corpus_is_bounded() {
        let (_d, s) = library();
        // Every run reaches a situation of its own seed's (one of 5,000),
        // new to all runs before it, so far more than MAX_KEPT runs ask to
        // be kept.
        let mut src = Source::new(&s, 9, false, true);
        for _ in 0..(3_000 / GENERATION) {
            for i in src.draw(&s, GENERATION) {
                let mut c = fake_run(&i);
                c.mark(&format!("seed-{}", i.seed % 5_000));
                src.learn(&i, &c);
                assert!(src.kept() <= MAX_KEPT);
            }
        }
        assert_eq!(src.kept(), MAX_KEPT, "full, and never above");
        assert!(src.reached() > 2 * MAX_KEPT, "{}", src.reached());
    }
}
