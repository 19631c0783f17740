//! Ground truth from Knossos (vendored under `tests/data/knossos/`, see
//! its README for origin and licence): the verdicts must equal Knossos's.
//! - `mutex/bad/etcd.edn`, a Jepsen etcd lock test, is not linearizable
//!   as a mutex;
//! - `cas-register/bad/immediate-failure.edn` has no lock call: the mutex
//!   model has nothing to judge (no verdict, never a pass).

mod common;

use common::{brute, BruteCall};
use leasehold_check::jepsen::linearize::Limits;
use leasehold_check::jepsen::mutex::{check, MutexVerdict};
use leasehold_check::jepsen::{read_history, Op, OpType, Pos};
use std::path::{Path, PathBuf};

/// The Knossos test history `name` (under `tests/data/knossos/`): its
/// path and its operations.
fn history(name: &str) -> (PathBuf, Vec<(Pos, Op)>) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/knossos")
        .join(name);
    let text = std::fs::read_to_string(&file).unwrap();
    let ops = read_history(&text, &file).unwrap();
    (file, ops)
}

#[test]
fn etcd_lock_history_is_invalid_as_knossos_says() {
    let (file, ops) = history("mutex/bad/etcd.edn");
    assert_eq!(ops.len(), 1135);
    let r = check(&ops, &file, &Limits::default()).unwrap();
    assert_eq!(r.counts.ops, 1135);
    let Some(MutexVerdict::Invalid(v)) = &r.verdict else {
        panic!("Knossos finds etcd.edn invalid; we said {:?}", r.verdict);
    };
    // The window is small and in the history's own terms.
    assert!(v.from_any_state, "{v:?}");
    assert!(v.window.len() <= 20, "{:?}", v.window);
    assert!(v.span.0 <= v.span.1, "{v:?}");
    assert!(
        v.window
            .iter()
            .all(|w| w.contains(" by process ") && w.contains(":index ")),
        "{:?}",
        v.window
    );
    // Its counts match the file: every call is an acquire or release.
    let text = std::fs::read_to_string(&file).unwrap();
    let invokes = text.matches(":type :invoke").count();
    assert_eq!(r.counts.acquire + r.counts.release, invokes);
    assert_eq!(
        r.counts.failed,
        text.matches(":type :fail").count(),
        "every :fail left out"
    );
}

#[test]
fn the_etcd_verdict_holds_for_the_window_alone() {
    // Cut the history down to the reported window's records: still
    // invalid (the window is a proof on its own) from a free lock.
    let (file, ops) = history("mutex/bad/etcd.edn");
    let r = check(&ops, &file, &Limits::default()).unwrap();
    let Some(MutexVerdict::Invalid(v)) = r.verdict else {
        panic!("{:?}", r.verdict);
    };
    // Keep the window calls' records: each invocation and the next record
    // of its process (its completion), up to the stuck call's completion
    // (later completions dropped: they become unknown).
    let mut wanted: Vec<i64> = Vec::new();
    for (k, (_, inv)) in ops.iter().enumerate() {
        if v.window_indices.contains(&inv.index) || v.earlier_unknown.contains(&inv.index) {
            wanted.push(inv.index);
            if let Some((_, end)) = ops[k + 1..].iter().find(|(_, o)| o.process == inv.process) {
                wanted.push(end.index);
            }
        }
    }
    let keep: Vec<_> = ops
        .iter()
        .filter(|(_, op)| op.index <= v.span.1 && wanted.contains(&op.index))
        .cloned()
        .collect();
    assert!(!keep.is_empty());
    let cut = check(&keep, &file, &Limits::default()).unwrap();
    // Brute force on the same calls, from either state of the lock: no
    // order works.
    let mut brute_calls = Vec::new();
    for (k, (_, inv)) in keep.iter().enumerate() {
        if inv.kind != OpType::Invoke {
            continue;
        }
        let end = keep[k + 1..].iter().find(|(_, o)| o.process == inv.process);
        match end.map(|(_, e)| e.kind) {
            Some(OpType::Fail) => continue,
            Some(OpType::Ok) => brute_calls.push(BruteCall {
                acquire: inv.f == "acquire",
                invoked: k,
                returned: keep[k + 1..]
                    .iter()
                    .position(|(_, o)| o.process == inv.process)
                    .map(|p| k + 1 + p),
            }),
            _ => brute_calls.push(BruteCall {
                acquire: inv.f == "acquire",
                invoked: k,
                returned: None,
            }),
        }
    }
    for held in [false, true] {
        assert_eq!(
            brute(&brute_calls, held, 50_000_000),
            Some(false),
            "brute force from held={held} on {brute_calls:?}"
        );
    }
    assert!(
        matches!(cut.verdict, Some(MutexVerdict::Invalid(_))),
        "window {:?} alone: {:?}",
        v.window,
        cut.verdict
    );
}

#[test]
fn a_cas_register_history_is_not_judged_as_a_mutex() {
    let (file, ops) = history("cas-register/bad/immediate-failure.edn");
    assert_eq!(ops.len(), 4);
    let r = check(&ops, &file, &Limits::default()).unwrap();
    assert_eq!(r.verdict, None);
    assert_eq!(r.counts.skipped, 2, "the read and the write");
}

#[test]
fn a_tight_bound_on_etcd_is_unknown_not_a_pass() {
    let (file, ops) = history("mutex/bad/etcd.edn");
    let limits = Limits {
        max_configs: 50,
        ..Limits::default()
    };
    let r = check(&ops, &file, &limits).unwrap();
    assert!(
        matches!(r.verdict, Some(MutexVerdict::Unknown(_))),
        "{:?}",
        r.verdict
    );
}
