//! The `leasehold` binary end to end: run (summary line, exit codes, JSON,
//! JUnit, shards), replay (hash, trace, timeline), shrink (the written
//! file reloads and still fails on replay), check (line-numbered errors).

mod cli_support;

use cli_support::{assert_says, command, exits, repo, scratch, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::Output;

/// Runs `leasehold args… path` to the end.
fn on(args: &[&str], path: &Path) -> Output {
    command(args).arg(path).output().unwrap()
}

/// A small, quick scenario the correct core passes.
const SMALL: &str = r#"description = "small"
seeds = 3
duration = "1m"
events = ["crash worker-1 at 5s", "restart worker-1 at 8s"]

[topology]
workers = 2

[workload]
jobs = 6
enqueue_over = "5s"
run_time = ["200ms", "2s"]

[faults]
window = "20s"
"#;

fn catalogue(file: &str) -> PathBuf {
    repo().join("scenarios/catalogue").join(file)
}

#[test]
fn run_passes_prints_the_summary_last_and_writes_valid_junit() {
    let d = scratch("run");
    std::fs::write(d.join("small_world_passes.toml"), SMALL).unwrap();
    let junit = d.join("junit.xml");
    let run = command(&["run", "--seeds", "2", "--jobs", "2", "--junit"])
        .arg(&junit)
        .arg(&d)
        .output()
        .unwrap();
    exits(&run, 0);
    let out = stdout(&run);
    let last = out.lines().last().unwrap();
    assert_eq!(last, "2 passed, 0 failed");
    assert!(out.contains("seeds/s"), "{out}");
    let doc = std::fs::read_to_string(&junit).unwrap();
    let xml = roxmltree::Document::parse(&doc).unwrap_or_else(|e| panic!("{e}\n{doc}"));
    let root = xml.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(root.attribute("tests"), Some("2"));
    let suite = root.first_element_child().unwrap();
    assert_eq!(suite.attribute("name"), Some("small_world_passes"));
    let cases = suite
        .children()
        .filter(|n| n.tag_name().name() == "testcase")
        .count();
    assert_eq!(cases, 2);
}

#[test]
fn run_json_streams_one_object_per_line() {
    let d = scratch("json");
    std::fs::write(d.join("small_world_passes.toml"), SMALL).unwrap();
    std::fs::write(
        d.join("zz_caught.toml"),
        std::fs::read_to_string(catalogue("claim_without_cas_grants_one_lease_twice.toml"))
            .unwrap(),
    )
    .unwrap();
    let o = on(&["run", "--seeds", "2", "--jobs", "1", "--json"], &d);
    exits(&o, 0);
    let (out, err) = (stdout(&o), stderr(&o));
    let values: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let types: Vec<&str> = values.iter().map(|v| v["type"].as_str().unwrap()).collect();
    // One thread: each scenario's line follows its last run, in order.
    assert_eq!(
        types,
        ["start", "run", "run", "scenario", "run", "run", "scenario", "summary"],
        "{out}"
    );
    assert_eq!(values[0]["runs"], 4);
    assert_eq!(values[1]["seed"], 0);
    assert_eq!(values[1]["status"], "passed");
    assert_eq!(
        values[1]["replayed"], true,
        "the first seed is replayed (I10)"
    );
    assert_eq!(values[2]["replayed"], false);
    assert_eq!(values[3]["scenario"], "small_world_passes");
    assert_eq!(values[3]["verdict"], "passed");
    assert!(values[3]["caught"].is_null());
    let caught_runs: Vec<&str> = values[4..6]
        .iter()
        .map(|v| v["status"].as_str().unwrap())
        .collect();
    assert!(caught_runs.contains(&"caught"), "{out}");
    assert_eq!(values[6]["verdict"], "passed");
    assert_eq!(values[6]["caught"]["invariant"], "I1");
    let summary = &values[7];
    assert_eq!(summary["passed"], 4);
    assert_eq!(summary["held"][0], "small_world_passes");
    assert_eq!(summary["caught"][0], "zz_caught");
    assert!(err.lines().last().unwrap() == "4 passed, 0 failed", "{err}");
}

#[test]
fn run_rejects_a_malformed_scenario_with_its_location() {
    let d = scratch("malformed");
    std::fs::write(
        d.join("bad.toml"),
        "[protocol]\nlease = \"5s\"\nrenew_interval = \"9s\"\n",
    )
    .unwrap();
    let o = on(&["run"], &d);
    exits(&o, 2);
    assert_says(&stderr(&o), &["bad.toml:3:1: protocol.renew_interval:"]);
}

#[test]
fn shards_split_a_run_into_disjoint_parts() {
    let d = scratch("shards");
    std::fs::write(d.join("small_world_passes.toml"), SMALL).unwrap();
    let mut seen = Vec::new();
    for i in 1..=3 {
        let shard = format!("{i}/3");
        let o = on(&["run", "--json", "--seeds", "5", "--shard", &shard], &d);
        exits(&o, 0);
        for l in stdout(&o).lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            if v["type"] == "run" {
                seen.push(v["seed"].as_u64().unwrap());
            }
        }
    }
    seen.sort_unstable();
    assert_eq!(seen, vec![0, 1, 2, 3, 4]);
}

#[test]
fn a_caught_bug_passes_and_a_missed_expectation_fails() {
    let file = catalogue("claim_without_cas_grants_one_lease_twice.toml");
    let o = on(&["run", "--jobs", "2"], &file);
    exits(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("caught claim-without-cas ("), "{out}");
    assert!(out.contains("I1 found at seed"), "{out}");
    // The same world on the correct core cannot show the bug: the
    // expectation fails, and says so.
    let d = scratch("missed");
    let text_ = std::fs::read_to_string(&file)
        .unwrap()
        .replace("variant = \"claim-without-cas\"\n", "");
    std::fs::write(d.join("no_bug_here.toml"), text_).unwrap();
    let o = on(&["run", "--seeds", "2"], &d);
    exits(&o, 1);
    let out = stdout(&o);
    assert!(out.contains("expected a violation of I1"), "{out}");
    assert_eq!(out.lines().last().unwrap(), "0 passed, 2 failed");
}

#[test]
fn replay_is_deterministic_and_writes_trace_and_timeline() {
    let d = scratch("replay");
    let file = catalogue("late_cancel_overwrites_a_success.toml");
    let run = |extra: &[&str]| {
        let o = command(&["replay", "--seed", "0", "--hash"])
            .args(extra)
            .arg(&file)
            .output()
            .unwrap();
        let (out, err) = (stdout(&o), stderr(&o));
        let hash = out
            .lines()
            .find_map(|l| l.strip_prefix("history hash: "))
            .unwrap_or_else(|| panic!("no hash in {out}\n{err}"))
            .to_string();
        (o.status.code(), hash, out)
    };
    let trace = d.join("t.jsonl");
    let page = d.join("t.html");
    let (code, h1, out) = run(&[
        "--trace",
        trace.to_str().unwrap(),
        "--timeline",
        page.to_str().unwrap(),
    ]);
    let (_, h2, _) = run(&[]);
    assert_eq!(h1, h2, "I10: same scenario and seed, same hash");
    assert!(matches!(code, Some(0 | 1)), "{out}");
    let lines = std::fs::read_to_string(&trace).unwrap();
    assert!(lines
        .lines()
        .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<svg"));
    assert!(!html.contains("<script") && !html.contains(" src="));
}

#[test]
fn check_reports_bad_lines_with_their_numbers() {
    let d = scratch("check");
    let f = d.join("history.jsonl");
    std::fs::write(&f, "\n{\"job\": 1}\nnot json\n").unwrap();
    let o = on(&["check"], &f);
    exits(&o, 2);
    let err = stderr(&o);
    assert!(err.contains("history.jsonl:2:"), "{err}");
    assert!(err.contains("history.jsonl:3:"), "{err}");
    assert!(!err.contains(" at line 1 column"), "{err}");
}

#[test]
fn check_accepts_a_clean_store_history() {
    let d = scratch("check-clean");
    let f = d.join("history.jsonl");
    // A trace's store events, re-exported as plain events, check clean.
    let scenario = "scenarios/cancel_racing_completion_never_overwrites_success.toml";
    exits(&on(&["replay", scenario, "--seed", "0", "--trace"], &f), 0);
    let events: Vec<String> = std::fs::read_to_string(&f)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            (v["type"] == "store_event").then(|| v["event"].to_string())
        })
        .collect();
    assert!(!events.is_empty());
    std::fs::write(&f, events.join("\n")).unwrap();
    let o = on(&["check"], &f);
    exits(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("0 violations"), "{out}");
}
