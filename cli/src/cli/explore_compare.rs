//! `leasehold explore --compare`: the guided and the uniform explorer on
//! the same scenarios, from the same seed base, for the same budget, in one
//! invocation. They take turns a generation of runs at a time (so a load
//! that comes and goes on a shared machine falls on both alike), and each
//! one's wall time is the sum of its own generations.
//!
//! It prints, for each: the situations reached, and for each situation
//! the run (and the seconds) at which it was first reached; with
//! `--catalogue DIR`, each catalogue bug planted into the explored
//! (correct) scenarios, and the run at which each explorer first broke the
//! invariant the bug breaks. It writes no corpus and shrinks nothing.
//!
//! Invariants: both explorers get the same runs budget (and a `--for`
//! limit is checked only before the guided explorer's turn, so both have
//! run the same number of generations when it ends); the figures are a
//! pure function of the seed base and the budget except the seconds.

use super::args::ExploreArgs;
use super::explore::{prepare, Prepared};
use super::explore_guided::{Source, GENERATION};
use super::explore_rarity::{rare_share, RARE_PERCENT};
use super::explore_runs;
use super::stores::Stores;
use super::ExitCode;
use leasehold_model::config::InvariantId;
use leasehold_model::scenario::{load_paths, Scenario};
use leasehold_sim::coverage::Coverage;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What one explorer did in a comparison.
#[derive(Default)]
struct Tally {
    runs: u64,
    wall: Duration,
    /// Each situation: the run and the seconds (at the end of its
    /// generation) when it was first reached.
    first: BTreeMap<String, (u64, f64)>,
    /// Each situation: runs reaching it.
    reach: BTreeMap<String, u64>,
    /// Each situation some run missed by a measured distance: the nearest
    /// miss (reported for the situations never reached).
    nearest: BTreeMap<String, u64>,
    failures: u64,
    /// The run and seconds at which the watched invariant first broke.
    caught: Option<(u64, f64)>,
}

/// The two explorers' names, in the order they take turns.
const NAMES: [&str; 2] = ["guided", "uniform"];

/// What both explorers explore, and how.
#[derive(Clone, Copy)]
struct Field<'a> {
    scenarios: &'a [Scenario],
    stores: &'a Stores,
    base: u64,
    jobs: usize,
    no_mix: bool,
}

/// Runs both explorers for `budget` runs each (or until `limit` in all),
/// each stopping early when `catch` breaks. Answers [guided, uniform].
fn race(
    f: &Field<'_>,
    budget: u64,
    limit: Option<Duration>,
    catch: Option<InvariantId>,
) -> [Tally; 2] {
    let Field {
        scenarios,
        stores,
        base,
        jobs,
        no_mix,
    } = *f;
    let started = Instant::now();
    let mut sources = [
        Source::new(scenarios, base, no_mix, true),
        Source::new(scenarios, base, no_mix, false),
    ];
    let mut tallies = [Tally::default(), Tally::default()];
    let never = || false;
    loop {
        if limit.is_some_and(|l| started.elapsed() >= l) {
            break;
        }
        let mut any = false;
        for (source, t) in sources.iter_mut().zip(tallies.iter_mut()) {
            if t.runs >= budget || t.caught.is_some() {
                continue;
            }
            any = true;
            let inputs = source.draw(scenarios, GENERATION.min(budget - t.runs));
            let t0 = Instant::now();
            let results = explore_runs::generation(&inputs, scenarios, stores, jobs, &never);
            t.wall += t0.elapsed();
            let secs = t.wall.as_secs_f64();
            for (input, result) in inputs.iter().zip(results) {
                let Some(result) = result else { continue };
                t.runs += 1;
                let none = Coverage::default();
                let coverage = result.as_ref().map_or(&none, |r| &r.outcome.coverage);
                for name in source.learn(input, coverage) {
                    t.first.insert(name, (t.runs, secs));
                }
                for (name, _) in coverage.iter() {
                    *t.reach.entry(name.to_string()).or_default() += 1;
                }
                for (name, d) in coverage.misses() {
                    let nearest = t.nearest.entry(name.to_string()).or_insert(d);
                    *nearest = (*nearest).min(d);
                }
                let broke = |inv: InvariantId| {
                    result
                        .as_ref()
                        .is_ok_and(|r| r.violations().iter().any(|v| v.invariant == inv))
                };
                if catch.is_some_and(broke) && t.caught.is_none() {
                    t.caught = Some((t.runs, secs));
                }
                if result.as_ref().map_or(true, |r| !r.violations().is_empty()) {
                    t.failures += 1;
                }
            }
        }
        if !any {
            break;
        }
    }
    tallies
}

/// Runs the command's `--compare` form.
pub fn run(args: &ExploreArgs) -> ExitCode {
    if args.max_seeds.is_none() && args.for_.is_none() {
        eprintln!("leasehold: --compare needs a budget: --max-seeds N (runs each) or --for");
        return ExitCode::Input;
    }
    let Prepared {
        scenarios,
        stores,
        base,
        jobs,
    } = match prepare(args) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let budget = args.max_seeds.unwrap_or(u64::MAX);
    let limit = args.for_.map(|d| Duration::from_millis(d.0 .0));
    println!(
        "guided against uniform exploration: {} scenarios from seed base {base}, {} each, \
         on {jobs} threads, in turns of {GENERATION} runs",
        scenarios.len(),
        args.max_seeds
            .map_or_else(|| "until the time limit".into(), |n| format!("{n} runs"))
    );
    let field = Field {
        scenarios: &scenarios,
        stores: &stores,
        base,
        jobs,
        no_mix: args.no_swarm_mix,
    };
    let [g, u] = race(&field, budget, limit, None);
    print_coverage(&g, &u, scenarios.len() as u64);
    let mut code = if g.failures + u.failures > 0 {
        ExitCode::Violation
    } else {
        ExitCode::Ok
    };
    if let Some(dir) = &args.catalogue {
        if let Err(code_of_input) = bugs(args, dir, &field) {
            code = code_of_input;
        }
    }
    code
}

/// Prints what each explorer reached and when; `first_round` is the
/// first round (every scenario's first seed once), which both run, each
/// in its own order.
fn print_coverage(g: &Tally, u: &Tally, first_round: u64) {
    let both = [g, u];
    for (name, t) in NAMES.iter().zip(both) {
        println!(
            "  {name:8} {} runs in {:.1}s: {} situations reached, {} failures",
            t.runs,
            t.wall.as_secs_f64(),
            t.first.len(),
            t.failures
        );
    }
    // Rarest first (fewest runs reaching it under the uniform explorer).
    let mut names: Vec<&String> = g.first.keys().chain(u.first.keys()).collect();
    names.sort_by_key(|n| (u.reach.get(*n).copied().unwrap_or(0), *n));
    names.dedup();
    println!("first reached (run, seconds; runs reaching it) guided | uniform:");
    let cell = |t: &Tally, n: &str| match t.first.get(n) {
        Some((run, secs)) => format!(
            "run {run} at {secs:.1}s ({} runs)",
            t.reach.get(n).copied().unwrap_or(0)
        ),
        None => "never".into(),
    };
    let (mut sooner, mut same, mut later, mut rare, mut in_round) = (0, 0, 0, 0, 0);
    for n in &names {
        println!("  {n}: {} | {}", cell(g, n.as_str()), cell(u, n.as_str()));
        // Rare: reached by at most RARE_PERCENT of the uniform runs (the
        // share the guided explorer steers by), or by guided only.
        if rare_share(u.reach.get(*n).copied().unwrap_or(0), u.runs) {
            rare += 1;
            match (g.first.get(*n), u.first.get(*n)) {
                (Some(a), Some(b)) if a.0 < b.0 => sooner += 1,
                (Some(_), None) => sooner += 1,
                (Some(a), Some(b)) if a.0 > b.0 => later += 1,
                (None, Some(_)) => later += 1,
                (Some(a), Some(_)) if a.0 <= first_round => {
                    same += 1;
                    in_round += 1;
                }
                _ => same += 1,
            }
        }
    }
    let only = |a: &Tally, b: &Tally| -> Vec<String> {
        a.first
            .keys()
            .filter(|n| !b.first.contains_key(*n))
            .cloned()
            .collect()
    };
    println!(
        "reached by guided only: [{}]; by uniform only: [{}]",
        only(g, u).join(", "),
        only(u, g).join(", ")
    );
    println!(
        "rare situations (reached by at most {RARE_PERCENT}% of the uniform runs, or by guided \
         only): {rare}; guided first to reach {sooner}, both at the same run {same}, uniform \
         first to reach {later}; of the same-run ones, {in_round} in the first round (runs 1 to \
         {first_round}, every scenario's first seed once, in the wheel's order for the uniform \
         explorer and rarest declaration first for the guided one)"
    );
    // How near each came to what neither reached: what guides the next
    // runs toward it.
    let never: Vec<String> = g
        .nearest
        .keys()
        .chain(u.nearest.keys())
        .filter(|n| !g.first.contains_key(*n) && !u.first.contains_key(*n))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|n| {
            let d = |t: &Tally| t.nearest.get(&n).map_or("-".into(), |d| d.to_string());
            format!("{n} {} | {}", d(g), d(u))
        })
        .collect();
    if !never.is_empty() {
        println!(
            "reached by neither; nearest miss guided | uniform (ms, or plan times for \
             catch-up-at-its-bound): {}",
            never.join("; ")
        );
    }
}

/// Plants each catalogue bug of `dir` into the explored scenarios and
/// counts the runs each explorer takes to break its invariant.
fn bugs(args: &ExploreArgs, dir: &std::path::Path, field: &Field<'_>) -> Result<(), ExitCode> {
    let (scenarios, stores) = (field.scenarios, field.stores);
    let catalogue = load_paths(&[dir.to_path_buf()]).map_err(|e| {
        crate::diagnostic::eprint_load_errors(&e);
        ExitCode::Input
    })?;
    let mut planted: BTreeMap<(String, String), InvariantId> = BTreeMap::new();
    for c in &catalogue {
        if let (Some(v), Some(inv)) = (&c.config.variant, c.config.expect.violation) {
            planted.insert((v.clone(), inv.to_string()), inv);
        }
    }
    let budget = args.catalogue_seeds;
    println!(
        "catalogue bugs from random bases: each of {} bugs planted into the {} explored \
         scenarios, at most {budget} runs each explorer (run, seconds to first break the bug's \
         invariant) guided | uniform:",
        planted.len(),
        scenarios.len()
    );
    let mut caught = [0u32; 2];
    let mut totals = [(0u64, 0.0f64); 2];
    for ((variant, _), inv) in &planted {
        let bases: Vec<Scenario> = scenarios
            .iter()
            .filter_map(|s| {
                let mut s = s.clone();
                s.config.variant = Some(variant.clone());
                let carried = !super::run::not_carried(&s, stores.kind_for(&s.config), stores);
                let valid = s.config.validate().is_ok();
                (carried && valid).then_some(s)
            })
            .collect();
        if bases.is_empty() {
            println!("  {variant} ({inv}): no explored scenario carries it");
            continue;
        }
        let planted_field = Field {
            scenarios: &bases,
            ..*field
        };
        let tallies = race(&planted_field, budget, None, Some(*inv));
        let cells: Vec<String> = tallies
            .iter()
            .zip(caught.iter_mut().zip(totals.iter_mut()))
            .map(|(t, (c, total))| {
                total.0 += t.runs;
                total.1 += t.wall.as_secs_f64();
                match t.caught {
                    Some((run, secs)) => {
                        *c += 1;
                        format!("run {run} at {secs:.1}s")
                    }
                    None => format!("not in {} runs", t.runs),
                }
            })
            .collect();
        println!("  {variant} ({inv}): {} | {}", cells[0], cells[1]);
    }
    for (i, name) in NAMES.iter().enumerate() {
        println!(
            "  {name:8} caught {} of {} bugs, in {} runs and {:.1}s in all",
            caught[i],
            planted.len(),
            totals[i].0,
            totals[i].1
        );
    }
    Ok(())
}
