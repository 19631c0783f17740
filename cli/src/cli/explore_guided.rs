//! Where `leasehold explore` draws its next runs: uniformly (the library's
//! seed wheel with a swarm mix for half the seeds, as before), or guided
//! by coverage (the default): a bounded corpus keeps the inputs that
//! reached a situation for the first time or one reached rarely, and most
//! runs are mutations of a kept input ([`super::explore_mutate`]), while a
//! fixed share ([`UNIFORM_SHARE_PERCENT`]) still comes off the wheel so no
//! scenario is starved.
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
//!   of situations one entry per situation name (the scenarios the CLI
//!   runs mark only the built-in ones, a fixed list).

use super::explore_mutate::{mutate, Draws, Mutation};
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
/// Share of the guided explorer's runs still drawn off the wheel, in
/// percent: nothing is starved, and a corpus still empty fills.
pub const UNIFORM_SHARE_PERCENT: u64 = 25;
/// A situation reached by fewer runs than this so far is rare: a run
/// reaching it is kept.
pub const RARE_RUNS: u64 = 8;
/// Largest seed a mutation draws (corpus files pin seeds as TOML integers).
const MAX_DRAWN_SEED: u64 = (i64::MAX as u64) / 2;

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
    /// How it was drawn: `wheel`, or the mutation of a kept input.
    pub how: String,
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

    /// Exploration seed k: the scenario and its seed offset from the base.
    pub fn turn(&self, k: u64) -> (usize, u64) {
        let w = self.slots.len() as u64;
        let (i, occ, per) = self.slots[(k % w) as usize];
        (i, (k / w).wrapping_mul(per).wrapping_add(occ))
    }

    /// Turn `k` as an input: seed `base + offset`, with its swarm mix
    /// unless `no_mix`.
    pub fn input(&self, scenarios: &[Scenario], base: u64, k: u64, no_mix: bool) -> Input {
        let (i, n) = self.turn(k);
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
            how: "wheel".into(),
        }
    }
}

/// A kept input and the situations its run reached.
#[derive(Clone, Debug)]
struct Kept {
    input: Input,
    reached: BTreeSet<String>,
    /// How many times it was mutated (the least used of equals goes first).
    picked: u64,
}

/// The explorer's source of runs: the wheel alone (uniform), or the wheel
/// and the corpus (guided).
pub struct Source {
    guided: bool,
    base: u64,
    no_mix: bool,
    wheel: Wheel,
    /// Next turn of the wheel.
    turn: u64,
    draws: Draws,
    kept: Vec<Kept>,
    /// Each situation: how many runs so far reached it.
    runs_reaching: BTreeMap<String, u64>,
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
            draws: Draws::new(base),
            kept: Vec::new(),
            runs_reaching: BTreeMap::new(),
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
        self.runs_reaching.len()
    }

    /// The next `n` runs.
    pub fn draw(&mut self, scenarios: &[Scenario], n: u64) -> Vec<Input> {
        (0..n).map(|_| self.next(scenarios)).collect()
    }

    fn next(&mut self, scenarios: &[Scenario]) -> Input {
        let from_wheel =
            !self.guided || self.kept.is_empty() || self.draws.below(100) < UNIFORM_SHARE_PERCENT;
        if from_wheel {
            let k = self.turn;
            self.turn += 1;
            return self.wheel.input(scenarios, self.base, k, self.no_mix);
        }
        let at = self.pick();
        self.kept[at].picked += 1;
        let kept = &self.kept[at].input;
        let original = &scenarios[kept.scenario].config;
        let (config, m) = mutate(original, &kept.config, &mut self.draws);
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
        }
    }

    /// A kept input, drawn with weight its energy: the rarer the situations
    /// it reached are now, the more it is mutated.
    fn pick(&mut self) -> usize {
        let energies: Vec<u64> = self.kept.iter().map(|k| self.energy(k)).collect();
        let total: u64 = energies.iter().sum();
        let mut at = self.draws.below(total.max(1));
        for (i, e) in energies.iter().enumerate() {
            if at < *e {
                return i;
            }
            at -= e;
        }
        0
    }

    /// Integer energy of a kept input: each situation it reached counts
    /// `2^20 / runs reaching it`, halved with every 16 mutations of it so
    /// a kept input that leads nowhere new gives way.
    fn energy(&self, k: &Kept) -> u64 {
        let sum: u64 = k
            .reached
            .iter()
            .map(|s| (1u64 << 20) / self.runs_reaching.get(s).copied().unwrap_or(1).max(1))
            .sum();
        (sum >> (k.picked / 16).min(16)).max(1)
    }

    /// Learns from one run (in run order): answers the situations it
    /// reached for the first time. A run that reached a new or rare
    /// situation is kept.
    pub fn learn(&mut self, input: &Input, coverage: &Coverage) -> Vec<String> {
        let mut new = Vec::new();
        let mut rare = false;
        for (name, _) in coverage.iter() {
            let n = self.runs_reaching.entry(name.to_string()).or_insert(0);
            if *n == 0 {
                new.push(name.to_string());
            }
            rare |= *n < RARE_RUNS;
            *n += 1;
        }
        if self.guided && rare {
            self.keep(Kept {
                input: input.clone(),
                reached: coverage.iter().map(|(s, _)| s.to_string()).collect(),
                picked: 0,
            });
        }
        new
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
        if i.how != "wheel" {
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
    fn kept_inputs_are_mutated_and_a_share_stays_uniform() {
        let (_d, s) = library();
        let (runs, src) = explore(&s, 5, 400, true);
        assert!(src.kept() > 0, "new situations keep their inputs");
        let mutated = runs.iter().filter(|r| r.2 != "wheel").count();
        let wheel = runs.len() - mutated;
        assert!(mutated > 200, "most runs mutate a kept input: {mutated}");
        assert!(wheel >= 60, "a fixed share stays uniform: {wheel}");
        assert!(runs.iter().any(|r| r.2.starts_with("seed")));
        assert!(runs
            .iter()
            .any(|r| !r.2.starts_with("seed") && r.2 != "wheel"));
        // The uniform source never mutates and keeps nothing.
        let (uniform, u) = explore(&s, 5, 400, false);
        assert!(uniform.iter().all(|r| r.2 == "wheel"));
        assert_eq!(u.kept(), 0);
        // The wheel share of the guided explorer is the uniform sequence.
        let guided_wheel: Vec<_> = runs.iter().filter(|r| r.2 == "wheel").collect();
        assert!(guided_wheel
            .iter()
            .zip(&uniform)
            .all(|(g, u)| (g.0, g.1) == (u.0, u.1)));
    }

    #[test]
    fn the_corpus_is_bounded() {
        let (_d, s) = library();
        // Every mutated run reaches a situation of its own (one of 1,000),
        // so far more than MAX_KEPT runs ask to be kept.
        let (_, src) = explore(&s, 9, 3_000, true);
        assert_eq!(src.kept(), MAX_KEPT, "full, and never above");
        assert!(src.reached() > MAX_KEPT);
    }
}
