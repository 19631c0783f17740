//! `leasehold merge SHARD.jsonl…`: the verdict of one run from the `--json`
//! outputs of its N shards.
//!
//! Invariants it upholds:
//! - every shard of the plan is there exactly once: all files name the same
//!   plan (`plan.id`) and shard count, and each index 1..=N appears once; a
//!   missing, duplicated or foreign shard is an error (exit 2), never a
//!   smaller pass;
//! - every shard finished (its `summary` line is there), and the runs add
//!   up to the plan's run count with no (scenario, seed) twice;
//! - the verdict is the one the unsharded run gives: a correct-core
//!   scenario holds when every seed on every shard held; a catalogue
//!   scenario's bug is caught when any of its seeds caught it, whichever
//!   shard ran that seed; a seed that could not be run is an error;
//! - coverage merges across shards: a scenario's declared situations
//!   (`expects` on the `start` line) must be reached on some seed of some
//!   shard, or its passing seeds fail, as in the unsharded run.

use super::args::MergeArgs;
use super::coverage::{missing_reason, Tally};
use super::plan::Task;
use super::ExitCode;
use crate::junit;
use leasehold_model::scenario::Scenario;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// Most shard files one merge reads.
pub const MAX_SHARD_FILES: usize = 100_000;
/// Most bytes of one line of a shard file.
const MAX_LINE_BYTES: usize = 1 << 20;

/// The fingerprint of a whole plan: the tool's version, every scenario
/// (path, name and settings) and every (scenario, seed) run, FNV-1a. Every
/// shard of one run computes the same one; a shard of another run (other
/// files, seeds, base or version) does not.
pub fn plan_id(scenarios: &[Scenario], whole: &[Task]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // A separator, so ("ab", "c") and ("a", "bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    };
    feed(env!("CARGO_PKG_VERSION").as_bytes());
    for s in scenarios {
        feed(s.path.to_string_lossy().as_bytes());
        feed(
            serde_json::to_string(&s.config)
                .unwrap_or_default()
                .as_bytes(),
        );
    }
    for t in whole {
        feed(&(t.scenario as u64).to_le_bytes());
        feed(&t.seed.to_le_bytes());
    }
    format!("{h:016x}")
}

/// One `run` line of a shard.
#[derive(Clone, Debug)]
struct RunLine {
    path: String,
    seed: u64,
    expect: Option<String>,
    status: String,
    error: Option<String>,
    violations: Vec<(String, String)>,
    sim_ms: u64,
    wall_s: f64,
    replay: String,
    /// The situations the seed reached, with their times (none on a line
    /// written before coverage was reported).
    coverage: Vec<(String, u64)>,
}

/// One shard file, read whole.
struct ShardFile {
    file: PathBuf,
    shard: (u64, u64),
    plan_id: String,
    plan_runs: usize,
    /// (name, path, declared situations) of every scenario of the plan,
    /// in load order.
    /// Each scenario's name, path, declared situations and own seed budget.
    scenarios: Vec<(String, String, Vec<String>, u64)>,
    runs: Vec<RunLine>,
    wall_s: f64,
}

fn located(file: &Path, line: usize, what: impl std::fmt::Display) -> String {
    format!("{}:{line}: {what}", file.display())
}

fn read_shard(file: &Path) -> Result<ShardFile, String> {
    let f = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut start: Option<Start> = None;
    let mut runs = Vec::new();
    let mut wall = None;
    let mut reader = std::io::BufReader::new(f);
    let mut buf = String::new();
    let mut n = 0usize;
    // One pass per line; the file is finite and every line is bounded.
    loop {
        buf.clear();
        let got = reader
            .by_ref()
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_line(&mut buf)
            .map_err(|e| located(file, n + 1, e))?;
        if got == 0 {
            break;
        }
        n += 1;
        if buf.len() > MAX_LINE_BYTES {
            return Err(located(file, n, "line longer than 1 MiB"));
        }
        let line = buf.trim();
        if line.is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| {
            located(
                file,
                n,
                format!("not a JSON line of `leasehold run --json`: {e}"),
            )
        })?;
        let kind = v["type"].as_str().unwrap_or("");
        if n == 1 && kind != "start" {
            return Err(located(
                file,
                n,
                "the first line is not a `start` line: not the `--json` output of `leasehold run`",
            ));
        }
        if wall.is_some() {
            return Err(located(file, n, "a line after the `summary` line"));
        }
        match kind {
            "start" if start.is_none() => start = Some(start_line(file, n, &v)?),
            "start" => return Err(located(file, n, "a second `start` line")),
            "run" => runs.push(run_line(file, n, &v)?),
            "scenario" => {}
            "summary" => wall = Some(v["wall_s"].as_f64().unwrap_or(0.0)),
            other => return Err(located(file, n, format!("unknown line type {other:?}"))),
        }
    }
    let Some((index, count, plan_id, plan_runs, scenarios)) = start else {
        return Err(format!("{}: empty: no `start` line", file.display()));
    };
    let Some(wall_s) = wall else {
        return Err(format!(
            "{}: shard {index}/{count} has no `summary` line: it did not finish (rerun it)",
            file.display()
        ));
    };
    Ok(ShardFile {
        file: file.to_path_buf(),
        shard: (index, count),
        plan_id,
        plan_runs,
        scenarios,
        runs,
        wall_s,
    })
}

type Start = (
    u64,
    u64,
    String,
    usize,
    Vec<(String, String, Vec<String>, u64)>,
);

fn start_line(file: &Path, n: usize, v: &Value) -> Result<Start, String> {
    let old = || {
        located(
            file,
            n,
            "the `start` line names no shard or plan: written by a leasehold older than `merge`",
        )
    };
    let shard: super::plan::Shard = v["shard"]
        .as_str()
        .ok_or_else(old)?
        .parse()
        .map_err(|e| located(file, n, e))?;
    let plan = &v["plan"];
    let id = plan["id"].as_str().ok_or_else(old)?.to_string();
    let runs = plan["runs"].as_u64().ok_or_else(old)? as usize;
    let scenarios = plan["scenarios"]
        .as_array()
        .ok_or_else(old)?
        .iter()
        .map(|s| {
            let name = s["name"].as_str().unwrap_or_default().to_string();
            let path = s["path"].as_str().unwrap_or_default().to_string();
            let expects = s["expects"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|e| e.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            // A declaration is judged over the scenario's own budget or
            // more (older outputs carry no budget: judged as before).
            let budget = s["seeds"].as_u64().unwrap_or(0);
            (name, path, expects, budget)
        })
        .collect();
    Ok((shard.index, shard.count, id, runs, scenarios))
}

fn run_line(file: &Path, n: usize, v: &Value) -> Result<RunLine, String> {
    let text = |k: &str| -> Result<String, String> {
        v[k].as_str()
            .map(str::to_string)
            .ok_or_else(|| located(file, n, format!("`run` line without `{k}`")))
    };
    let seed = v["seed"]
        .as_u64()
        .ok_or_else(|| located(file, n, "`run` line without `seed`"))?;
    if v.get("expect").is_none() {
        return Err(located(
            file,
            n,
            "`run` line without `expect`: written by a leasehold older than `merge`",
        ));
    }
    let violations = v["violations"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|x| {
                    let inv = x["invariant"].as_str().unwrap_or_default().to_string();
                    (inv, x["summary"].as_str().unwrap_or_default().to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    let status = text("status")?;
    if !["passed", "failed", "error", "caught", "not_caught"].contains(&status.as_str()) {
        return Err(located(file, n, format!("unknown run status {status:?}")));
    }
    text("scenario")?;
    Ok(RunLine {
        path: text("path")?,
        seed,
        expect: v["expect"].as_str().map(str::to_string),
        status,
        error: v["error"].as_str().map(str::to_string),
        violations,
        sim_ms: v["sim_ms"].as_u64().unwrap_or(0),
        wall_s: v["wall_s"].as_f64().unwrap_or(0.0),
        replay: text("replay")?,
        coverage: super::coverage::seed_from_json(&v["coverage"]).unwrap_or_default(),
    })
}

/// Checks that the files are exactly the shards of one plan.
fn check_shards(files: &[ShardFile]) -> Result<(), String> {
    let first = &files[0];
    for f in files {
        if f.plan_id != first.plan_id || f.shard.1 != first.shard.1 {
            return Err(format!(
                "{} is shard {}/{} of plan {}, but {} is shard {}/{} of plan {}: \
                 the files come from different runs (scenarios, seeds, base or version differ)",
                f.file.display(),
                f.shard.0,
                f.shard.1,
                f.plan_id,
                first.file.display(),
                first.shard.0,
                first.shard.1,
                first.plan_id
            ));
        }
    }
    let count = first.shard.1;
    let mut seen: BTreeMap<u64, &Path> = BTreeMap::new();
    for f in files {
        if let Some(other) = seen.insert(f.shard.0, &f.file) {
            return Err(format!(
                "shard {}/{count} appears twice: {} and {}",
                f.shard.0,
                other.display(),
                f.file.display()
            ));
        }
    }
    let missing: Vec<String> = (1..=count)
        .filter(|i| !seen.contains_key(i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "shard(s) {} of {count} missing: got {} file(s); a merge needs every shard",
            missing.join(", "),
            files.len()
        ));
    }
    let mut runs: BTreeSet<(&str, u64)> = BTreeSet::new();
    for f in files {
        for r in &f.runs {
            if !runs.insert((&r.path, r.seed)) {
                return Err(format!(
                    "{} seed {} was run by two shards (one is {})",
                    r.path,
                    r.seed,
                    f.file.display()
                ));
            }
        }
    }
    if runs.len() != first.plan_runs {
        return Err(format!(
            "the shards hold {} runs but their plan has {}",
            runs.len(),
            first.plan_runs
        ));
    }
    Ok(())
}

/// One run's verdict in the merged result.
enum Merged {
    Passed,
    Failed(String),
    Error(String),
    /// Passed, but a declared situation was reached on no seed.
    Uncovered(String),
}

/// Runs the command.
pub fn run(args: &MergeArgs) -> ExitCode {
    if args.files.len() > MAX_SHARD_FILES {
        eprintln!("leasehold: more than {MAX_SHARD_FILES} shard files");
        return ExitCode::Input;
    }
    let mut files = Vec::new();
    for f in &args.files {
        match read_shard(f) {
            Ok(s) => files.push(s),
            Err(e) => {
                eprintln!("leasehold: {e}");
                return ExitCode::Input;
            }
        }
    }
    if let Err(e) = check_shards(&files) {
        eprintln!("leasehold: {e}");
        return ExitCode::Input;
    }
    let human = |line: &str| {
        if args.json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    let order = files[0].scenarios.clone();
    let mut by_path: BTreeMap<&str, Vec<&RunLine>> = BTreeMap::new();
    for r in files.iter().flat_map(|f| &f.runs) {
        by_path.entry(r.path.as_str()).or_default().push(r);
    }
    let (mut passed, mut failed, mut errors, mut sim_ms) = (0usize, 0usize, 0usize, 0u64);
    let (mut held, mut caught) = (Vec::new(), Vec::new());
    let mut suites = Vec::new();
    let mut total = Tally::default();
    let mut by_scenario = Vec::new();
    for (name, path, expects, budget) in &order {
        let Some(runs) = by_path.get_mut(path.as_str()) else {
            continue;
        };
        runs.sort_by_key(|r| r.seed);
        let mut tally = Tally::default();
        for r in runs.iter().filter(|r| r.status != "error") {
            tally.add_seed(r.coverage.iter().map(|(k, n)| (k.as_str(), *n)));
        }
        total.merge(&tally);
        let missing = tally.missing_within(expects, *budget);
        let uncovered = (!missing.is_empty()).then(|| missing_reason(&missing, tally.seeds));
        let expect = runs[0].expect.clone();
        let first_caught = runs.iter().position(|r| r.status == "caught");
        let verdicts: Vec<Merged> = runs
            .iter()
            .map(|r| match (r.status.as_str(), &expect) {
                ("error", _) => Merged::Error(r.error.clone().unwrap_or_else(|| "error".into())),
                ("passed", None) => Merged::Passed,
                (_, None) => Merged::Failed(
                    r.violations
                        .first()
                        .map_or_else(|| "failed".into(), |v| v.1.clone()),
                ),
                (_, Some(_)) if first_caught.is_some() => Merged::Passed,
                (_, Some(inv)) => Merged::Failed(format!(
                    "expected a violation of {inv} within the seed budget; none found"
                )),
            })
            .map(|v| match (v, &uncovered) {
                (Merged::Passed, Some(reason)) => Merged::Uncovered(reason.clone()),
                (v, _) => v,
            })
            .collect();
        let mut cases = Vec::new();
        let mut told_missing = false;
        for (r, v) in runs.iter().zip(&verdicts) {
            sim_ms += r.sim_ms;
            let outcome = match v {
                Merged::Passed => {
                    passed += 1;
                    junit::CaseOutcome::Passed
                }
                Merged::Error(e) => {
                    errors += 1;
                    failed += 1;
                    human(&format!(
                        "ERROR {name} seed {}: {e}\n  replay: {}\n",
                        r.seed, r.replay
                    ));
                    junit::CaseOutcome::Error {
                        message: e.clone(),
                        text: format!("replay: {}", r.replay),
                    }
                }
                Merged::Uncovered(reason) => {
                    failed += 1;
                    if !told_missing {
                        told_missing = true;
                        human(&format!(
                            "FAILED {name}: {reason} (declared in [coverage] expects of {path})\n"
                        ));
                    }
                    junit::CaseOutcome::Failed {
                        message: reason.clone(),
                        kind: "coverage".into(),
                        text: format!("declared in [coverage] expects of {path}"),
                    }
                }
                Merged::Failed(reason) => {
                    failed += 1;
                    if expect.is_none() {
                        human(&format!("FAILED {name} seed {}:", r.seed));
                        for (inv, summary) in &r.violations {
                            human(&format!("  {inv}: {summary}"));
                        }
                        human(&format!("  replay: {}\n", r.replay));
                    } else if !told_missing {
                        told_missing = true;
                        human(&format!("FAILED {name}: {reason}\n"));
                    }
                    let kind = match (&expect, r.violations.first()) {
                        (Some(inv), _) => format!("missing {inv}"),
                        (None, Some(v)) => v.0.clone(),
                        (None, None) => "failed".into(),
                    };
                    let text: Vec<String> = r
                        .violations
                        .iter()
                        .map(|(i, s)| format!("{i}: {s}"))
                        .collect();
                    junit::CaseOutcome::Failed {
                        message: reason.clone(),
                        kind,
                        text: format!("{}\nreplay: {}", text.join("\n"), r.replay),
                    }
                }
            };
            cases.push(junit::Case {
                name: format!("seed {}", r.seed),
                classname: path.clone(),
                time_s: r.wall_s,
                outcome,
            });
        }
        if let (Some(k), Some(inv)) = (first_caught, &expect) {
            let wall: f64 = runs[..=k].iter().map(|r| r.wall_s).sum();
            human(&format!(
                "caught {name}: {inv} found at seed {}, after {} seeds and {wall:.2}s; replay: {}",
                runs[k].seed,
                k + 1,
                runs[k].replay
            ));
        }
        if verdicts.iter().all(|v| matches!(v, Merged::Passed)) {
            if expect.is_some() {
                caught.push(name.as_str());
            } else {
                held.push(name.as_str());
            }
        }
        suites.push(junit::Suite {
            name: name.clone(),
            cases,
            properties: junit::coverage_properties(&tally),
        });
        by_scenario.push((name.as_str(), tally, expects.as_slice()));
    }
    human(&format!(
        "correct core, every invariant held ({}): {}",
        held.len(),
        held.join(", ")
    ));
    if !caught.is_empty() {
        human(&format!(
            "catalogue, bug caught ({}): {}",
            caught.len(),
            caught.join(", ")
        ));
    }
    human("coverage by scenario (declared situations: seeds reaching / seeds):");
    for (name, tally, expects) in &by_scenario {
        human(&super::coverage::scenario_line(name, tally, expects));
    }
    for line in super::coverage::total_lines(&total) {
        human(&line);
    }
    let runs = passed + failed;
    let longest = files.iter().map(|f| f.wall_s).fold(0.0, f64::max);
    let summed: f64 = files.iter().map(|f| f.wall_s).sum();
    human(&format!(
        "{runs} runs merged from {} shards: longest shard {longest:.1}s, all shards {summed:.1}s \
         ({:.2} seeds/s per shard-second)",
        files.len(),
        runs as f64 / summed.max(1e-9)
    ));
    human(&format!("{passed} passed, {failed} failed"));
    if args.json {
        println!(
            "{}",
            json!({
                "type": "summary", "passed": passed, "failed": failed, "errors": errors,
                "seeds": runs, "wall_s": longest, "shard_wall_s": summed,
                "seeds_per_s": runs as f64 / longest.max(1e-9),
                "sim_over_wall": sim_ms as f64 / 1000.0 / longest.max(1e-9),
                "held": held, "caught": caught, "shards": files.len(),
                "plan": files[0].plan_id, "coverage": total.to_json(),
            })
        );
    }
    if let Some(out) = &args.junit {
        if let Err(e) = std::fs::write(out, junit::render("leasehold", &suites)) {
            eprintln!("leasehold: cannot write {}: {e}", out.display());
            return ExitCode::Input;
        }
    }
    ExitCode::of_runs(errors, failed)
}
