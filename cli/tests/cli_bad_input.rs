//! Bad input to the `leasehold` binary never crashes, hangs or passes: a
//! scenario beyond a bound exits 2 with its location, a run that hits its
//! wall-clock limit is an error, seed counts are bounded, and `check`
//! refuses an empty history and reads replay traces.

mod cli_support;

use cli_support::{all, exits, leasehold, scratch, write};

#[test]
fn four_billion_jobs_exit_2_with_the_location_not_an_abort() {
    let huge = "seeds = 1\n[workload]\njobs = 4000000000\n";
    let f = write(&scratch("bad-jobs"), "huge.toml", huge);
    let out = exits(&leasehold(&["run", &f]), 2);
    assert!(out.contains("huge.toml:3:1: workload.jobs"), "{out}");
}

#[test]
fn a_run_that_hits_the_run_timeout_is_an_error_not_a_pass() {
    let a_week = "seeds = 1\nduration = \"168h\"\n[workload]\njobs = 5\nenqueue_over = \"100h\"\n";
    let f = write(&scratch("bad-timeout"), "a_week.toml", a_week);
    let started = std::time::Instant::now();
    let out = exits(&leasehold(&["run", &f, "--run-timeout", "1s"]), 2);
    assert!(out.contains("ERROR a_week seed 0"), "{out}");
    assert!(out.contains("run timeout of 1s"), "{out}");
    assert!(out.contains("0 passed, 1 failed"), "{out}");
    // The first run and its I10 rerun stop at 1 s each.
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    exits(&leasehold(&["run", &f, "--run-timeout", "0s"]), 2);
}

#[test]
fn the_run_timeout_has_a_default_shown_in_help() {
    for cmd in ["run", "replay", "shrink"] {
        let out = all(&leasehold(&[cmd, "--help"]));
        assert!(out.contains("--run-timeout <DURATION>"), "{cmd}: {out}");
        assert!(out.contains("[default: 10m]"), "{cmd}: {out}");
    }
}

#[test]
fn seed_counts_beyond_the_bound_are_refused() {
    let scenario = "scenarios/worker_crash_mid_job_is_reclaimed_once.toml";
    let o = leasehold(&["run", scenario, "--seeds", "18446744073709551615"]);
    let out = exits(&o, 2);
    assert!(out.contains("above the bound"), "{out}");
}

#[test]
fn check_refuses_an_empty_history() {
    let d = scratch("bad-empty");
    for text in ["", "\n\n"] {
        let f = write(&d, "empty.jsonl", text);
        let out = exits(&leasehold(&["check", &f]), 2);
        assert!(out.contains("no store events"), "{text:?}: {out}");
    }
}

#[test]
fn check_reads_a_replay_trace_and_its_help_says_what_it_cannot_check() {
    let d = scratch("bad-trace");
    let trace = d.join("t.jsonl");
    let trace = trace.to_str().unwrap();
    let scenario = "scenarios/worker_crash_mid_job_is_reclaimed_once.toml";
    exits(
        &leasehold(&["replay", scenario, "--seed", "1", "--trace", trace]),
        0,
    );
    let out = exits(&leasehold(&["check", trace]), 0);
    assert!(out.contains("(a replay trace)"), "{out}");
    assert!(out.contains(": 0 violations"), "{out}");
    assert!(out.contains("I3, I5, I6, I10 and I11"), "{out}");
    let help = all(&leasehold(&["check", "--help"]));
    for needle in [
        "replay --trace",
        "empty history is refused",
        "cannot show I3",
    ] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
}
