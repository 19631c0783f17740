//! `leasehold export --format jepsen` and `leasehold check --format
//! jepsen`: hand-written histories (one clean, one with a known stale
//! release), malformed input located at file:line:col, and exported
//! simulator histories: a correct-core run checks clean, and a catalogue
//! bug shows in its Jepsen history.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn leasehold(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .current_dir(repo())
        .args(args)
        .output()
        .expect("the binary runs")
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/jepsen")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("leasehold-jepsen-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn out(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn a_clean_hand_written_history_passes() {
    let o = leasehold(&["check", "--format", "jepsen", &fixture("clean.edn")]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let text = out(&o);
    assert!(text.contains("checked 15 Jepsen operations"), "{text}");
    assert!(text.contains("2 acquire, 3 release, 1 renew"), "{text}");
    assert!(text.contains("1 other calls left out"), "{text}");
    assert!(text.contains(": 0 violations"), "{text}");
}

#[test]
fn a_hand_written_stale_release_is_caught_at_its_line() {
    let o = leasehold(&["check", "--format", "jepsen", &fixture("stale_release.edn")]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains("stale_release.edn:12:2: I2 single winner: release of job 7 with token 3 answered :ok by op 7 at 12:2, but a sweep reclaimed that lease (op 3 at 8:2)"),
        "{text}"
    );
    // The same release, seen from the grant of token 4: whichever came
    // first, a success of token 3 and a grant of token 4 exclude each other.
    assert!(
        text.contains("stale_release.edn:12:2: I2 single winner: job 7 ended with token 3 (op 7 at 12:2), but token 4 was granted too (op 5 at 10:2)"),
        "{text}"
    );
    assert!(text.contains(": 2 violations"), "{text}");
}

#[test]
fn malformed_jepsen_input_is_bad_input_with_its_location() {
    let d = scratch("bad");
    for (body, needle) in [
        (
            "{:type :invoke, :f :acquire, :process 0}\n{:type :ok, :f :acquire :process 0 :value",
            "bad.edn:2:",
        ),
        (
            "{:type :invoke, :f :renew, :value {:job 1}, :process 0}\n",
            "bad.edn:1:1: the value must be a map with :job and :token",
        ),
        (
            "{:type :maybe, :f :renew, :process 0}\n",
            "bad.edn:1:1: :type :maybe",
        ),
        (&"[".repeat(5000), "nested more than"),
    ] {
        let f = d.join("bad.edn");
        std::fs::write(&f, body).unwrap();
        let o = leasehold(&["check", "--format", "jepsen", f.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{body}: {}", out(&o));
        assert!(out(&o).contains(needle), "{body}: {}", out(&o));
    }
    let o = leasehold(&["check", "--format", "edn", &fixture("clean.edn")]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
}

#[test]
fn an_exported_correct_run_checks_clean_and_a_catalogue_bug_shows() {
    let d = scratch("export");
    let clean = d.join("clean.edn");
    let o = leasehold(&[
        "export",
        "scenarios/worker_crash_mid_job_is_reclaimed_once.toml",
        "--seed",
        "1",
        "--format",
        "jepsen",
        "-o",
        clean.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let text = std::fs::read_to_string(&clean).unwrap();
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("{:type :"), "{first}");
    for field in [":f :", ":value ", ":time ", ":process ", ":index 0"] {
        assert!(first.contains(field), "{field} in {first}");
    }
    assert!(
        text.contains(":type :ok, :f :acquire"),
        "a lease was granted"
    );
    let o = leasehold(&["check", "--format", "jepsen", clean.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(out(&o).contains(": 0 violations"), "{}", out(&o));

    // The same history through --trace, then export: byte-identical.
    let trace = d.join("t.jsonl");
    let o = leasehold(&[
        "replay",
        "scenarios/worker_crash_mid_job_is_reclaimed_once.toml",
        "--seed",
        "1",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let o = leasehold(&["export", trace.to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), text);

    // claim-without-cas grants one lease to two workers: the clients see it.
    let buggy = d.join("buggy.edn");
    let o = leasehold(&[
        "export",
        "scenarios/catalogue/claim_without_cas_grants_one_lease_twice.toml",
        "--seed",
        "0",
        "-o",
        buggy.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let o = leasehold(&["check", "--format", "jepsen", buggy.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(
        out(&o).contains("I1 single grant: job ") && out(&o).contains("granted twice"),
        "{}",
        out(&o)
    );
}

#[test]
fn a_history_with_no_lease_operation_is_refused_not_passed() {
    let d = scratch("register");
    let f = d.join("register.edn");
    let body = "{:type :invoke, :f :write, :value 1, :process 0, :index 0}\n\
                {:type :ok, :f :write, :value 1, :process 0, :index 1}\n\
                {:type :invoke, :f :cas, :value [1 2], :process 1, :index 2}\n\
                {:type :fail, :f :cas, :value [1 2], :process 1, :index 3}\n";
    std::fs::write(&f, body).unwrap();
    let o = leasehold(&["check", "--format", "jepsen", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        out(&o).contains("none of its 4 operations is an acquire, renew, release or sweep call"),
        "{}",
        out(&o)
    );
}

#[test]
fn a_lock_history_without_values_gets_a_few_errors_a_count_and_a_hint() {
    let d = scratch("mutex");
    let f = d.join("mutex.edn");
    let mut body = String::new();
    // Eight acquires without values: one error each.
    for p in 0..8 {
        body.push_str(&format!("{{:type :invoke, :f :acquire, :process {p}}}\n"));
        body.push_str(&format!("{{:type :ok, :f :acquire, :process {p}}}\n"));
    }
    std::fs::write(&f, body).unwrap();
    let o = leasehold(&["check", "--format", "jepsen", f.to_str().unwrap()]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert_eq!(text.matches("the value must be a map").count(), 5, "{text}");
    assert!(text.contains("... and 3 more errors (8 in all)"), "{text}");
    assert!(text.contains("needs a mutex model"), "{text}");
}
