//! Bad input to the `leasehold` binary never crashes, hangs or passes: a
//! scenario beyond a bound exits 2 with its location, a run that hits its
//! wall-clock limit is an error, seed counts are bounded, and `check`
//! refuses an empty history and reads replay traces.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn leasehold(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .args(args)
        .env_remove("LEASEHOLD_SEED")
        .env_remove("LEASEHOLD_SEEDS")
        .output()
        .expect("the binary runs")
}

fn all(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("leasehold-bad-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let f = dir.join(name);
    std::fs::write(&f, text).unwrap();
    f.to_string_lossy().into_owned()
}

#[test]
fn four_billion_jobs_exit_2_with_the_location_not_an_abort() {
    let d = scratch("jobs");
    let f = write(
        &d,
        "huge.toml",
        "seeds = 1\n[workload]\njobs = 4000000000\n",
    );
    let o = leasehold(&["run", &f]);
    assert_eq!(o.status.code(), Some(2), "{}", all(&o));
    assert!(
        all(&o).contains("huge.toml:3:1: workload.jobs"),
        "{}",
        all(&o)
    );
}

#[test]
fn a_run_that_hits_the_run_timeout_is_an_error_not_a_pass() {
    let d = scratch("timeout");
    let f = write(
        &d,
        "a_week.toml",
        "seeds = 1\nduration = \"168h\"\n[workload]\njobs = 5\nenqueue_over = \"100h\"\n",
    );
    let started = std::time::Instant::now();
    let o = leasehold(&["run", &f, "--run-timeout", "1s"]);
    let out = all(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("ERROR a_week seed 0"), "{out}");
    assert!(out.contains("run timeout of 1s"), "{out}");
    assert!(out.contains("0 passed, 1 failed"), "{out}");
    // The first run and its I10 rerun stop at 1 s each.
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    let o = leasehold(&["run", &f, "--run-timeout", "0s"]);
    assert_eq!(o.status.code(), Some(2), "{}", all(&o));
}

#[test]
fn the_run_timeout_has_a_default_shown_in_help() {
    for cmd in ["run", "replay", "shrink"] {
        let o = leasehold(&[cmd, "--help"]);
        let out = all(&o);
        assert!(out.contains("--run-timeout <DURATION>"), "{cmd}: {out}");
        assert!(out.contains("[default: 10m]"), "{cmd}: {out}");
    }
}

#[test]
fn seed_counts_beyond_the_bound_are_refused() {
    let o = leasehold(&[
        "run",
        "scenarios/worker_crash_mid_job_is_reclaimed_once.toml",
        "--seeds",
        "18446744073709551615",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", all(&o));
    assert!(all(&o).contains("above the bound"), "{}", all(&o));
}

#[test]
fn check_refuses_an_empty_history() {
    let d = scratch("empty");
    for text in ["", "\n\n"] {
        let f = write(&d, "empty.jsonl", text);
        let o = leasehold(&["check", &f]);
        assert_eq!(o.status.code(), Some(2), "{}", all(&o));
        assert!(all(&o).contains("no store events"), "{}", all(&o));
    }
}

#[test]
fn check_reads_a_replay_trace_and_its_help_says_what_it_cannot_check() {
    let d = scratch("trace");
    let trace = d.join("t.jsonl");
    let o = leasehold(&[
        "replay",
        "scenarios/worker_crash_mid_job_is_reclaimed_once.toml",
        "--seed",
        "1",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", all(&o));
    let o = leasehold(&["check", trace.to_str().unwrap()]);
    let out = all(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("(a replay trace)"), "{out}");
    assert!(out.contains(": 0 violations"), "{out}");
    assert!(out.contains("I3, I5, I6, I10 and I11"), "{out}");
    let o = leasehold(&["check", "--help"]);
    let help = all(&o);
    for needle in [
        "replay --trace",
        "empty history is refused",
        "cannot show I3",
    ] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
}
