//! Coverage in `leasehold run`: the named situations every seed reached in
//! the text, JSON and JUnit reports and in `leasehold merge`; a scenario
//! whose declared situation no seed reaches fails like an invariant
//! (exit 1, the scenario and the situation named); an unknown situation is
//! a located input error (exit 2).

mod cli_support;

use cli_support::{all, assert_says, exits, leasehold, scratch, stdout, write};
use serde_json::Value;

/// A short world where a worker crashes holding its leases.
fn crash_world(expects: &str) -> String {
    format!(
        r#"description = "a worker dies mid-job"
seeds = 2
duration = "90s"
events = ["crash worker-2 at 5s", "restart worker-2 at 20s"]

[workload]
jobs = 10
enqueue_over = "3s"
run_time = ["2s", "8s"]

[faults]
window = "30s"

[coverage]
expects = [{expects}]
"#
    )
}

fn lines(o: &std::process::Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn a_reached_declaration_passes_and_every_report_shows_coverage() {
    let dir = scratch("coverage-reached");
    let f = write(
        &dir,
        "crash.toml",
        &crash_world(r#""worker-crashed-holding-a-lease""#),
    );
    let junit = dir.join("junit.xml");
    let o = leasehold(&["run", &f, "--json", "--junit", junit.to_str().unwrap()]);
    let text = exits(&o, 0);
    assert_says(
        &text,
        &[
            "coverage by scenario",
            "declared: worker-crashed-holding-a-lease 2/2",
            "built-in situations reached over 2 seeds",
            "worker-crashed-holding-a-lease",
        ],
    );
    let lines = lines(&o);
    let run = lines
        .iter()
        .find(|l| l["type"] == "run")
        .expect("a run line");
    assert!(
        run["coverage"]["worker-crashed-holding-a-lease"].as_u64() >= Some(1),
        "{run}"
    );
    // The near misses: situations the seed missed, each by more than 0.
    let near = run["near"].as_object().expect("a near object");
    for (name, d) in near {
        assert!(run["coverage"].get(name).is_none(), "{name} reached: {run}");
        assert!(d.as_u64() > Some(0), "{name}: {run}");
    }
    let scenario = lines
        .iter()
        .find(|l| l["type"] == "scenario")
        .expect("a scenario line");
    assert_eq!(scenario["coverage"]["seeds"], 2, "{scenario}");
    assert_eq!(
        scenario["coverage"]["reached"]["worker-crashed-holding-a-lease"]["seeds"], 2,
        "{scenario}"
    );
    assert_eq!(scenario["uncovered"], Value::Array(vec![]), "{scenario}");
    let summary = lines.last().expect("a summary line");
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["coverage"]["seeds"], 2, "{summary}");
    let xml = std::fs::read_to_string(&junit).expect("JUnit written");
    assert_says(
        &xml,
        &[
            r#"<property name="coverage.seeds" value="2"/>"#,
            r#"<property name="coverage.worker-crashed-holding-a-lease" value="2/2 seeds"#,
        ],
    );
}

#[test]
fn a_declared_situation_no_seed_reaches_fails_the_run_naming_both() {
    let dir = scratch("coverage-missing");
    // No schedule: no fire can be answered PlanTimePruned.
    let f = write(
        &dir,
        "crash.toml",
        &crash_world(r#""worker-crashed-holding-a-lease", "fire-answered-plan-time-pruned""#),
    );
    let o = leasehold(&["run", &f, "--json"]);
    let text = exits(&o, 1);
    assert_says(
        &text,
        &[
            "FAILED crash: coverage: declared situation fire-answered-plan-time-pruned reached on none of the 2 seeds",
            "2 failed",
        ],
    );
    let lines = lines(&o);
    for run in lines.iter().filter(|l| l["type"] == "run") {
        assert_eq!(
            run["status"], "passed",
            "a seed's own status is its own: {run}"
        );
    }
    let scenario = lines
        .iter()
        .find(|l| l["type"] == "scenario")
        .expect("a scenario line");
    assert_eq!(scenario["verdict"], "failed", "{scenario}");
    assert_eq!(
        scenario["uncovered"],
        serde_json::json!(["fire-answered-plan-time-pruned"]),
        "{scenario}"
    );
    // One seed is no whole plan: nothing is judged.
    let one = leasehold(&["run", &f, "--seed", "0"]);
    exits(&one, 0);
    // Fewer seeds than the file's budget: nothing is judged either; as
    // many or more: judged.
    exits(&leasehold(&["run", &f, "--seeds", "1"]), 0);
    exits(&leasehold(&["run", &f, "--seeds", "3"]), 1);
    // Without observing, the built-in declaration fails too.
    let blind = leasehold(&["run", &f, "--no-coverage"]);
    assert_says(&exits(&blind, 1), &["worker-crashed-holding-a-lease"]);
}

#[test]
fn an_unknown_situation_is_a_located_input_error() {
    let dir = scratch("coverage-unknown");
    let f = write(&dir, "crash.toml", &crash_world(r#""no-such-situation""#));
    let o = leasehold(&["run", &f]);
    let text = exits(&o, 2);
    assert_says(
        &text,
        &[
            "crash.toml:",
            "coverage.expects[0]",
            "unknown situation \"no-such-situation\"",
        ],
    );
    let twice = write(
        &dir,
        "twice.toml",
        &crash_world(r#""one-way-partition", "one-way-partition""#),
    );
    assert_says(&exits(&leasehold(&["run", &twice]), 2), &["declared twice"]);
}

#[test]
fn merged_shards_judge_coverage_as_the_whole_run() {
    let dir = scratch("coverage-merge");
    let f = write(
        &dir,
        "crash.toml",
        &crash_world(r#""worker-crashed-holding-a-lease", "fire-answered-plan-time-pruned""#),
    );
    let mut files = Vec::new();
    for i in 1..=2 {
        let o = leasehold(&["run", &f, "--json", "--shard", &format!("{i}/2")]);
        // One shard holds half the seeds: it judges no coverage.
        exits(&o, 0);
        files.push(write(&dir, &format!("shard{i}.jsonl"), &stdout(&o)));
    }
    let mut args = vec!["merge", "--json"];
    args.extend(files.iter().map(String::as_str));
    let o = leasehold(&args);
    let text = exits(&o, 1);
    assert_says(
        &text,
        &[
            "FAILED crash: coverage: declared situation fire-answered-plan-time-pruned",
            "worker-crashed-holding-a-lease",
        ],
    );
    let summary: Value = serde_json::from_str(stdout(&o).lines().last().unwrap()).unwrap();
    assert_eq!(summary["coverage"]["seeds"], 2, "{summary}");
    assert_eq!(
        summary["coverage"]["reached"]["worker-crashed-holding-a-lease"]["seeds"],
        2,
        "{}",
        all(&o)
    );
}
