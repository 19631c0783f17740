//! Judging runs against their scenario's `[expect]`.
//!
//! - A scenario without `expect.violation` passes a seed when every
//!   invariant held on it. Each seed counts as one run.
//! - A scenario with `expect.violation = "Ix"` (a catalogued bug) passes
//!   when *any* of its seeds shows a violation of Ix. Each of its seeds
//!   still counts as one run, and all of them share the verdict: all passed
//!   when the bug was caught, all failed when it was not. Other invariants
//!   broken along the way are expected collateral of the bug and do not
//!   fail it.
//! - A seed whose run could not be carried out (harness error, panic) is an
//!   error, whatever the expectation.
//! - A scenario that declares situations (`[coverage] expects`) fails when
//!   one of them was reached on none of its seeds that ran: each of its
//!   seeds that met its expectation is then [`Verdict::Uncovered`], named
//!   with the situation. Judged only over a whole plan ([`Coverage::Judge`]):
//!   one shard holds part of a scenario's seeds, so `leasehold merge`
//!   judges it, and a single `--seed` judges none; nor does a plan of
//!   fewer seeds than the scenario's own budget (`--seeds 3` on a
//!   scenario of 10).

use super::coverage::{missing_reason, Tally};
use super::engine::Shown;
use super::plan::Task;
use leasehold_model::config::{InvariantId, SimConfig};

/// The verdict on one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The expectation held.
    Passed,
    /// The expectation did not hold; the reason in one line.
    Failed(String),
    /// The harness failed.
    Error(String),
    /// The expectation held, but a situation the scenario declares was
    /// reached on none of its seeds; the reason names it.
    Uncovered(String),
}

/// Whether [`judge`] holds scenarios to their declared situations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// The seeds are all of each scenario's: judge the declarations.
    Judge,
    /// Part of the seeds only (one shard, one `--seed`): do not.
    Skip,
}

/// Catalogue detections: scenario index, expected invariant and the
/// lowest seed that found it (`None`: not found).
#[derive(Clone, Debug, PartialEq)]
pub struct Detection {
    /// Index of the scenario.
    pub scenario: usize,
    /// The invariant it must break.
    pub invariant: InvariantId,
    /// Lowest seed that found it.
    pub first_seed: Option<u64>,
    /// Seeds run (in order up to and including the first detection).
    pub seeds_to_detect: usize,
    /// Wall seconds spent on those seeds, run one after another.
    pub wall_to_detect: f64,
}

/// One seed's status on its own, as `--json` streams it before the whole
/// scenario is judged: `passed`, `failed` or `error` for a correct-core
/// scenario; `caught`, `not_caught` or `error` for a seed of a catalogue
/// scenario, whose verdict needs all of its seeds.
pub fn seed_status(cfg: &SimConfig, result: &Result<Shown, String>) -> &'static str {
    match (result, cfg.expect.violation) {
        (Err(_), _) => "error",
        (Ok(r), None) if r.violations().is_empty() => "passed",
        (Ok(_), None) => "failed",
        (Ok(r), Some(inv)) if r.violations().iter().any(|v| v.invariant == inv) => "caught",
        (Ok(_), Some(_)) => "not_caught",
    }
}

/// Judges every task; `results[i]` belongs to `tasks[i]`, `walls[i]` is its
/// wall time in seconds.
pub fn judge(
    configs: &[&SimConfig],
    tasks: &[Task],
    results: &[Result<Shown, String>],
    walls: &[f64],
    coverage: Coverage,
) -> (Vec<Verdict>, Vec<Detection>) {
    let mut detections = Vec::new();
    for (i, cfg) in configs.iter().enumerate() {
        let Some(inv) = cfg.expect.violation else {
            continue;
        };
        let mut mine: Vec<usize> = (0..tasks.len())
            .filter(|&k| tasks[k].scenario == i)
            .collect();
        if mine.is_empty() {
            continue;
        }
        mine.sort_by_key(|&k| tasks[k].seed);
        let hit = mine.iter().position(|&k| {
            results[k]
                .as_ref()
                .is_ok_and(|r| r.violations().iter().any(|v| v.invariant == inv))
        });
        let upto = hit.map_or(mine.len(), |h| h + 1);
        detections.push(Detection {
            scenario: i,
            invariant: inv,
            first_seed: hit.map(|h| tasks[mine[h]].seed),
            seeds_to_detect: upto,
            wall_to_detect: mine[..upto].iter().map(|&k| walls[k]).sum(),
        });
    }
    let verdicts = tasks
        .iter()
        .zip(results)
        .map(|(t, r)| {
            let r = match r {
                Err(e) => return Verdict::Error(e.clone()),
                Ok(r) => r,
            };
            let cfg = configs[t.scenario];
            match cfg.expect.violation {
                None if r.violations().is_empty() => Verdict::Passed,
                None => {
                    let first = &r.found()[0];
                    Verdict::Failed(first.summary.clone())
                }
                Some(inv) => {
                    let d = detections.iter().find(|d| d.scenario == t.scenario);
                    if d.is_some_and(|d| d.first_seed.is_some()) {
                        Verdict::Passed
                    } else {
                        Verdict::Failed(format!(
                            "expected a violation of {inv} ({}) within the seed budget; none found",
                            inv.name()
                        ))
                    }
                }
            }
        })
        .collect();
    let verdicts = match coverage {
        Coverage::Judge => uncovered(configs, tasks, results, verdicts),
        Coverage::Skip => verdicts,
    };
    (verdicts, detections)
}

/// Each scenario's coverage over its seeds that ran.
pub fn tallies(n: usize, tasks: &[Task], results: &[Result<Shown, String>]) -> Vec<Tally> {
    let mut out = vec![Tally::default(); n];
    for (t, r) in tasks.iter().zip(results) {
        if let (Some(tally), Ok(r)) = (out.get_mut(t.scenario), r) {
            tally.add_seed(r.outcome.coverage.iter());
        }
    }
    out
}

/// `verdicts` with every passing seed of a scenario whose declared
/// situations were not all reached made [`Verdict::Uncovered`].
fn uncovered(
    configs: &[&SimConfig],
    tasks: &[Task],
    results: &[Result<Shown, String>],
    mut verdicts: Vec<Verdict>,
) -> Vec<Verdict> {
    let tallies = tallies(configs.len(), tasks, results);
    for (i, cfg) in configs.iter().enumerate() {
        let missing = tallies[i].missing_within(&cfg.coverage.expects, cfg.seeds);
        if missing.is_empty() {
            continue;
        }
        let reason = missing_reason(&missing, tallies[i].seeds);
        for (t, v) in tasks.iter().zip(verdicts.iter_mut()) {
            if t.scenario == i && *v == Verdict::Passed {
                *v = Verdict::Uncovered(reason.clone());
            }
        }
    }
    verdicts
}
