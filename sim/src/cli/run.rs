//! `leasehold run`: every scenario × seed, in parallel, judged against the
//! scenario's expectation, with a closing `N passed, M failed` line.

use super::args::RunArgs;
use super::engine::{self, SeedRun};
use super::parallel::run_parallel;
use super::plan::{plan, PlanInput, Seeds, Shard, Task};
use super::progress::Progress;
use super::verdict::{judge, Detection, Verdict};
use super::ExitCode;
use crate::junit;
use crate::scenario::{load_paths, Scenario};
use serde_json::json;
use std::time::Instant;

/// Most violation reports printed for one failing seed.
const MAX_REPORTS_PER_SEED: usize = 3;

/// Where human and machine lines go: with `--json`, stdout carries only
/// JSON and the human lines move to stderr.
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
    fn machine(&self, v: serde_json::Value) {
        if self.json {
            println!("{v}");
        }
    }
}

/// One finished run with its wall time.
struct Done {
    result: Result<SeedRun, String>,
    wall_s: f64,
}

/// Runs the command; answers the exit code.
pub fn run(args: &RunArgs) -> ExitCode {
    let sink = Sink { json: args.json };
    let scenarios = match load_paths(&args.paths) {
        Ok(s) if s.is_empty() => {
            eprintln!("leasehold: no scenario files under the given paths");
            return ExitCode::Input;
        }
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::Input;
        }
    };
    let seeds = match (args.seed, args.seeds) {
        (Some(s), _) => Seeds::One(s),
        (None, Some(n)) => Seeds::Count(n),
        (None, None) => Seeds::PerScenario,
    };
    let inputs: Vec<PlanInput> = scenarios
        .iter()
        .map(|s| PlanInput {
            seeds: s.config.seeds,
            expects_violation: s.config.expect.violation.is_some(),
        })
        .collect();
    let tasks = plan(&inputs, seeds, args.shard.unwrap_or(Shard::ALL));
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let started = Instant::now();
    let mut progress = Progress::new(tasks.len());
    let done = run_parallel(
        &tasks,
        jobs,
        |t: &Task| {
            let s = &scenarios[t.scenario];
            let t0 = Instant::now();
            let result = engine::run(&s.config, t.seed, &s.path.to_string_lossy());
            Done {
                result,
                wall_s: t0.elapsed().as_secs_f64(),
            }
        },
        |i, d| {
            let bad = d.as_ref().map_or(true, |d| match &d.result {
                // A catalogue seed is judged only with its whole budget.
                Ok(r) => {
                    let expects = scenarios[tasks[i].scenario].config.expect.violation;
                    expects.is_none() && !r.violations.is_empty()
                }
                Err(_) => true,
            });
            progress.tick(bad, &scenarios[tasks[i].scenario].config.name);
        },
    );
    progress.finish();
    let wall = started.elapsed().as_secs_f64();
    let (results, walls): (Vec<_>, Vec<_>) = done
        .into_iter()
        .map(|d| match d {
            Ok(d) => (d.result, d.wall_s),
            Err(panic) => (Err(panic), 0.0),
        })
        .unzip();
    let configs: Vec<_> = scenarios.iter().map(|s| &s.config).collect();
    let (verdicts, detections) = judge(&configs, &tasks, &results, &walls);
    report_runs(&sink, &scenarios, &tasks, &results, &verdicts, &walls);
    report_detections(&sink, &scenarios, &detections);
    if let Some(file) = &args.junit {
        let xml = junit::render(
            "leasehold",
            &junit_suites(&scenarios, &tasks, &results, &verdicts, &walls),
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
    let sim_ms: u64 = results.iter().flatten().map(|r| r.sim_ms).sum();
    let rate = tasks.len() as f64 / wall.max(1e-9);
    let ratio = sim_ms as f64 / 1000.0 / wall.max(1e-9);
    sink.machine(json!({
        "summary": {"passed": passed, "failed": failed, "errors": errors, "seeds": tasks.len(),
                    "wall_s": wall, "seeds_per_s": rate, "sim_over_wall": ratio}
    }));
    sink.human(&format!(
        "{} runs in {wall:.1}s on {jobs} threads: {rate:.2} seeds/s, simulated/wall {ratio:.0}x",
        tasks.len()
    ));
    sink.human(&format!("{passed} passed, {failed} failed"));
    if errors > 0 {
        ExitCode::Input
    } else if failed > 0 {
        ExitCode::Violation
    } else {
        ExitCode::Ok
    }
}

fn report_runs(
    sink: &Sink,
    scenarios: &[Scenario],
    tasks: &[Task],
    results: &[Result<SeedRun, String>],
    verdicts: &[Verdict],
    walls: &[f64],
) {
    let mut told_missing = vec![false; scenarios.len()];
    for (k, t) in tasks.iter().enumerate() {
        let s = &scenarios[t.scenario];
        let path = s.path.to_string_lossy();
        let replay = engine::replay_command(&path, t.seed);
        let (violations, hash) = match &results[k] {
            Ok(r) => (
                r.violations.iter().map(|v| v.summary.clone()).collect(),
                Some(r.hash),
            ),
            Err(_) => (Vec::new(), None),
        };
        let (status, reason) = match &verdicts[k] {
            Verdict::Passed => ("passed", None),
            Verdict::Failed(r) => ("failed", Some(r.clone())),
            Verdict::Error(e) => ("error", Some(e.clone())),
        };
        sink.machine(json!({
            "scenario": s.config.name, "path": path, "seed": t.seed, "status": status,
            "reason": reason, "violations": violations, "hash": hash.map(|h| format!("{h:016x}")),
            "wall_s": walls[k], "replay": replay,
        }));
        match (&verdicts[k], &results[k], s.config.expect.violation) {
            (Verdict::Error(e), _, _) => {
                sink.human(&format!(
                    "ERROR {} seed {}: {e}\n  replay: {replay}\n",
                    s.config.name, t.seed
                ));
            }
            (Verdict::Failed(_), Ok(r), None) => {
                sink.human(&format!("FAILED {} seed {}:", s.config.name, t.seed));
                for v in r.violations.iter().take(MAX_REPORTS_PER_SEED) {
                    sink.human(&v.report);
                }
                if r.violations.len() > MAX_REPORTS_PER_SEED {
                    sink.human(&format!(
                        "  … and {} more violations",
                        r.violations.len() - MAX_REPORTS_PER_SEED
                    ));
                }
                sink.human(&format!("  replay: {replay}\n"));
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
            engine::replay_command(&path, seed)
        ));
        sink.machine(json!({
            "caught": {"scenario": s.config.name, "variant": s.config.variant, "invariant": d.invariant.to_string(),
                       "first_seed": seed, "seeds_to_detect": d.seeds_to_detect, "wall_to_detect_s": d.wall_to_detect}
        }));
    }
}

fn junit_suites(
    scenarios: &[Scenario],
    tasks: &[Task],
    results: &[Result<SeedRun, String>],
    verdicts: &[Verdict],
    walls: &[f64],
) -> Vec<junit::Suite> {
    let mut suites: Vec<junit::Suite> = scenarios
        .iter()
        .map(|s| junit::Suite {
            name: s.config.name.clone(),
            cases: Vec::new(),
        })
        .collect();
    for (k, t) in tasks.iter().enumerate() {
        let s = &scenarios[t.scenario];
        let path = s.path.to_string_lossy();
        let replay = engine::replay_command(&path, t.seed);
        let outcome = match &verdicts[k] {
            Verdict::Passed => junit::CaseOutcome::Passed,
            Verdict::Error(e) => junit::CaseOutcome::Error {
                message: e.clone(),
                text: format!("replay: {replay}"),
            },
            Verdict::Failed(reason) => {
                let reports: Vec<String> = results[k]
                    .as_ref()
                    .map(|r| r.violations.iter().map(|v| v.report.clone()).collect())
                    .unwrap_or_default();
                let kind = match (s.config.expect.violation, results[k].as_ref()) {
                    (Some(inv), _) => format!("missing {inv}"),
                    (None, Ok(r)) => r
                        .violations
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
