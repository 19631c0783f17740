//! Short chaos runs through the real binaries, real processes and real
//! signals: a clean run passes, and the planted bug is caught. SQLite
//! always; PostgreSQL when `DATABASE_URL` is set (`scripts/test.sh` sets
//! it). The runs take turns: each one's faults must be the only ones its
//! store sees, or a crash report could not be matched to its fault.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;

const CHAOS: &str = env!("CARGO_BIN_EXE_leasehold-chaos");
const WORKER: &str = env!("CARGO_BIN_EXE_leasehold-chaos-worker");

/// One run at a time (see the module docs).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn chaos(dir: &Path, args: &[&str]) -> (i32, String) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let out: Output = Command::new(CHAOS)
        .args(args)
        .arg("--worker-bin")
        .arg(WORKER)
        .arg("--work-dir")
        .arg(dir)
        // The restart fault is covered by scripts/test.sh's run; here the
        // fault kinds are named by each test.
        .env_remove("LEASEHOLD_PG_CTL")
        .env_remove("LEASEHOLD_PG_DATA")
        .output()
        .expect("run leasehold-chaos");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    (out.status.code().unwrap_or(-1), text)
}

fn database_url() -> Option<String> {
    std::env::var("DATABASE_URL").ok().filter(|u| !u.is_empty())
}

/// A clean run: exit 0, every job exact, every crash report matched.
fn assert_clean(code: i32, text: &str) {
    assert_eq!(code, 0, "a clean run must pass:\n{text}");
    assert!(text.contains("PASS: no violations"), "{text}");
    let jobs = text
        .lines()
        .find(|l| l.trim_start().starts_with("jobs:"))
        .expect("a jobs line");
    assert!(
        jobs.contains("1000 enqueued, 1000 succeeded with their exact result bytes"),
        "{jobs}"
    );
    assert!(
        !text.contains("faults:        0 injected"),
        "faults were injected: {text}"
    );
}

/// The planted bug: exit 1, an overlap naming two tokens, and the rerun
/// command with the seed and the bug.
fn assert_caught(code: i32, text: &str, seed: &str) {
    assert_eq!(code, 1, "the planted bug must be caught:\n{text}");
    assert!(
        text.contains("[overlap] side effects of two leases overlap"),
        "{text}"
    );
    assert!(text.contains("  tokens:  t"), "both tokens named: {text}");
    assert!(
        text.contains(&format!("--seed {seed}")) && text.contains("--planted-bug detached-handler"),
        "the rerun command: {text}"
    );
}

#[test]
fn a_clean_run_on_sqlite_passes() {
    let dir = tempfile::tempdir().unwrap();
    let (code, text) = chaos(
        dir.path(),
        &[
            "--store",
            "sqlite",
            "--seed",
            "11",
            "--jobs",
            "1000",
            "--duration",
            "10s",
            "--fault-every",
            "1s",
            "--faults",
            "kill,kill-writer,pause",
        ],
    );
    assert_clean(code, &text);
    assert!(
        dir.path().join("audit.jsonl").is_file(),
        "the audit log is exported"
    );
}

/// Pauses on SQLite: a worker resumed after SIGSTOP drops its overdue
/// store calls mid-write. Before leasehold-sqlite's writes were made
/// cancellation-safe (`adapters/sqlite/src/write_conn.rs`), this seed
/// wedged the file in about half the runs; now the planted bug is caught.
#[test]
fn the_planted_bug_is_caught_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let (code, text) = chaos(
        dir.path(),
        &[
            "--store",
            "sqlite",
            "--seed",
            "12",
            "--jobs",
            "4000",
            "--duration",
            "15s",
            "--faults",
            "pause",
            "--fault-every",
            "1s",
            "--planted-bug",
            "detached-handler",
        ],
    );
    assert_caught(code, &text, "12");
}

#[test]
fn a_clean_run_on_postgres_passes() {
    let Some(url) = database_url() else {
        eprintln!("DATABASE_URL not set: skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (code, text) = chaos(
        dir.path(),
        &[
            "--store",
            "postgres",
            "--database-url",
            &url,
            "--seed",
            "21",
            "--jobs",
            "1000",
            "--duration",
            "10s",
            "--fault-every",
            "1s",
            "--faults",
            "kill,pause,terminate-backend",
        ],
    );
    assert_clean(code, &text);
}

#[test]
fn the_planted_bug_is_caught_on_postgres() {
    let Some(url) = database_url() else {
        eprintln!("DATABASE_URL not set: skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (code, text) = chaos(
        dir.path(),
        &[
            "--store",
            "postgres",
            "--database-url",
            &url,
            "--seed",
            "22",
            "--jobs",
            "4000",
            "--duration",
            "15s",
            "--faults",
            "pause",
            "--fault-every",
            "1s",
            "--planted-bug",
            "detached-handler",
        ],
    );
    assert_caught(code, &text, "22");
}

#[test]
fn bad_arguments_exit_2_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(CHAOS)
            .args(args)
            .arg("--work-dir")
            .arg(dir.path())
            .env_remove("DATABASE_URL")
            .output()
            .expect("run leasehold-chaos");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["--store", "postgres"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--database-url"), "{err}");
    let (code, err) = run(&["--store", "sqlite", "--jobs", "0"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--jobs"), "{err}");
    let (code, err) = run(&["--store", "sqlite", "--faults", "restart"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("restart does not apply to sqlite"), "{err}");
    let (code, err) = run(&["--store", "sqlite", "--worker-bin", "/nonexistent/worker"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("worker binary /nonexistent/worker not found"),
        "{err}"
    );
    let (code, err) = run(&["--store", "sqlite", "--duration", "ten"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--duration"), "{err}");
}
