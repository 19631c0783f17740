//! What the tests of the `leasehold` binary share: the binary run from the
//! repository root with none of the environment variables that change what
//! it runs, its output as text, and scratch directories.
#![allow(dead_code)] // each test file uses its own part of it

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Variables that pick seeds, shards or the PostgreSQL database. A test
/// sets the ones it means (`leasehold_env`) and never inherits them from
/// the shell or the test script.
const CHOSEN_BY_EACH_TEST: [&str; 6] = [
    "LEASEHOLD_SEED",
    "LEASEHOLD_SEEDS",
    "LEASEHOLD_SHARD",
    "LEASEHOLD_SHARDS",
    "JOB_COMPLETION_INDEX",
    "DATABASE_URL",
];

/// The workspace root, where the scenario library's paths start.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `leasehold args…`, to run from the workspace root with none of the
/// variables in [`CHOSEN_BY_EACH_TEST`].
pub fn command(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_leasehold"));
    c.current_dir(repo()).args(args);
    for k in CHOSEN_BY_EACH_TEST {
        c.env_remove(k);
    }
    c
}

/// Runs `leasehold args…` to the end.
pub fn leasehold(args: &[&str]) -> Output {
    leasehold_env(args, &[])
}

/// Runs `leasehold args…` to the end with the variables `env` set.
pub fn leasehold_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = command(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("the binary runs")
}

/// What a run printed: stdout, then stderr.
pub fn all(o: &Output) -> String {
    format!("{}{}", stdout(o), stderr(o))
}

/// What a run printed on stdout.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What a run printed on stderr.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts that the run exited with `code`, showing all it printed if
/// not, and answers all it printed (stdout, then stderr).
#[track_caller]
pub fn exits(o: &Output, code: i32) -> String {
    let text = all(o);
    assert_eq!(o.status.code(), Some(code), "{text}");
    text
}

/// A fresh scratch directory for one test, named `leasehold-{name}-{pid}`.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("leasehold-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `text` to `dir/name` and answers the file's path.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let f = dir.join(name);
    std::fs::write(&f, text).unwrap();
    f.to_string_lossy().into_owned()
}

/// Asserts that `text` holds each of `needles`, naming the one it lacks.
#[track_caller]
pub fn assert_says(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "no {needle:?} in:\n{text}");
    }
}

/// `DATABASE_URL` as the test script sets it, or `None` with a note that
/// the calling test is skipped.
pub fn database_url() -> Option<String> {
    let url = std::env::var("DATABASE_URL").ok().filter(|u| !u.is_empty());
    if url.is_none() {
        eprintln!("DATABASE_URL is not set: skipping (scripts/test.sh sets it)");
    }
    url
}
