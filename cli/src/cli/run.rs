//! `leasehold run`: every scenario × seed, in parallel, judged against the
//! scenario's expectation, with a closing `N passed, M failed` line.

use super::args::RunArgs;
use super::args::SeedBase;
use super::coverage::{self, Tally};
use super::engine::{self, Shown};
use super::jsonl::{JsonLines, Totals};
use super::parallel::run_parallel;
use super::plan::{plan_from, PlanInput, Seeds, Shard, Task};
use super::progress::{Progress, SeedEnd};
use super::shard;
use super::stores::Stores;
use super::verdict::{self, judge, Detection, Verdict};
use super::ExitCode;
use crate::junit;
use leasehold_model::scenario::{load_paths, Scenario};
use leasehold_model::store_kind::StoreKind;
use leasehold_sim::runner::PreparedConfig;
use std::collections::BTreeSet;
use std::time::Instant;

/// Most violation reports printed for one failing seed.
const MAX_REPORTS_PER_SEED: usize = 3;
/// Most (scenario, seed) runs one command plans: the plan and every
/// result are held in memory.
const MAX_PLANNED_RUNS: u64 = 10_000_000;

/// Where human lines go: with `--json`, stdout carries only JSON Lines
/// (see [`super::jsonl`]) and the human lines move to stderr.
struct Sink {
    json: bool,
}

impl Sink {
    fn human(&self, line: &str) {
        if self.json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
}

/// One finished run with its wall time.
struct Done {
    result: Result<Shown, String>,
    wall_s: f64,
}

/// Whether the scenario's catalogue bug lives in the store and the `kind`
/// store does not carry it (the memory store carries every one, the SQL
/// stores the pruning bugs): such a run is skipped, not run as if it
/// tested the bug.
pub(super) fn not_carried(s: &Scenario, kind: StoreKind, stores: &Stores) -> bool {
    s.config
        .variant
        .as_deref()
        .and_then(leasehold_model::catalogue::Variant::parse)
        .is_some_and(|v| leasehold_model::catalogue::is_store_side(v) && !stores.carries(kind, v))
}

/// Runs one seed; in differential mode also on the second store, failing
/// on the first answer that differs.
fn run_task(
    s: &Scenario,
    valid: &Result<PreparedConfig, String>,
    seed: u64,
    stores: &Stores,
    against: Option<(&Stores, StoreKind)>,
) -> Result<Shown, String> {
    let path = s.path.to_string_lossy();
    let cfg = valid.as_ref().map_err(Clone::clone)?;
    let Some((other, kind_b)) = against else {
        return engine::run(cfg, seed, &path, stores);
    };
    let (mut a, ha) = engine::run_keep(cfg, seed, &path, stores)?;
    let (_, hb) = engine::run_keep(cfg, seed, &path, other)?;
    let kind_a = stores.kind_for(&s.config);
    if let Some(f) = engine::first_difference((kind_a, &ha), (kind_b, &hb), &s.config, seed, &path)
    {
        a.add_first(f);
    }
    Ok(a)
}

/// Pins each scenario to the store it runs on (so reports name it);
/// answers the stores used, sorted and once each.
pub(super) fn pin_stores(scenarios: &mut [Scenario], stores: &Stores) -> Vec<StoreKind> {
    for s in scenarios.iter_mut() {
        s.config.store = Some(stores.kind_for(&s.config));
    }
    let mut kinds: Vec<StoreKind> = scenarios
        .iter()
        .map(|s| stores.kind_for(&s.config))
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// Threads per core by default: a seed on a SQL store spends most of its
/// wall time waiting for the database (the simulation blocks on each
/// operation), so more seeds in flight keep the cores busy.
fn threads_per_core(kinds: &[StoreKind]) -> usize {
    if kinds.contains(&StoreKind::Postgres) {
        4
    } else if kinds.contains(&StoreKind::Sqlite) {
        2
    } else {
        1
    }
}

/// `--seed`/`--seeds`, falling back to `LEASEHOLD_SEED`/`LEASEHOLD_SEEDS`
/// when neither flag is given (flags always win).
fn seed_settings(args: &RunArgs) -> Result<(Option<u64>, Option<u64>), String> {
    let env = |name: &str| -> Result<Option<u64>, String> {
        match std::env::var(name) {
            Ok(v) if v.trim().is_empty() => Ok(None),
            Ok(v) => v
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| format!("{name}={v:?} is not a whole number")),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(e) => Err(format!("{name}: {e}")),
        }
    };
    let (seed, count) = if args.seed.is_some() || args.seeds.is_some() {
        (args.seed, args.seeds)
    } else {
        match (env("LEASEHOLD_SEED")?, env("LEASEHOLD_SEEDS")?) {
            (Some(_), Some(_)) => {
                return Err("LEASEHOLD_SEED and LEASEHOLD_SEEDS are both set; set one".into())
            }
            pair => pair,
        }
    };
    if count == Some(0) {
        return Err("--seeds 0 (or LEASEHOLD_SEEDS=0) runs no seed".into());
    }
    if let Some(n) = count.filter(|&n| n > leasehold_model::bounds::MAX_SEEDS) {
        return Err(format!(
            "--seeds {n} (or LEASEHOLD_SEEDS) is above the bound of {} seeds per scenario",
            leasehold_model::bounds::MAX_SEEDS
        ));
    }
    Ok((seed, count))
}

/// A base seed for an exploration run, from the OS (outside any
/// simulation: the seeds themselves then drive everything).
pub(super) fn random_base() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::process::id().into());
    // Keep bases readable and far from the fixed seeds CI runs.
    1_000_000 + h.finish() % 1_000_000_000_000
}

/// Runs the command; answers the exit code.
pub fn run(args: &RunArgs) -> ExitCode {
    let sink = Sink { json: args.json };
    // Two different stores compared answer by answer get the same inputs
    // (see `RunOptions::differential`).
    let comparing = args.against.is_some_and(|k| args.stores.store != Some(k));
    let stores = Stores::new(&args.stores)
        .observing_coverage(!args.no_coverage)
        .comparing(comparing);
    let against = args.against.map(|k| {
        let mut a = args.stores.clone();
        a.store = Some(k);
        (Stores::new(&a).comparing(comparing), k)
    });
    let scenarios = match load_paths(&args.paths) {
        Ok(s) if s.is_empty() => {
            eprintln!("leasehold: no scenario files under the given paths");
            return ExitCode::Input;
        }
        Ok(s) => s,
        Err(e) => {
            crate::diagnostic::eprint_load_errors(&e);
            return ExitCode::Input;
        }
    };
    let carried = |s: &Scenario| {
        !not_carried(s, stores.kind_for(&s.config), &stores)
            && against
                .as_ref()
                .is_none_or(|(_, k)| !not_carried(s, *k, &stores))
    };
    let (mut scenarios, skipped): (Vec<Scenario>, Vec<Scenario>) =
        scenarios.into_iter().partition(carried);
    if !skipped.is_empty() {
        let names: Vec<&str> = skipped.iter().map(|s| s.config.name.as_str()).collect();
        sink.human(&format!(
            "skipped {} catalogue scenarios whose bug is planted in another store \
             (this store does not carry it): {}",
            skipped.len(),
            names.join(", ")
        ));
    }
    if scenarios.is_empty() {
        eprintln!("leasehold: nothing to run on this store");
        return ExitCode::Input;
    }
    let mut kinds = pin_stores(&mut scenarios, &stores);
    // Each scenario validated once, for all its seeds.
    let valid: Vec<Result<PreparedConfig, String>> = scenarios
        .iter()
        .map(|s| PreparedConfig::new(s.config.clone()).map_err(|e| e.to_string()))
        .collect();
    kinds.extend(against.as_ref().map(|(_, k)| *k));
    kinds.sort();
    kinds.dedup();
    for k in &kinds {
        let check = match &against {
            Some((b, kb)) if kb == k => b.check(*k),
            _ => stores.check(*k),
        };
        if let Err(e) = check {
            eprintln!("leasehold: {e}");
            return ExitCode::Input;
        }
    }
    let (seed, count) = match seed_settings(args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("leasehold: {e}");
            return ExitCode::Input;
        }
    };
    let seeds = match (seed, count, args.seed_factor) {
        (_, _, Some(0)) => {
            eprintln!("leasehold: --seed-factor 0 runs no seed");
            return ExitCode::Input;
        }
        (_, _, Some(k)) => Seeds::Factor(k),
        (Some(s), _, _) => Seeds::One(s),
        (None, Some(n), _) => Seeds::Count(n),
        (None, None, None) => Seeds::PerScenario,
    };
    let base = match args.seed_base {
        None => 0,
        Some(SeedBase::At(b)) => b,
        Some(SeedBase::Random) => random_base(),
    };
    if args.seed_base.is_some() {
        sink.human(&format!(
            "seed base {base}: seeds {base}.. (rerun this exploration with --seed-base {base})"
        ));
    }
    let inputs: Vec<PlanInput> = scenarios
        .iter()
        .map(|s| PlanInput {
            seeds: s.config.seeds,
            first_seed: s.config.first_seed,
            expects_violation: s.config.expect.violation.is_some(),
        })
        .collect();
    let planned = inputs.iter().fold(0u64, |n, i| {
        n.saturating_add(match seeds {
            Seeds::PerScenario => i.seeds,
            Seeds::Count(c) => c,
            Seeds::Factor(k) => i.seeds.saturating_mul(k),
            Seeds::One(_) => 1,
        })
    });
    if planned > MAX_PLANNED_RUNS {
        eprintln!(
            "leasehold: this run would plan {planned} runs, above the bound of {MAX_PLANNED_RUNS}; \
             use fewer seeds or scenarios"
        );
        return ExitCode::Input;
    }
    let resolved = match shard::from_process(args.shard) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("leasehold: {e}");
            return ExitCode::Input;
        }
    };
    let this_shard = resolved.as_ref().map_or(Shard::ALL, |r| r.shard);
    if this_shard.count > 1 && args.seed_base == Some(SeedBase::Random) {
        eprintln!(
            "leasehold: --seed-base random draws a different base on every shard, so the \
             shards would not split one run; pass the same number to every shard"
        );
        return ExitCode::Input;
    }
    let whole = plan_from(&inputs, seeds, base, Shard::ALL);
    let tasks = plan_from(&inputs, seeds, base, this_shard);
    if let Some(r) = &resolved {
        sink.human(&format!(
            "shard {} (from {}): {} of the plan's {} runs",
            r.shard,
            r.source,
            tasks.len(),
            whole.len()
        ));
    }
    if tasks.is_empty() {
        eprintln!(
            "leasehold: shard {this_shard} has no run: the plan has {} runs, split over {} \
             shards (catalogue scenarios keep their seeds on one shard); use fewer shards",
            whole.len(),
            this_shard.count
        );
        return ExitCode::Input;
    }
    let plan_id = super::merge::plan_id(&scenarios, &whole);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs = args.jobs.unwrap_or(cores * threads_per_core(&kinds));
    let started = Instant::now();
    let mut progress = Progress::new(
        scenarios
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let n = tasks.iter().filter(|t| t.scenario == i).count();
                (s.config.name.clone(), n)
            })
            .collect(),
    );
    // I10: the first seed of every scenario runs twice, inside its own
    // task, so its streamed result already includes the comparison.
    let firsts: BTreeSet<(usize, u64)> = (0..scenarios.len())
        .filter_map(|i| tasks.iter().find(|t| t.scenario == i))
        .map(|t| (t.scenario, t.seed))
        .collect();
    // Declared situations are judged over all of a scenario's seeds: not
    // on one shard (`leasehold merge` judges them) nor for one `--seed`.
    let judged = if this_shard.count > 1 || matches!(seeds, Seeds::One(_)) {
        verdict::Coverage::Skip
    } else {
        verdict::Coverage::Judge
    };
    let mut stream = JsonLines::new(args.json, &scenarios, &tasks, judged);
    stream.start(
        args.seed_base.is_some().then_some(base),
        jobs,
        &super::jsonl::PlanInfo {
            id: plan_id,
            runs: whole.len(),
            shard: this_shard,
        },
    );
    let done = run_parallel(
        &tasks,
        jobs,
        |t: &Task| {
            let s = &scenarios[t.scenario];
            let t0 = Instant::now();
            let v = &valid[t.scenario];
            let result = run_task(
                s,
                v,
                t.seed,
                &stores,
                against.as_ref().map(|(b, k)| (b, *k)),
            );
            let wall_s = t0.elapsed().as_secs_f64();
            let result = if firsts.contains(&(t.scenario, t.seed)) {
                replayed(result, s, v, t.seed, &stores)
            } else {
                result
            };
            Done { result, wall_s }
        },
        |i, d| {
            let end = d.as_ref().map_or(SeedEnd::Failed, |d| match &d.result {
                // A catalogue seed is judged only with its whole budget:
                // here its violation counts as its bug caught.
                Ok(r) if r.violations().is_empty() => SeedEnd::Clean,
                Ok(_)
                    if scenarios[tasks[i].scenario]
                        .config
                        .expect
                        .violation
                        .is_some() =>
                {
                    SeedEnd::Caught
                }
                Ok(_) | Err(_) => SeedEnd::Failed,
            });
            progress.tick(tasks[i].scenario, end);
            match d {
                Ok(d) => stream.finished(i, &d.result, d.wall_s),
                Err(panic) => stream.finished(i, &Err(panic.clone()), 0.0),
            }
        },
    );
    progress.finish();
    let (results, walls): (Vec<_>, Vec<_>) = done
        .into_iter()
        .map(|d| match d {
            Ok(d) => (d.result, d.wall_s),
            Err(panic) => (Err(panic), 0.0),
        })
        .unzip();
    let wall = started.elapsed().as_secs_f64();
    let configs: Vec<_> = scenarios.iter().map(|s| &s.config).collect();
    let (verdicts, detections) = judge(&configs, &tasks, &results, &walls, judged);
    report_runs(&sink, &scenarios, &tasks, &results, &verdicts);
    report_detections(&sink, &scenarios, &detections);
    let (held, caught) = report_scenarios(&sink, &scenarios, &tasks, &verdicts);
    let tallies = verdict::tallies(scenarios.len(), &tasks, &results);
    let total = report_coverage(&sink, &scenarios, &tasks, &results, &tallies);
    if let Some(file) = &args.junit {
        let xml = junit::render(
            "leasehold",
            &junit_suites(&scenarios, &tasks, &results, &verdicts, &walls, &tallies),
        );
        if let Err(e) = std::fs::write(file, xml) {
            eprintln!("leasehold: cannot write {}: {e}", file.display());
            return ExitCode::Input;
        }
    }
    let passed = verdicts.iter().filter(|v| **v == Verdict::Passed).count();
    let failed = verdicts.len() - passed;
    let errors = verdicts
        .iter()
        .filter(|v| matches!(v, Verdict::Error(_)))
        .count();
    let sim_ms: u64 = results
        .iter()
        .flatten()
        .map(|r| r.outcome.sim_time_ms)
        .sum();
    let rate = tasks.len() as f64 / wall.max(1e-9);
    let ratio = sim_ms as f64 / 1000.0 / wall.max(1e-9);
    stream.summary(&Totals {
        passed,
        failed,
        errors,
        wall_s: wall,
        sim_ms,
        held: &held,
        caught: &caught,
        coverage: &total,
    });
    sink.human(&format!(
        "{} runs in {wall:.1}s on {jobs} threads: {rate:.2} seeds/s, simulated/wall {ratio:.0}x",
        tasks.len()
    ));
    sink.human(&format!("{passed} passed, {failed} failed"));
    ExitCode::of_runs(errors, failed)
}

/// I10: runs a seed a second time and fails it when the second history's
/// hash differs from the first (or the second run fails).
fn replayed(
    first: Result<Shown, String>,
    s: &Scenario,
    valid: &Result<PreparedConfig, String>,
    seed: u64,
    stores: &Stores,
) -> Result<Shown, String> {
    let mut first = first?;
    first.replayed = true;
    let path = s.path.to_string_lossy();
    let again = valid
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|cfg| engine::run(cfg, seed, &path, stores));
    let finding = match again {
        Ok(r) => engine::determinism(
            first.outcome.history_hash,
            r.outcome.history_hash,
            &s.config,
            seed,
            &path,
        ),
        Err(e) => engine::determinism(
            first.outcome.history_hash,
            !first.outcome.history_hash,
            &s.config,
            seed,
            &path,
        )
        .map(|mut f| {
            f.1.summary = format!("I10 (determinism): the replay of seed {seed} failed: {e}");
            f
        }),
    };
    if let Some(f) = finding {
        first.add_first(f);
    }
    Ok(first)
}

fn report_runs(
    sink: &Sink,
    scenarios: &[Scenario],
    tasks: &[Task],
    results: &[Result<Shown, String>],
    verdicts: &[Verdict],
) {
    let mut told_missing = vec![false; scenarios.len()];
    for (k, t) in tasks.iter().enumerate() {
        let s = &scenarios[t.scenario];
        let path = s.path.to_string_lossy();
        let replay = engine::replay_command(&path, t.seed, kind_of(s));
        match (&verdicts[k], &results[k], s.config.expect.violation) {
            (Verdict::Error(e), _, _) => {
                sink.human(&format!(
                    "ERROR {} seed {}: {e}\n  replay: {replay}\n",
                    s.config.name, t.seed
                ));
            }
            (Verdict::Failed(_), Ok(r), None) => {
                sink.human(&format!("FAILED {} seed {}:", s.config.name, t.seed));
                for v in r.found().iter().take(MAX_REPORTS_PER_SEED) {
                    sink.human(&v.report);
                }
                if r.found().len() > MAX_REPORTS_PER_SEED {
                    sink.human(&format!(
                        "  … and {} more violations",
                        r.found().len() - MAX_REPORTS_PER_SEED
                    ));
                }
                sink.human(&format!("  replay: {replay}\n"));
            }
            (Verdict::Uncovered(reason), _, _) if !told_missing[t.scenario] => {
                told_missing[t.scenario] = true;
                sink.human(&format!(
                    "FAILED {}: {reason} (declared in [coverage] expects of {path})\n",
                    s.config.name
                ));
            }
            (Verdict::Failed(reason), _, Some(_)) if !told_missing[t.scenario] => {
                told_missing[t.scenario] = true;
                sink.human(&format!(
                    "FAILED {} (variant {}): {reason}\n  try more seeds: leasehold run {path} --seeds {}\n",
                    s.config.name,
                    s.config.variant.as_deref().unwrap_or("none"),
                    s.config.seeds * 10
                ));
            }
            _ => {}
        }
    }
}

/// Names the scenarios that passed: correct-core scenarios (every seed
/// held every invariant) apart from catalogue scenarios (the bug was
/// caught); answers the two lists.
fn report_scenarios<'a>(
    sink: &Sink,
    scenarios: &'a [Scenario],
    tasks: &[Task],
    verdicts: &[Verdict],
) -> (Vec<&'a str>, Vec<&'a str>) {
    let mut held = Vec::new();
    let mut caught = Vec::new();
    for (i, s) in scenarios.iter().enumerate() {
        let mut mine = tasks
            .iter()
            .zip(verdicts)
            .filter(|(t, _)| t.scenario == i)
            .peekable();
        if mine.peek().is_none() || !mine.all(|(_, v)| *v == Verdict::Passed) {
            continue;
        }
        if s.config.expect.violation.is_some() {
            caught.push(s.config.name.as_str());
        } else {
            held.push(s.config.name.as_str());
        }
    }
    sink.human(&format!(
        "correct core, every invariant held ({}): {}",
        held.len(),
        held.join(", ")
    ));
    if !caught.is_empty() {
        sink.human(&format!(
            "catalogue, bug caught ({}): {}",
            caught.len(),
            caught.join(", ")
        ));
    }
    (held, caught)
}

fn report_detections(sink: &Sink, scenarios: &[Scenario], detections: &[Detection]) {
    for d in detections {
        let s = &scenarios[d.scenario];
        let Some(seed) = d.first_seed else { continue };
        let path = s.path.to_string_lossy();
        sink.human(&format!(
            "caught {} ({}): {} found at seed {seed}, after {} seeds and {:.2}s; replay: {}",
            s.config.variant.as_deref().unwrap_or(&s.config.name),
            s.config.name,
            d.invariant,
            d.seeds_to_detect,
            d.wall_to_detect,
            engine::replay_command(&path, seed, kind_of(s))
        ));
    }
}

/// The coverage report: each scenario's line, the total table, and the
/// catalogue's catch rates beside the reach rates of the situations its
/// bugs need; answers the total.
fn report_coverage(
    sink: &Sink,
    scenarios: &[Scenario],
    tasks: &[Task],
    results: &[Result<Shown, String>],
    tallies: &[Tally],
) -> Tally {
    let mut total = Tally::default();
    sink.human("coverage by scenario (declared situations: seeds reaching / seeds):");
    for (s, t) in scenarios.iter().zip(tallies) {
        total.merge(t);
        if t.seeds > 0 {
            sink.human(&coverage::scenario_line(
                &s.config.name,
                t,
                &s.config.coverage.expects,
            ));
        }
    }
    for line in coverage::total_lines(&total) {
        sink.human(&line);
    }
    let mut bugs = Vec::new();
    for (i, (s, t)) in scenarios.iter().zip(tallies).enumerate() {
        let Some(inv) = s.config.expect.violation else {
            continue;
        };
        let caught = tasks
            .iter()
            .zip(results)
            .filter(|(k, r)| {
                k.scenario == i
                    && r.as_ref()
                        .is_ok_and(|r| r.violations().iter().any(|v| v.invariant == inv))
            })
            .count() as u64;
        let bug = s.config.variant.as_deref().unwrap_or(&s.config.name);
        bugs.push(coverage::catalogue_line(
            bug,
            caught,
            t,
            &s.config.coverage.expects,
        ));
    }
    if !bugs.is_empty() {
        sink.human(
            "catalogue: each bug's catch rate beside the reach rate of the situation it needs:",
        );
        for line in bugs {
            sink.human(&line);
        }
    }
    total
}

fn junit_suites(
    scenarios: &[Scenario],
    tasks: &[Task],
    results: &[Result<Shown, String>],
    verdicts: &[Verdict],
    walls: &[f64],
    tallies: &[Tally],
) -> Vec<junit::Suite> {
    let mut suites: Vec<junit::Suite> = scenarios
        .iter()
        .zip(tallies)
        .map(|(s, t)| junit::Suite {
            name: s.config.name.clone(),
            cases: Vec::new(),
            properties: junit::coverage_properties(t),
        })
        .collect();
    for (k, t) in tasks.iter().enumerate() {
        let s = &scenarios[t.scenario];
        let path = s.path.to_string_lossy();
        let replay = engine::replay_command(&path, t.seed, kind_of(s));
        let outcome = match &verdicts[k] {
            Verdict::Passed => junit::CaseOutcome::Passed,
            Verdict::Error(e) => junit::CaseOutcome::Error {
                message: e.clone(),
                text: format!("replay: {replay}"),
            },
            Verdict::Uncovered(reason) => junit::CaseOutcome::Failed {
                message: reason.clone(),
                kind: "coverage".into(),
                text: format!("declared in [coverage] expects of {path}"),
            },
            Verdict::Failed(reason) => {
                let reports: Vec<String> = results[k]
                    .as_ref()
                    .map(|r| r.found().iter().map(|v| v.report.clone()).collect())
                    .unwrap_or_default();
                let kind = match (s.config.expect.violation, results[k].as_ref()) {
                    (Some(inv), _) => format!("missing {inv}"),
                    (None, Ok(r)) => r
                        .violations()
                        .first()
                        .map_or("failed".into(), |v| v.invariant.to_string()),
                    (None, Err(_)) => "failed".into(),
                };
                junit::CaseOutcome::Failed {
                    message: reason.clone(),
                    kind,
                    text: format!("{}\nreplay: {replay}", reports.join("\n")),
                }
            }
        };
        suites[t.scenario].cases.push(junit::Case {
            name: format!("seed {}", t.seed),
            classname: path.into_owned(),
            time_s: walls[k],
            outcome,
        });
    }
    suites.retain(|s| !s.cases.is_empty());
    suites
}

/// The store a scenario ran on (the run sets it on every loaded scenario).
fn kind_of(s: &Scenario) -> StoreKind {
    s.config.store.unwrap_or(StoreKind::Memory)
}
