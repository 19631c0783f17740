//! `leasehold explore`: finds a planted bug within its time limit and
//! leaves a shrunk scenario file that pins the failing seed, which
//! `leasehold run` and `leasehold replay` reproduce; stops cleanly on
//! SIGTERM with a summary; honours `--max-seeds`.

mod cli_support;

use cli_support::{command, exits, leasehold, repo, stderr, stdout};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

const PLANTED: &str = "scenarios/catalogue/claim_without_cas_grants_one_lease_twice.toml";
const CORRECT: &str = "scenarios/cancel_racing_completion_never_overwrites_success.toml";

/// The number written in `text` right after the first `marker`, up to `end`.
fn number_after(text: &str, marker: &str, end: char) -> Option<u64> {
    text.split(marker).nth(1)?.split(end).next()?.parse().ok()
}

#[test]
fn explore_finds_a_planted_bug_and_leaves_a_shrunk_replayable_case() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    let limits = "--for 3m --max-failures 1 --seed-base 5 --shrink-secs 60 -j 2";
    let o = command(&["explore", PLANTED, "--include-catalogue"])
        .args(limits.split(' '))
        .arg("--corpus")
        .arg(&corpus)
        .output()
        .unwrap();
    exits(&o, 1); // a failure exits 1
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(err.contains("stopped at --max-failures"), "{err}");
    assert!(out.contains("regression cases: leasehold run"), "{out}");
    let files: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    // Seeds already running when the limit was reached are still recorded
    // (nothing found is lost), so another invariant may add a file.
    let file = files
        .iter()
        .find(|f| {
            f.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("I1-claim_without_cas_grants_one_lease_twice-seed-")
        })
        .unwrap_or_else(|| panic!("a file named for I1 and the scenario: {files:?}"));
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let case = std::fs::read_to_string(file).unwrap();
    assert!(case.contains("Shrunk in"), "{case}");
    assert!(case.contains("Replay:"), "{case}");
    assert!(
        !case.contains("[expect]"),
        "a regression case expects nothing to break"
    );
    let seed = number_after(&name, "-seed-", '-').expect("the seed is in the name");
    assert!(case.contains(&format!("first_seed = {seed}")), "{case}");
    // The shrunk case is smaller than the scenario it came from.
    let jobs = |t: &str| -> u64 {
        t.lines()
            .find_map(|l| l.trim().strip_prefix("jobs = "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(u64::MAX)
    };
    let original = std::fs::read_to_string(repo().join(PLANTED)).unwrap();
    assert!(jobs(&case) < jobs(&original), "shrunk: {case}");

    // `leasehold run` replays it as a regression case: it fails on
    // its pinned seed with the same invariant while the bug is there.
    let file = file.to_str().unwrap();
    let r = leasehold(&["run", file, "--json"]);
    exits(&r, 1);
    let run: serde_json::Value = stdout(&r)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "run")
        .expect("one run line");
    assert_eq!(run["seed"], seed);
    assert_eq!(run["violations"][0]["invariant"], "I1");
    let replayed = exits(
        &leasehold(&["replay", file, "--seed", &seed.to_string()]),
        1,
    );
    assert!(replayed.contains("I1"), "{replayed}");
}

#[test]
fn sigterm_stops_the_explorer_cleanly_with_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c");
    let child = command(&["explore", CORRECT, "--for", "10m", "--progress-secs", "1"])
        .args(["-j", "2", "--corpus"])
        .arg(&corpus)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(4));
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: sending a signal to our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let t0 = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(60), "stopped promptly");
    exits(&o, 0); // no failure: exit 0
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(err.contains("stopped by a signal"), "{err}");
    assert!(err.contains("seeds/s"), "progress lines: {err}");
    let n = number_after(&out, "explored ", ' ').expect("a summary line");
    assert!(n > 0, "{out}");
    assert_eq!(std::fs::read_dir(&corpus).unwrap().count(), 0);
}

#[test]
fn max_seeds_bounds_the_exploration_and_a_clean_core_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c");
    let corpus = corpus.to_str().unwrap();
    let o = leasehold(&["explore", CORRECT, "--max-seeds", "12", "--corpus", corpus]);
    exits(&o, 0);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(out.starts_with("explored 12 seeds"), "{out}");
    assert!(err.contains("stopped at --max-seeds"), "{err}");
}

#[test]
fn zero_limits_are_refused() {
    for flag in ["--for", "--max-seeds", "--max-failures", "--progress-secs"] {
        let value = if flag == "--for" { "0s" } else { "0" };
        let o = leasehold(&["explore", CORRECT, flag, value]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{flag}: {err}");
        assert!(err.contains(flag), "{flag}: {err}");
    }
}

#[test]
fn catalogue_scenarios_are_left_out_unless_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().to_str().unwrap();
    let o = leasehold(&["explore", PLANTED, "--max-seeds", "1", "--corpus", corpus]);
    exits(&o, 2);
    let err = stderr(&o);
    assert!(err.contains("--include-catalogue"), "{err}");
}

/// The lines naming situations first reached, without their seconds.
fn first_reached(err: &str) -> Vec<String> {
    err.lines()
        .filter(|l| l.contains(" new: "))
        .map(|l| {
            let (head, rest) = l.split_once(" (").unwrap_or((l, ""));
            let tail = rest.split_once("): ").map_or("", |x| x.1);
            format!("{head}: {tail}")
        })
        .collect()
}

#[test]
fn guided_exploration_reports_coverage_over_time_and_repeats_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c");
    let corpus = corpus.to_str().unwrap();
    let args = [
        "explore",
        CORRECT,
        "--max-seeds",
        "40",
        "--seed-base",
        "3",
        "--corpus",
        corpus,
    ];
    let a = leasehold(&[&args[..], &["-j", "2", "--guided"]].concat());
    let b = leasehold(&[&args[..], &["-j", "1", "--guided"]].concat());
    exits(&a, 0);
    exits(&b, 0);
    let (ea, eb) = (stderr(&a), stderr(&b));
    assert!(ea.contains("guided by coverage"), "{ea}");
    assert!(ea.contains("inputs kept"), "{ea}");
    let (fa, fb) = (first_reached(&ea), first_reached(&eb));
    assert!(!fa.is_empty(), "situations named when first reached: {ea}");
    assert!(fa[0].starts_with("explore: run 1:"), "{fa:?}");
    assert_eq!(
        fa, fb,
        "same seed and budget, same runs, whatever the threads"
    );
    assert!(
        stdout(&a).starts_with("explored 40 seeds"),
        "{}",
        stdout(&a)
    );
    let u = leasehold(&args);
    exits(&u, 0);
    assert!(stderr(&u).contains(", uniform,"), "{}", stderr(&u));
}

#[test]
fn compare_runs_both_explorers_for_the_same_budget() {
    let o = leasehold(&[
        "explore",
        CORRECT,
        "--compare",
        "--max-seeds",
        "20",
        "--seed-base",
        "3",
        "-j",
        "2",
    ]);
    exits(&o, 0);
    let out = stdout(&o);
    for line in [
        "guided   20 runs in",
        "uniform  20 runs in",
        "first reached",
        "rare situations",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
    let refused = leasehold(&["explore", CORRECT, "--compare"]);
    exits(&refused, 2);
    assert!(
        stderr(&refused).contains("--max-seeds"),
        "{}",
        stderr(&refused)
    );
}
