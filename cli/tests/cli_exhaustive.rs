//! `leasehold exhaust`: the scope's verdict in its exit code, bad input
//! refused at its flag, and counterexamples: for each catalogue variant the
//! checker finds at S1, the file it writes is the one committed and the
//! simulator accepts it, and the simulator's replay breaks the same
//! invariant. A file that replays lives in `scenarios/exhaustive/` (the
//! library run catches its variant); one that did not stayed under
//! `sim/exhaustive/counterexamples/` until it did (docs/EXHAUSTIVE.md).

use leasehold_cli::cli::engine;
use leasehold_cli::cli::stores::{StoreArgs, Stores};
use leasehold_model::scenario::load_file;
use leasehold_sim::runner::PreparedConfig;
use std::path::{Path, PathBuf};
use std::process::Output;

mod cli_support;

use cli_support::{leasehold, repo};

/// Runs `leasehold exhaust args…` to the end.
fn exhaust(args: &[&str]) -> Output {
    leasehold(&[&["exhaust"], args].concat())
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_scope_without_faults_holds_with_its_state_count() {
    let o = exhaust(&["--lost", "0", "--conflicts", "0"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    assert!(out.contains("3097 states (up to symmetry)"), "{out}");
    assert!(out.contains("holds: I1-I9"), "{out}");
}

/// The depth-first search counts the breadth-first search's states (the
/// pinned S1 half and the no-fault scope) and says it holds.
#[test]
fn the_depth_first_search_counts_the_same_states() {
    for (args, states) in [
        (&["--lost", "0", "--conflicts", "0"][..], "3097 states"),
        (&[][..], "227848 states"),
    ] {
        let o = exhaust(&[&["--search", "depth-first"], args].concat());
        let out = text(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
        assert!(out.contains(&format!("{states} (up to symmetry)")), "{out}");
        assert!(out.contains("holds: I1-I9"), "{out}");
    }
    // An unknown search is bad input, and the error names the searches.
    let o = exhaust(&["--search", "sideways"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("depth-first"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_bad_scope_is_refused_at_its_flag() {
    let o = exhaust(&["--workers", "9"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("--workers: 9 (1 to 4)"), "{err}");
    let o = exhaust(&["--jobs", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--jobs: 0 (1 to 3)"));
    // Not a number: clap's own error, also bad input.
    let o = exhaust(&["--lost", "many"]);
    assert_eq!(o.status.code(), Some(2));
}

/// `--max-job-time` is validated by the scope (a zero run, or one past the
/// cap, is refused at its flag) and by clap (not a number).
#[test]
fn a_bad_handler_length_is_refused_at_its_flag() {
    for bad in ["0", "60001"] {
        let o = exhaust(&["--max-job-time", bad]);
        assert_eq!(o.status.code(), Some(2));
        let err = text(&o.stderr);
        assert!(
            err.contains(&format!("--max-job-time: {bad}ms (1ms to 60000ms")),
            "{err}"
        );
    }
    let o = exhaust(&["--max-job-time", "long"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--max-job-time"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn an_unknown_or_store_side_variant_is_refused() {
    let o = exhaust(&["--variant", "no-such-bug"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("unknown variant") && err.contains("fixed-lock-no-heartbeat"));
    let o = exhaust(&["--variant", "release-without-token"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("store-side"));
}

/// Finds the variant's violation at S1 with the default search (the
/// checker's breadth-first one: a shortest path, the same on every run with
/// one thread), writes its counterexample, checks it is the committed file
/// `committed` (from the workspace root) and that the simulator loads and
/// validates it; answers the file.
fn writes(variant: &str, inv: &str, committed: &str) -> PathBuf {
    writes_at(&[], variant, inv, committed)
}

/// [`writes`] at the scope S1 changed by `scope` (flags).
fn writes_at(scope: &[&str], variant: &str, inv: &str, committed: &str) -> PathBuf {
    let file = std::env::temp_dir().join(format!(
        "leasehold-cx-{}-{variant}.toml",
        std::process::id()
    ));
    let o = exhaust(
        &[
            scope,
            &[
                "--variant",
                variant,
                "--threads",
                "1",
                "--write-counterexample",
                file.to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}{}", text(&o.stderr));
    assert!(out.contains(&format!("violated: {inv}:")), "{out}");
    let written = std::fs::read_to_string(&file).unwrap();
    let _ = std::fs::remove_file(&file);
    let committed: PathBuf = repo().join(committed);
    let kept = std::fs::read_to_string(&committed).unwrap();
    // The library's `[coverage]` declaration is added after writing: the
    // rest of the file must be exactly what the checker writes.
    let kept = kept
        .split_once("\n[coverage]\n")
        .map_or(kept.as_str(), |(body, _)| body);
    assert_eq!(
        written,
        kept,
        "the checker now writes another counterexample than {}",
        committed.display()
    );
    let s = load_file(&committed).unwrap();
    assert_eq!(s.config.expect.violation.unwrap().to_string(), inv);
    PreparedConfig::new(s.config).expect("the simulator accepts the written file");
    committed
}

/// How many seeds of `file` break `inv` in the simulator.
fn caught(file: &Path, inv: &str) -> u64 {
    let s = load_file(file).unwrap();
    let valid = PreparedConfig::new(s.config.clone()).unwrap();
    let stores = Stores::new(&StoreArgs::default());
    (0..s.config.seeds)
        .filter(|&seed| {
            engine::run(&valid, seed, "x", &stores)
                .unwrap()
                .violations()
                .iter()
                .any(|v| v.invariant.to_string() == inv)
        })
        .count() as u64
}

const FIXED_LOCK: &str =
    "scenarios/exhaustive/fixed_lock_no_heartbeat_shortest_counterexample.toml";
const CONFLICT_ABANDONS: &str =
    "scenarios/exhaustive/conflict_abandons_lease_shortest_counterexample.toml";
const FENCE_FROM_ANSWER: &str =
    "scenarios/exhaustive/fence_from_answer_shortest_counterexample.toml";
const EXPIRY_2500: &str =
    "scenarios/exhaustive/expiry_does_not_stop_handler_2500ms_handler_shortest_counterexample.toml";

/// `fence-from-answer` needs two lost messages (2 workers, 1 job, 2 lost,
/// 1 `Conflict`): its first renew goes out 100 ms late, an interval after
/// the claim's held answer (I5, 19 steps).
#[test]
fn fence_from_answer_counterexample_is_found_and_written() {
    writes_at(
        &["--lost", "2"],
        "fence-from-answer",
        "I5",
        FENCE_FROM_ANSWER,
    );
}

/// `expiry-does-not-stop-handler` needs a handler that outlives its lease:
/// `--max-job-time 2500` at S1 (I5, 16 steps: the retry after a
/// `Conflict` spaced half an interval where the protocol's deadline owes
/// it sooner).
#[test]
fn expiry_does_not_stop_handler_counterexample_is_found_and_written() {
    writes_at(
        &["--max-job-time", "2500"],
        "expiry-does-not-stop-handler",
        "I5",
        EXPIRY_2500,
    );
}

#[test]
fn fixed_lock_no_heartbeat_counterexample_is_found_and_written() {
    writes("fixed-lock-no-heartbeat", "I5", FIXED_LOCK);
}

#[test]
fn conflict_abandons_lease_counterexample_is_found_and_written() {
    writes("conflict-abandons-lease", "I5", CONFLICT_ABANDONS);
}

/// Asserts that every seed the committed counterexample `committed` (from
/// the workspace root) declares breaks I5 in the simulator: the file's
/// holds fix the order the path needs (the claims after the enqueue, the
/// sweep before the holder's next message), so no seed may draw another.
fn breaks_i5_in_the_simulator(committed: &str) {
    let file = repo().join(committed);
    let seeds = load_file(&file).unwrap().config.seeds;
    assert_eq!(
        caught(&file, "I5"),
        seeds,
        "not every seed of {} breaks I5",
        file.display()
    );
}

#[test]
fn fixed_lock_no_heartbeat_counterexample_fails_the_simulator_the_same_way() {
    breaks_i5_in_the_simulator(FIXED_LOCK);
}

#[test]
fn conflict_abandons_lease_counterexample_fails_the_simulator_the_same_way() {
    breaks_i5_in_the_simulator(CONFLICT_ABANDONS);
}

#[test]
fn fence_from_answer_counterexample_fails_the_simulator_the_same_way() {
    breaks_i5_in_the_simulator(FENCE_FROM_ANSWER);
}

#[test]
fn expiry_does_not_stop_handler_counterexample_fails_the_simulator_the_same_way() {
    breaks_i5_in_the_simulator(EXPIRY_2500);
}
