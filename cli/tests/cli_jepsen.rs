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
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
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
    // Every finding as every tool prints one, its place in the file after.
    let at = format!("{}:12:2", fixture("stale_release.edn"));
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!("I2 single winner violated: release of job 7 with token 3 answered :ok by op 7 at 12:2, but a sweep reclaimed that lease (op 3 at 8:2): a stale token must be refused\n  at:     {at}")),
        "{text}"
    );
    // The same release, seen from the grant of token 4: whichever came
    // first, a success of token 3 and a grant of token 4 exclude each other.
    assert!(
        text.contains(&format!("I2 single winner violated: job 7 ended with token 3 (op 7 at 12:2), but token 4 was granted too (op 5 at 10:2): whichever came first, one of them is wrong\n  at:     {at}")),
        "{text}"
    );
    // And the lease model's search: no order of job 7's calls lets the
    // release of the swept token 3 commit.
    assert!(
        text.contains(&format!("linearizability (lease model) violated: no order of its calls reaches the completion of :release by process 0 (:index 6 -> 7 :ok) (token 3 was not the lease held (token 4 held)); the lease before it: token 4 held\n  job:    7\n  at:     {at}")),
        "{text}"
    );
    assert!(text.contains(": 3 violations"), "{text}");
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
        out(&o).contains("I1 single grant violated: job ") && out(&o).contains("granted twice"),
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
        out(&o).contains("none of its 4 operations is a client :acquire, :renew, :release or :sweep call (2 other client calls): the lease model and the mutex cannot judge this history"),
        "{}",
        out(&o)
    );
}

#[test]
fn histories_whose_every_call_failed_are_refused_not_passed() {
    let d = scratch("failed");
    let f = d.join("failed.edn");
    for (body, needle) in [
        (
            "{:type :invoke, :f :acquire, :value {:queue \"q\"}, :process 0}\n\
             {:type :fail, :f :acquire, :value {:queue \"q\"}, :process 0, :error \"empty\"}\n",
            "the lease model cannot judge this history",
        ),
        (
            "{:type :invoke, :f :acquire, :process 0}\n{:type :fail, :f :acquire, :process 0, :error :timeout}\n",
            "the mutex model cannot judge this history",
        ),
    ] {
        std::fs::write(&f, body).unwrap();
        let o = leasehold(&["check", "--format", "jepsen", f.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", out(&o));
        assert!(out(&o).contains(needle), "{}", out(&o));
    }
}

#[test]
fn a_lock_history_read_as_leases_gets_a_few_errors_a_count_and_a_hint() {
    let d = scratch("mutex");
    let f = d.join("mutex.edn");
    let mut body = String::new();
    // Eight acquires without values: one error each as leases.
    for p in 0..8 {
        body.push_str(&format!("{{:type :invoke, :f :acquire, :process {p}}}\n"));
        body.push_str(&format!("{{:type :ok, :f :acquire, :process {p}}}\n"));
    }
    std::fs::write(&f, body).unwrap();
    let o = leasehold(&[
        "check",
        "--format",
        "jepsen",
        "--model",
        "lease",
        f.to_str().unwrap(),
    ]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert_eq!(text.matches("the value must be a map").count(), 5, "{text}");
    assert!(text.contains("... and 3 more errors (8 in all)"), "{text}");
    assert!(text.contains("--model mutex"), "{text}");
    // By its shape (no values) it is a lock history: eight holders at
    // once is not a mutex.
    let o = leasehold(&["check", "--format", "jepsen", f.to_str().unwrap()]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("not linearizable as a mutex"), "{text}");
}

fn knossos(name: &str) -> String {
    repo()
        .join("sim/check/tests/data/knossos")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn knossos_etcd_lock_history_is_invalid_with_a_small_window() {
    let o = leasehold(&[
        "check",
        "--format",
        "jepsen",
        &knossos("mutex/bad/etcd.edn"),
    ]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("etcd.edn:"), "{text}");
    assert!(
        text.contains(
            ": not linearizable as a mutex: no order of the calls reaches the completion of :"
        ),
        "{text}"
    );
    assert!(
        text.contains("the smallest window that cannot be linearized, whatever the lock's state before it: :index "),
        "{text}"
    );
    assert!(
        text.contains("checked 1135 Jepsen operations against a mutex"),
        "{text}"
    );
    assert!(text.contains(": 1 violation"), "{text}");
    // The same with --model mutex, and as JSON.
    let o2 = leasehold(&[
        "check",
        "--format",
        "jepsen",
        "--model",
        "mutex",
        &knossos("mutex/bad/etcd.edn"),
    ]);
    assert_eq!(out(&o2), text);
    // A bound too tight for it: no verdict (exit 3), never a pass.
    let o = leasehold(&[
        "check",
        "--format",
        "jepsen",
        "--max-configs",
        "20",
        &knossos("mutex/bad/etcd.edn"),
    ]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(text.contains("unknown, no verdict"), "{text}");
}

#[test]
fn knossos_cas_register_history_is_refused_not_passed() {
    for model in ["auto", "mutex", "lease"] {
        let o = leasehold(&[
            "check",
            "--format",
            "jepsen",
            "--model",
            model,
            &knossos("cas-register/bad/immediate-failure.edn"),
        ]);
        let text = out(&o);
        assert_eq!(o.status.code(), Some(2), "{model}: {text}");
        assert!(
            text.contains("cannot judge this history"),
            "{model}: {text}"
        );
    }
}

/// A lock history: p0 holds, crashes mid-release (`:info`); p1 acquires
/// after. Valid: the crashed release may have freed the lock.
const LOCK: &str = r#"[{"type": "invoke", "f": "acquire", "process": 0, "time": 1}
,{"type": "ok", "f": "acquire", "process": 0, "time": 2}
,{"type": "info", "f": "start-partition", "process": "nemesis", "value": ["n1", "n2"]}
,{"type": "invoke", "f": "release", "process": 0, "time": 3}
,{"type": "info", "f": "release", "process": 0, "time": 4, "error": ["timeout", 5000]}
,{"type": "invoke", "f": "acquire", "process": 5, "time": 5}
,{"type": "ok", "f": "acquire", "process": 5, "time": 6}
,{"type": "info", "f": "stop-partition", "process": "nemesis"}
]"#;

#[test]
fn elle_cli_json_lock_histories_are_read_and_the_nemesis_ignored() {
    let d = scratch("json");
    let f = d.join("lock.json");
    std::fs::write(&f, LOCK).unwrap();
    let o = leasehold(&["check", "--format", "jepsen", f.to_str().unwrap()]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("checked 8 Jepsen operations against a mutex"),
        "{text}"
    );
    assert!(
        text.contains("2 acquire and 1 release calls (0 :fail left out, 1 unknown)"),
        "{text}"
    );
    assert!(text.contains(": linearizable"), "{text}");
    // Had the release failed, p5's acquire finds the lock held.
    std::fs::write(
        &f,
        LOCK.replace(
            r#""type": "info", "f": "release""#,
            r#""type": "fail", "f": "release""#,
        ),
    )
    .unwrap();
    let o = leasehold(&["check", "--format", "jepsen", f.to_str().unwrap()]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains("lock.json:7:2: not linearizable as a mutex"),
        "{text}"
    );
    assert!(
        text.contains(":acquire by process 5 (:index 5 -> 6 :ok)"),
        "{text}"
    );
    assert!(text.contains("the lock was already held"), "{text}");
    // Bad JSON: located.
    std::fs::write(&f, "[{\"type\": \"invoke\", \"f\": \"acquire\"}]").unwrap();
    let o = leasehold(&["check", "--format", "jepsen", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        out(&o).contains("lock.json:1:2: the operation has no \"process\""),
        "{}",
        out(&o)
    );
}

#[test]
fn a_grant_while_the_store_clock_says_the_old_lease_is_valid_is_a_violation() {
    // A's lease (100 ms from store time 1000) is swept early; B is granted
    // at store time 1050. Both calls completed, nothing overlaps.
    let d = scratch("expiry");
    let f = d.join("early.edn");
    let body = |b_expires: i64| {
        format!(
            "{{:type :invoke, :f :acquire, :value {{:queue \"q\", :max 1, :lease-ms 100}}, :process 0, :time 0}}\n\
             {{:type :ok, :f :acquire, :value {{:job 7, :token 1, :expires-ms 1100}}, :process 0, :time 1}}\n\
             {{:type :invoke, :f :sweep, :value {{:limit 10}}, :process 9, :time 2}}\n\
             {{:type :ok, :f :sweep, :value [{{:job 7, :token 1}}], :process 9, :time 3}}\n\
             {{:type :invoke, :f :acquire, :value {{:queue \"q\", :max 1, :lease-ms 100}}, :process 1, :time 4}}\n\
             {{:type :ok, :f :acquire, :value {{:job 7, :token 2, :expires-ms {b_expires}}}, :process 1, :time 5}}\n"
        )
    };
    std::fs::write(&f, body(1150)).unwrap();
    let o = leasehold(&["check", "--format", "jepsen", f.to_str().unwrap()]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains("linearizability (lease model) violated: no order of its calls reaches the completion of :acquire by process 1 (:index 4 -> 5 :ok) (it was granted at 1050 ms on the store's clock, while the lease of token 1 was valid until 1100 ms)"),
        "{text}"
    );
    assert!(
        text.contains(&format!("  job:    7\n  at:     {}:6:1", f.display())),
        "{text}"
    );
    assert!(
        text.contains("expiry on the store's clock judged"),
        "{text}"
    );
    std::fs::write(&f, body(1200)).unwrap();
    let o = leasehold(&["check", "--format", "jepsen", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
}
