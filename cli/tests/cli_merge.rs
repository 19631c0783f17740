//! Sharded runs merge to the unsharded verdict: N shards' `run --json`
//! outputs, named by `--shard`, `LEASEHOLD_SHARD` or Kubernetes'
//! `JOB_COMPLETION_INDEX`, hold exactly the unsharded run's (scenario,
//! seed, hash, status) and `leasehold merge` gives its summary, verdict
//! and exit code; a missing, duplicated, unfinished or foreign shard is
//! refused.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Two correct-core scenarios (one split over every shard) and one
/// catalogue scenario (its seeds kept together), a mix that exercises
/// both verdict rules.
const SCENARIOS: [&str; 3] = [
    "scenarios/claim_answer_held_then_renews_cut_fences_from_the_send.toml",
    "scenarios/catalogue/claim_without_cas_grants_one_lease_twice.toml",
    "scenarios/cancel_racing_completion_never_overwrites_success.toml",
];

fn leasehold(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_leasehold"));
    c.current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."))
        .args(args);
    for k in [
        "LEASEHOLD_SEED",
        "LEASEHOLD_SEEDS",
        "LEASEHOLD_SHARD",
        "LEASEHOLD_SHARDS",
        "JOB_COMPLETION_INDEX",
    ] {
        c.env_remove(k);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("the binary runs")
}

fn run_json(extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut args = vec!["run"];
    args.extend(SCENARIOS);
    args.extend(["--seeds", "7", "--json", "-j", "2"]);
    args.extend(extra);
    leasehold(&args, env)
}

fn lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is JSON"))
        .collect()
}

/// (path, seed, hash, status) of every `run` line.
fn runs(o: &Output) -> BTreeSet<(String, u64, String, String)> {
    lines(o)
        .iter()
        .filter(|v| v["type"] == "run")
        .map(|v| {
            (
                v["path"].as_str().unwrap().to_string(),
                v["seed"].as_u64().unwrap(),
                v["hash"].as_str().unwrap().to_string(),
                v["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn summary(o: &Output) -> Value {
    lines(o)
        .into_iter()
        .rev()
        .find(|v| v["type"] == "summary")
        .expect("a summary line")
}

fn write(dir: &Path, name: &str, o: &Output) -> String {
    let p = dir.join(name);
    std::fs::write(&p, &o.stdout).unwrap();
    p.to_string_lossy().into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn three_shards_merge_to_the_unsharded_verdict_seed_for_seed() {
    let whole = run_json(&[], &[]);
    assert_eq!(whole.status.code(), Some(0), "{}", stderr(&whole));
    let dir = tempfile::tempdir().unwrap();
    // The three ways a shard is named: the flag, a CI matrix's variable,
    // a Kubernetes Indexed Job's 0-based index.
    let shards = [
        run_json(&["--shard", "1/3"], &[]),
        run_json(&[], &[("LEASEHOLD_SHARD", "2/3")]),
        run_json(
            &[],
            &[("JOB_COMPLETION_INDEX", "2"), ("LEASEHOLD_SHARDS", "3")],
        ),
    ];
    let mut union = BTreeSet::new();
    let mut total = 0;
    let mut files = Vec::new();
    for (i, s) in shards.iter().enumerate() {
        assert_eq!(s.status.code(), Some(0), "shard {}: {}", i + 1, stderr(s));
        let start = &lines(s)[0];
        assert_eq!(start["shard"], format!("{}/3", i + 1));
        assert_eq!(start["plan"]["runs"], 21);
        assert!(stderr(s).contains(&format!("shard {}/3 (from ", i + 1)));
        let mine = runs(s);
        assert!(!mine.is_empty(), "shard {} ran nothing", i + 1);
        total += mine.len();
        union.extend(mine);
        files.push(write(dir.path(), &format!("shard-{}.jsonl", i + 1), s));
    }
    assert_eq!(total, 21, "no run twice");
    assert_eq!(union, runs(&whole), "same runs, seeds, hashes and statuses");
    // The correct-core scenarios' seeds are split over the shards.
    let holders = shards
        .iter()
        .filter(|s| runs(s).iter().any(|r| r.0 == SCENARIOS[0]))
        .count();
    assert!(holders >= 2, "one scenario's seeds spread over shards");

    let junit = dir.path().join("merged.xml");
    let mut args = vec!["merge", "--json", "--junit", junit.to_str().unwrap()];
    args.extend(files.iter().map(String::as_str));
    let merged = leasehold(&args, &[]);
    assert_eq!(merged.status.code(), Some(0), "{}", stderr(&merged));
    let (m, w) = (summary(&merged), summary(&whole));
    for key in ["passed", "failed", "errors", "seeds", "held", "caught"] {
        assert_eq!(
            m[key], w[key],
            "merged {key} differs from the unsharded run"
        );
    }
    assert_eq!(m["caught"][0], "claim_without_cas_grants_one_lease_twice");
    assert!(stderr(&merged).contains("21 passed, 0 failed"));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testcase").count(), 21);
}

#[test]
fn a_failing_seed_on_one_shard_fails_the_merge_with_its_replay_line() {
    // The catalogue scenario without its expectation: its planted bug is
    // a failure, found on whichever shard runs its seeds.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(SCENARIOS[1]),
    )
    .unwrap();
    let planted = dir.path().join("planted.toml");
    let cut = text
        .find("[expect]")
        .expect("the catalogue file has [expect]");
    std::fs::write(&planted, format!("{}\n", &text[..cut])).unwrap();
    let p = planted.to_str().unwrap();
    let shard = |i: &str| {
        leasehold(
            &[
                "run",
                SCENARIOS[0],
                p,
                "--seeds",
                "4",
                "--json",
                "--shard",
                i,
            ],
            &[],
        )
    };
    let files: Vec<String> = ["1/2", "2/2"]
        .iter()
        .enumerate()
        .map(|(k, i)| write(dir.path(), &format!("s{k}.jsonl"), &shard(i)))
        .collect();
    let merged = leasehold(&["merge", &files[0], &files[1]], &[]);
    assert_eq!(merged.status.code(), Some(1), "{}", stderr(&merged));
    let out = String::from_utf8_lossy(&merged.stdout);
    assert!(out.contains("FAILED planted seed"), "{out}");
    assert!(out.contains("I1"), "{out}");
    assert!(out.contains("replay: leasehold replay"), "{out}");
}

#[test]
fn missing_duplicated_unfinished_and_foreign_shards_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.jsonl", &run_json(&["--shard", "1/2"], &[]));
    let b = write(dir.path(), "b.jsonl", &run_json(&["--shard", "2/2"], &[]));
    let other = write(
        dir.path(),
        "other.jsonl",
        &run_json(&["--shard", "2/2", "--seed-base", "100"], &[]),
    );
    let text = std::fs::read_to_string(&b).unwrap();
    let cut: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("\"summary\""))
        .collect();
    let unfinished = dir.path().join("unfinished.jsonl");
    std::fs::write(&unfinished, cut.join("\n")).unwrap();
    let unfinished = unfinished.to_string_lossy().into_owned();
    let cases: [(&[&str], &str); 4] = [
        (&[&a], "missing"),
        (&[&a, &b, &b], "appears twice"),
        (&[&a, &unfinished], "did not finish"),
        (&[&a, &other], "different runs"),
    ];
    for (files, says) in cases {
        let mut args = vec!["merge"];
        args.extend(files.iter().copied());
        let o = leasehold(&args, &[]);
        assert_eq!(o.status.code(), Some(2), "{files:?}");
        assert!(stderr(&o).contains(says), "{files:?}: {}", stderr(&o));
    }
    let o = leasehold(&["merge", &a, &b], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn bad_shard_settings_are_errors_never_an_empty_pass() {
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 5] = [
        (
            &[],
            &[("JOB_COMPLETION_INDEX", "3"), ("LEASEHOLD_SHARDS", "3")],
            "out of range",
        ),
        (&[], &[("JOB_COMPLETION_INDEX", "0")], "LEASEHOLD_SHARDS"),
        (&[], &[("LEASEHOLD_SHARD", "4/3")], "LEASEHOLD_SHARD"),
        (&["--shard", "2/2", "--seed-base", "random"], &[], "random"),
        (&["--shard", "40/40"], &[], "has no run"),
    ];
    for (extra, env, says) in cases {
        let o = run_json(extra, env);
        assert_eq!(o.status.code(), Some(2), "{extra:?} {env:?}");
        assert!(
            stderr(&o).contains(says),
            "{extra:?} {env:?}: {}",
            stderr(&o)
        );
        assert!(runs(&o).is_empty(), "nothing ran");
    }
    // The flag wins over the environment.
    let o = run_json(&["--shard", "1/3"], &[("LEASEHOLD_SHARD", "9/3")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(lines(&o)[0]["shard"], "1/3");
}
