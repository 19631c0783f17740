//! Seed conventions of `leasehold run`: LEASEHOLD_SEED / LEASEHOLD_SEEDS
//! (flags win), `--seed-base N|random`, a run of no seed refused, exit
//! codes in `--help`, and progress lines when stderr is not a terminal.

mod cli_support;

use cli_support::{all, exits, leasehold, leasehold_env, stderr, stdout};
use std::process::Output;

const SCENARIO: &str = "scenarios/worker_crash_mid_job_is_reclaimed_once.toml";

/// The seeds of the streamed `run` lines, sorted (they come in the order
/// the runs finish).
fn seeds_run(o: &Output) -> Vec<u64> {
    let mut seeds: Vec<u64> = stdout(o)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "run")
        .filter_map(|v| v["seed"].as_u64())
        .collect();
    seeds.sort_unstable();
    seeds
}

#[test]
fn environment_seeds_apply_and_flags_override_them() {
    // Each case: the flags after `run SCENARIO --json`, the environment,
    // and the seeds that run.
    type Case<'a> = (&'a [&'a str], (&'a str, &'a str), Vec<u64>);
    let cases: [Case; 3] = [
        (&[], ("LEASEHOLD_SEEDS", "2"), vec![0, 1]),
        (&[], ("LEASEHOLD_SEED", "7"), vec![7]),
        (&["--seeds", "1"], ("LEASEHOLD_SEED", "7"), vec![0]),
    ];
    for (flags, env, seeds) in cases {
        let args = [&["run", SCENARIO, "--json"], flags].concat();
        let o = leasehold_env(&args, &[env]);
        assert_eq!(seeds_run(&o), seeds, "{flags:?} {env:?}: {}", all(&o));
    }
    let o = leasehold_env(&["run", SCENARIO], &[("LEASEHOLD_SEEDS", "many")]);
    let text = exits(&o, 2);
    assert!(text.contains("LEASEHOLD_SEEDS"), "{text}");
}

#[test]
fn a_seed_base_moves_the_seeds_and_random_prints_its_base_first() {
    let base_100 = ["--seeds", "2", "--seed-base", "100"];
    let o = leasehold(&[&["run", SCENARIO, "--json"][..], &base_100].concat());
    assert_eq!(seeds_run(&o), vec![100, 101], "{}", all(&o));
    let o = leasehold(&["run", SCENARIO, "--seeds", "1", "--seed-base", "random"]);
    let out = stdout(&o);
    let first = out.lines().next().unwrap_or_default();
    assert!(first.starts_with("seed base "), "{out}");
    exits(&o, 0);
}

#[test]
fn a_run_of_no_seed_is_refused() {
    let text = exits(&leasehold(&["run", SCENARIO, "--seeds", "0"]), 2);
    assert!(text.contains("runs no seed"), "{text}");
    exits(
        &leasehold(&["run", SCENARIO, "--seed", "1", "--shard", "2/2"]),
        2,
    );
}

#[test]
fn help_documents_the_exit_codes() {
    for args in [&["--help"][..], &["run", "--help"][..]] {
        let text = all(&leasehold(args));
        assert!(text.contains("Exit status: 0"), "{args:?}: {text}");
    }
}

#[test]
fn without_a_terminal_each_scenario_prints_a_line_when_done_and_passes_are_named() {
    let caught = "scenarios/catalogue/fixed_lock_no_heartbeat_runs_a_job_twice_at_once.toml";
    let o = leasehold(&["run", SCENARIO, caught, "--seeds", "2"]);
    let err = stderr(&o);
    assert!(
        err.contains("worker_crash_mid_job_is_reclaimed_once: done, no violations"),
        "{err}"
    );
    // A catalogue scenario's violations are its bug caught, not "no
    // violations" (which its line said before).
    assert!(
        err.contains(
            "fixed_lock_no_heartbeat_runs_a_job_twice_at_once: done, 2 of 2 seeds broke an \
             invariant, as the scenario expects"
        ),
        "{err}"
    );
    let out = stdout(&o);
    assert!(
        out.contains(
            "correct core, every invariant held (1): worker_crash_mid_job_is_reclaimed_once"
        ),
        "{out}"
    );
    assert!(
        out.contains("catalogue, bug caught (1): fixed_lock_no_heartbeat_runs_a_job_twice_at_once"),
        "{out}"
    );
}
