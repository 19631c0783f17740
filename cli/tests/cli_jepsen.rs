//! `leasehold export --format jepsen` and `leasehold check --format
//! jepsen`: hand-written histories (one clean, one with a known stale
//! release), malformed input located at file:line:col, and exported
//! simulator histories: a correct-core run checks clean, and a catalogue
//! bug shows in its Jepsen history.

mod cli_support;

use cli_support::{all, assert_says, exits, leasehold, repo, scratch};
use std::path::Path;

/// `leasehold check --format jepsen args…`: the history files and flags.
fn check_jepsen(args: &[&str]) -> std::process::Output {
    let mut all_args = vec!["check", "--format", "jepsen"];
    all_args.extend(args);
    leasehold(&all_args)
}

/// Writes `body` to `file`, checks it as a Jepsen history, asserts the
/// exit `code` and that the check `says` each of its lines, and answers
/// all the check printed.
#[track_caller]
fn check_written(file: &Path, body: &str, code: i32, says: &[&str]) -> String {
    std::fs::write(file, body).unwrap();
    let text = exits(&check_jepsen(&[file.to_str().unwrap()]), code);
    assert_says(&text, says);
    text
}

/// A hand-written history under `cli/tests/jepsen/`.
fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/jepsen")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn a_clean_hand_written_history_passes() {
    let text = exits(&check_jepsen(&[&fixture("clean.edn")]), 0);
    assert_says(
        &text,
        &[
            "checked 15 Jepsen operations",
            "2 acquire, 3 release, 1 renew",
            "1 other calls left out",
            ": 0 violations",
        ],
    );
}

#[test]
fn a_hand_written_stale_release_is_caught_at_its_line() {
    let text = exits(&check_jepsen(&[&fixture("stale_release.edn")]), 1);
    // Every finding as every tool prints one, its place in the file after.
    let at = format!("{}:12:2", fixture("stale_release.edn"));
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
    let d = scratch("jepsen-bad");
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
        let o = check_jepsen(&[f.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{body}: {}", all(&o));
        assert!(all(&o).contains(needle), "{body}: {}", all(&o));
    }
    exits(
        &leasehold(&["check", "--format", "edn", &fixture("clean.edn")]),
        2,
    );
}

#[test]
fn an_exported_correct_run_checks_clean_and_a_catalogue_bug_shows() {
    let d = scratch("jepsen-export");
    let scenario = "scenarios/worker_crash_mid_job_is_reclaimed_once.toml";
    let clean = d.join("clean.edn");
    let clean = clean.to_str().unwrap();
    let export = ["export", scenario, "--seed", "1", "--format", "jepsen"];
    exits(&leasehold(&[&export[..], &["-o", clean]].concat()), 0);
    let text = std::fs::read_to_string(clean).unwrap();
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("{:type :"), "{first}");
    for field in [":f :", ":value ", ":time ", ":process ", ":index 0"] {
        assert!(first.contains(field), "{field} in {first}");
    }
    assert!(
        text.contains(":type :ok, :f :acquire"),
        "a lease was granted"
    );
    let checked = exits(&check_jepsen(&[clean]), 0);
    assert!(checked.contains(": 0 violations"), "{checked}");

    // The same history through --trace, then export: byte-identical.
    let trace = d.join("t.jsonl");
    let trace = trace.to_str().unwrap();
    exits(
        &leasehold(&["replay", scenario, "--seed", "1", "--trace", trace]),
        0,
    );
    let o = leasehold(&["export", trace]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), text);

    // claim-without-cas grants one lease to two workers: the clients see it.
    let buggy = d.join("buggy.edn");
    let buggy = buggy.to_str().unwrap();
    let catalogue = "scenarios/catalogue/claim_without_cas_grants_one_lease_twice.toml";
    exits(
        &leasehold(&["export", catalogue, "--seed", "0", "-o", buggy]),
        0,
    );
    let found = exits(&check_jepsen(&[buggy]), 1);
    assert!(found.contains("I1 single grant violated: job "), "{found}");
    assert!(found.contains("granted twice"), "{found}");
}

#[test]
fn a_history_with_no_lease_operation_is_refused_not_passed() {
    let f = scratch("jepsen-register").join("register.edn");
    let body = "{:type :invoke, :f :write, :value 1, :process 0, :index 0}\n\
                {:type :ok, :f :write, :value 1, :process 0, :index 1}\n\
                {:type :invoke, :f :cas, :value [1 2], :process 1, :index 2}\n\
                {:type :fail, :f :cas, :value [1 2], :process 1, :index 3}\n";
    check_written(&f, body, 2, &["none of its 4 operations is a client :acquire, :renew, :release or :sweep call (2 other client calls): the lease model and the mutex cannot judge this history"]);
}

#[test]
fn histories_whose_every_call_failed_are_refused_not_passed() {
    let f = scratch("jepsen-failed").join("failed.edn");
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
        check_written(&f, body, 2, &[needle]);
    }
}

#[test]
fn a_lock_history_read_as_leases_gets_a_few_errors_a_count_and_a_hint() {
    let f = scratch("jepsen-mutex").join("mutex.edn");
    let f_name = f.to_str().unwrap();
    let mut body = String::new();
    // Eight acquires without values: one error each as leases.
    for p in 0..8 {
        body.push_str(&format!("{{:type :invoke, :f :acquire, :process {p}}}\n"));
        body.push_str(&format!("{{:type :ok, :f :acquire, :process {p}}}\n"));
    }
    std::fs::write(&f, body).unwrap();
    let text = exits(&check_jepsen(&["--model", "lease", f_name]), 2);
    assert_eq!(text.matches("the value must be a map").count(), 5, "{text}");
    assert_says(
        &text,
        &["... and 3 more errors (8 in all)", "--model mutex"],
    );
    // By its shape (no values) it is a lock history: eight holders at
    // once is not a mutex.
    let text = exits(&check_jepsen(&[f_name]), 1);
    assert!(
        text.contains("linearizability (mutex model) violated: "),
        "{text}"
    );
}

/// A history of Knossos's test data, under `sim/check/tests/data/knossos/`.
fn knossos(name: &str) -> String {
    repo()
        .join("sim/check/tests/data/knossos")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn knossos_etcd_lock_history_is_invalid_with_a_small_window() {
    let etcd = knossos("mutex/bad/etcd.edn");
    let text = exits(&check_jepsen(&[&etcd]), 1);
    // The mutex verdict prints as every finding does, its place after.
    assert!(
        text.contains(
            "linearizability (mutex model) violated: no order of the calls reaches the completion of :"
        ),
        "{text}"
    );
    assert!(text.contains(&format!("  at:     {etcd}:")), "{text}");
    assert_says(
        &text,
        &[
            "the smallest window that cannot be linearized, whatever the lock's state before it: :index ",
            "checked 1135 Jepsen operations against a mutex",
            ": 1 violation",
        ],
    );
    // The same with --model mutex, and as JSON.
    let o2 = check_jepsen(&["--model", "mutex", &etcd]);
    assert_eq!(all(&o2), text);
    // A bound too tight for it: no verdict (exit 3), never a pass.
    let text = exits(&check_jepsen(&["--max-configs", "20", &etcd]), 3);
    assert!(text.contains("unknown, no verdict"), "{text}");
}

#[test]
fn knossos_cas_register_history_is_refused_not_passed() {
    let register = knossos("cas-register/bad/immediate-failure.edn");
    for model in ["auto", "mutex", "lease"] {
        let o = check_jepsen(&["--model", model, &register]);
        let text = all(&o);
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
    let f = scratch("jepsen-json").join("lock.json");
    check_written(
        &f,
        LOCK,
        0,
        &[
            "checked 8 Jepsen operations against a mutex",
            "2 acquire and 1 release calls (0 :fail left out, 1 unknown)",
            ": linearizable",
        ],
    );
    // Had the release failed, p5's acquire finds the lock held.
    let failed = LOCK.replace(
        r#""type": "info", "f": "release""#,
        r#""type": "fail", "f": "release""#,
    );
    let at = format!("  at:     {}:7:2", f.display());
    check_written(
        &f,
        &failed,
        1,
        &[
            "linearizability (mutex model) violated: no order of the calls reaches the completion of :acquire by process 5 (:index 5 -> 6 :ok) (the lock was already held in every order that gets there)",
            &at,
        ],
    );
    // Bad JSON: located.
    check_written(
        &f,
        "[{\"type\": \"invoke\", \"f\": \"acquire\"}]",
        2,
        &["lock.json:1:2: the operation has no \"process\""],
    );
}

#[test]
fn a_grant_while_the_store_clock_says_the_old_lease_is_valid_is_a_violation() {
    // A's lease (100 ms from store time 1000) is swept early; B is granted
    // at store time 1050. Both calls completed, nothing overlaps.
    let f = scratch("jepsen-expiry").join("early.edn");
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
    let text = check_written(&f, &body(1150), 1, &["linearizability (lease model) violated: no order of its calls reaches the completion of :acquire by process 1 (:index 4 -> 5 :ok) (it was granted at 1050 ms on the store's clock, while the lease of token 1 was valid until 1100 ms)"]);
    let at = format!("  job:    7\n  at:     {}:6:1", f.display());
    assert_says(&text, &[&at, "expiry on the store's clock judged"]);
    check_written(&f, &body(1200), 0, &[]);
}
