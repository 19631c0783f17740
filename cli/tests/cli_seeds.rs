//! Seed conventions of `leasehold run`: LEASEHOLD_SEED / LEASEHOLD_SEEDS
//! (flags win), `--seed-base N|random`, a run of no seed refused, exit
//! codes in `--help`, and progress lines when stderr is not a terminal.

use std::path::PathBuf;
use std::process::{Command, Output};

const SCENARIO: &str = "scenarios/worker_crash_mid_job_is_reclaimed_once.toml";

fn leasehold(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_leasehold"));
    c.current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."))
        .args(args)
        .env_remove("LEASEHOLD_SEED")
        .env_remove("LEASEHOLD_SEEDS");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("the binary runs")
}

fn all(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The seeds of the streamed `run` lines, sorted (they come in the order
/// the runs finish).
fn seeds_run(o: &Output) -> Vec<u64> {
    let mut seeds: Vec<u64> = String::from_utf8_lossy(&o.stdout)
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
    let o = leasehold(&["run", SCENARIO, "--json"], &[("LEASEHOLD_SEEDS", "2")]);
    assert_eq!(seeds_run(&o), vec![0, 1], "{}", all(&o));
    let o = leasehold(&["run", SCENARIO, "--json"], &[("LEASEHOLD_SEED", "7")]);
    assert_eq!(seeds_run(&o), vec![7], "{}", all(&o));
    let o = leasehold(
        &["run", SCENARIO, "--json", "--seeds", "1"],
        &[("LEASEHOLD_SEED", "7")],
    );
    assert_eq!(seeds_run(&o), vec![0], "{}", all(&o));
    let o = leasehold(&["run", SCENARIO], &[("LEASEHOLD_SEEDS", "many")]);
    assert_eq!(o.status.code(), Some(2), "{}", all(&o));
    assert!(all(&o).contains("LEASEHOLD_SEEDS"), "{}", all(&o));
}

#[test]
fn a_seed_base_moves_the_seeds_and_random_prints_its_base_first() {
    let o = leasehold(
        &[
            "run",
            SCENARIO,
            "--json",
            "--seeds",
            "2",
            "--seed-base",
            "100",
        ],
        &[],
    );
    assert_eq!(seeds_run(&o), vec![100, 101], "{}", all(&o));
    let o = leasehold(
        &["run", SCENARIO, "--seeds", "1", "--seed-base", "random"],
        &[],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let first = out.lines().next().unwrap_or_default();
    assert!(first.starts_with("seed base "), "{out}");
    assert_eq!(o.status.code(), Some(0), "{}", all(&o));
}

#[test]
fn a_run_of_no_seed_is_refused() {
    let o = leasehold(&["run", SCENARIO, "--seeds", "0"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", all(&o));
    assert!(all(&o).contains("runs no seed"), "{}", all(&o));
    let o = leasehold(&["run", SCENARIO, "--seed", "1", "--shard", "2/2"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", all(&o));
}

#[test]
fn help_documents_the_exit_codes() {
    for args in [&["--help"][..], &["run", "--help"][..]] {
        let o = leasehold(args, &[]);
        assert!(all(&o).contains("Exit status: 0"), "{}", all(&o));
    }
}

#[test]
fn without_a_terminal_each_scenario_prints_a_line_when_done_and_passes_are_named() {
    let o = leasehold(
        &[
            "run",
            SCENARIO,
            "scenarios/catalogue/fixed_lock_no_heartbeat_runs_a_job_twice_at_once.toml",
            "--seeds",
            "2",
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("worker_crash_mid_job_is_reclaimed_once: done, no violations"),
        "{err}"
    );
    let out = String::from_utf8_lossy(&o.stdout);
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
