//! `leasehold run --json`: JSON Lines on stdout, streamed as runs finish.
//!
//! Every line is one JSON object with a `type`:
//!
//! - `start`: what the run will do (`runs`, `scenarios`, `seed_base`,
//!   `jobs`), written before the first seed starts, with the shard
//!   (`shard`, `"I/N"`, `"1/1"` unsharded) and the whole plan it belongs to
//!   (`plan`: `id`, a fingerprint of every scenario and seed that every
//!   shard of one run shares; `runs`, the unsharded run count; `scenarios`,
//!   every scenario's `name`, `path` and declared situations `expects` in
//!   load order), which `leasehold merge` checks and judges coverage by;
//! - `run`: one seed, written as soon as it finishes (`scenario`, `path`,
//!   `seed`, `store`, `expect`, `status`, `violations`, `hash`, `sim_ms`,
//!   `wall_s`, `replayed`, `replay`, and `coverage`: each named situation
//!   the seed reached with its times, `{"name": n}`), and `near`: each
//!   situation the seed missed by a measured distance, with the distance
//!   (`{"name": d}`, see docs/COVERAGE.md). A seed's `status` is
//!   its own and never depends on coverage. `status` is `passed`, `failed` or `error` for a
//!   correct-core scenario; a catalogue scenario's seed says `caught` (this
//!   seed showed the expected violation), `not_caught`, or `error`, and
//!   its verdict comes with its `scenario` line;
//! - `scenario`: written when a scenario's last seed finishes, with its
//!   `verdict` (`passed`, `failed` or `error`), counts, and for a catalogue
//!   scenario what caught the bug (`caught`, or `null`), its seeds that
//!   caught it (`caught_seeds`), its coverage over its seeds (`coverage`:
//!   `seeds`, and `reached`, each situation's `seeds` and `times`) and the
//!   declared situations none reached (`uncovered`, which fails it);
//! - `summary`: the last line, with the totals and the scenarios that
//!   passed, correct-core ones (`held`) apart from catalogue ones
//!   (`caught`), and the coverage of every seed (`coverage`, as on a
//!   `scenario` line).
//!
//! Store times never appear here as text: `sim_ms` and `wall_s` are
//! numbers, durations from the run's start and of wall time.
//! Human lines go to stderr while `--json` is on, so stdout is pure JSON.

use super::coverage::{seed_json, Tally};
use super::engine::{self, Shown};
use super::plan::{Shard, Task};
use super::verdict::{self, judge, seed_status, Detection, Verdict};
use leasehold_model::scenario::Scenario;
use leasehold_model::store_kind::StoreKind;
use serde_json::{json, Value};
use std::io::Write;

/// Streams the JSON lines of one `leasehold run`.
pub struct JsonLines<'a> {
    enabled: bool,
    scenarios: &'a [Scenario],
    tasks: &'a [Task],
    /// Per scenario: seeds not finished yet.
    left: Vec<usize>,
    /// Per task: its result and wall seconds, once finished.
    finished: Vec<Option<(Result<Shown, String>, f64)>>,
    /// Whether scenarios are held to their declared situations.
    coverage: verdict::Coverage,
}

/// The plan a run (or one shard of it) belongs to, for the `start` line.
pub struct PlanInfo {
    /// The fingerprint every shard of one plan shares.
    pub id: String,
    /// Runs in the whole, unsharded plan.
    pub runs: usize,
    /// This shard ([`Shard::ALL`] unsharded).
    pub shard: Shard,
}

/// The totals for the closing `summary` line.
pub struct Totals<'a> {
    /// Runs that met their expectation.
    pub passed: usize,
    /// Runs that did not.
    pub failed: usize,
    /// Runs that could not be carried out.
    pub errors: usize,
    /// Wall seconds of the whole run.
    pub wall_s: f64,
    /// Simulated milliseconds over every run.
    pub sim_ms: u64,
    /// Correct-core scenarios that held on every seed.
    pub held: &'a [&'a str],
    /// Catalogue scenarios whose bug was caught.
    pub caught: &'a [&'a str],
    /// The coverage of every seed that ran.
    pub coverage: &'a Tally,
}

impl<'a> JsonLines<'a> {
    /// A stream over `tasks` of `scenarios`; silent unless `enabled`.
    pub fn new(
        enabled: bool,
        scenarios: &'a [Scenario],
        tasks: &'a [Task],
        coverage: verdict::Coverage,
    ) -> JsonLines<'a> {
        let mut left = vec![0; scenarios.len()];
        for t in tasks {
            left[t.scenario] += 1;
        }
        JsonLines {
            enabled,
            scenarios,
            tasks,
            left,
            finished: (0..tasks.len()).map(|_| None).collect(),
            coverage,
        }
    }

    fn emit(&self, v: &Value) {
        if !self.enabled {
            return;
        }
        // One line per object, flushed, so a reader sees each run as it ends.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{v}");
        let _ = out.flush();
    }

    /// The `start` line.
    pub fn start(&self, seed_base: Option<u64>, jobs: usize, plan: &PlanInfo) {
        let names: Vec<&str> = self
            .scenarios
            .iter()
            .enumerate()
            .filter(|(i, _)| self.left[*i] > 0)
            .map(|(_, s)| s.config.name.as_str())
            .collect();
        let all: Vec<Value> = self
            .scenarios
            .iter()
            .map(|s| {
                json!({
                    "name": s.config.name, "path": s.path.to_string_lossy(),
                    "expects": s.config.coverage.expects,
                    "seeds": s.config.seeds,
                })
            })
            .collect();
        self.emit(&json!({
            "type": "start", "runs": self.tasks.len(), "scenarios": names,
            "seed_base": seed_base, "jobs": jobs, "shard": plan.shard.to_string(),
            "plan": {"id": plan.id, "runs": plan.runs, "scenarios": all},
            "version": env!("CARGO_PKG_VERSION"),
            "hash_format": leasehold_model::history::HASH_FORMAT,
        }));
    }

    /// Task `k` finished: its `run` line, and its scenario's `scenario`
    /// line when it was that scenario's last seed.
    pub fn finished(&mut self, k: usize, result: &Result<Shown, String>, wall_s: f64) {
        let Some(t) = self.tasks.get(k).copied() else {
            return;
        };
        let s = &self.scenarios[t.scenario];
        self.emit(&run_line(s, t.seed, result, wall_s));
        self.finished[k] = Some((result.clone(), wall_s));
        self.left[t.scenario] = self.left[t.scenario].saturating_sub(1);
        if self.left[t.scenario] == 0 {
            self.emit(&self.scenario_line(t.scenario));
        }
    }

    fn scenario_line(&self, i: usize) -> Value {
        let s = &self.scenarios[i];
        let mine: Vec<usize> = (0..self.tasks.len())
            .filter(|&k| self.tasks[k].scenario == i && self.finished[k].is_some())
            .collect();
        let tasks: Vec<Task> = mine
            .iter()
            .map(|&k| Task {
                scenario: 0,
                seed: self.tasks[k].seed,
            })
            .collect();
        let (results, walls): (Vec<_>, Vec<_>) = mine
            .iter()
            .filter_map(|&k| self.finished[k].clone())
            .unzip();
        let (verdicts, detections) = judge(&[&s.config], &tasks, &results, &walls, self.coverage);
        let tally = verdict::tallies(1, &tasks, &results).remove(0);
        let uncovered = match self.coverage {
            verdict::Coverage::Judge => {
                tally.missing_within(&s.config.coverage.expects, s.config.seeds)
            }
            verdict::Coverage::Skip => Vec::new(),
        };
        let caught_seeds = results
            .iter()
            .filter(|r| seed_status(&s.config, r) == "caught")
            .count();
        let count = |f: fn(&Verdict) -> bool| verdicts.iter().filter(|v| f(v)).count();
        let (passed, errors) = (
            count(|v| *v == Verdict::Passed),
            count(|v| matches!(v, Verdict::Error(_))),
        );
        let verdict = if errors > 0 {
            "error"
        } else if passed == verdicts.len() {
            "passed"
        } else {
            "failed"
        };
        let reason = verdicts.iter().find_map(|v| match v {
            Verdict::Failed(r) | Verdict::Error(r) | Verdict::Uncovered(r) => Some(r.clone()),
            Verdict::Passed => None,
        });
        json!({
            "type": "scenario", "scenario": s.config.name, "path": s.path.to_string_lossy(),
            "variant": s.config.variant, "expect": s.config.expect.violation.map(|i| i.to_string()),
            "verdict": verdict, "reason": reason, "seeds": verdicts.len(), "passed": passed,
            "failed": verdicts.len() - passed - errors, "errors": errors,
            "caught": detections.first().and_then(|d| caught(s, d)),
            "caught_seeds": s.config.expect.violation.map(|_| caught_seeds),
            "coverage": tally.to_json(), "uncovered": uncovered,
        })
    }

    /// The closing `summary` line.
    pub fn summary(&self, t: &Totals<'_>) {
        let wall = t.wall_s.max(1e-9);
        self.emit(&json!({
            "type": "summary", "passed": t.passed, "failed": t.failed, "errors": t.errors,
            "seeds": self.tasks.len(), "wall_s": t.wall_s,
            "seeds_per_s": self.tasks.len() as f64 / wall,
            "sim_over_wall": t.sim_ms as f64 / 1000.0 / wall,
            "held": t.held, "caught": t.caught, "coverage": t.coverage.to_json(),
        }));
    }
}

fn store_of(s: &Scenario) -> StoreKind {
    s.config.store.unwrap_or(StoreKind::Memory)
}

fn run_line(s: &Scenario, seed: u64, result: &Result<Shown, String>, wall_s: f64) -> Value {
    let path = s.path.to_string_lossy();
    let violations: Vec<Value> = result
        .as_ref()
        .map(|r| {
            r.findings()
                .map(|(v, f)| json!({"invariant": v.invariant.to_string(), "summary": f.summary}))
                .collect()
        })
        .unwrap_or_default();
    let ok = result.as_ref().ok();
    json!({
        "type": "run", "scenario": s.config.name, "path": path, "seed": seed,
        "store": store_of(s).name(),
        "expect": s.config.expect.violation.map(|i| i.to_string()),
        "status": seed_status(&s.config, result),
        "error": result.as_ref().err(), "violations": violations,
        "hash": ok.map(|r| format!("{:016x}", r.outcome.history_hash)),
        "sim_ms": ok.map(|r| r.outcome.sim_time_ms),
        "wall_s": wall_s, "replayed": ok.is_some_and(|r| r.replayed),
        "replay": engine::replay_command(&path, seed, store_of(s)),
        "coverage": ok.map(|r| seed_json(r.outcome.coverage.iter())),
        "near": ok.map(|r| seed_json(r.outcome.coverage.misses())),
    })
}

fn caught(s: &Scenario, d: &Detection) -> Option<Value> {
    let seed = d.first_seed?;
    Some(json!({
        "invariant": d.invariant.to_string(), "first_seed": seed,
        "seeds_to_detect": d.seeds_to_detect, "wall_to_detect_s": d.wall_to_detect,
        "replay": engine::replay_command(&s.path.to_string_lossy(), seed, store_of(s)),
    }))
}
