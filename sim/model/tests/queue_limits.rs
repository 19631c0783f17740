//! Queues with limits of their own: `protocol.queue_limits` (each worker's
//! slots) and `protocol.queue_parallelism` (the store's), each in place of
//! the single `queue_limit` / `parallelism` for its queue only; a limit
//! for a queue the scenario lacks, or of zero, is refused at its key.

use leasehold_model::config::SimConfig;
use leasehold_model::protocol::{policy_of, worker_config};
use leasehold_model::scenario::{load_str, LoadError};
use std::path::Path;

fn load(text: &str) -> Result<SimConfig, Vec<LoadError>> {
    load_str(text, Path::new("q.toml"), "q").map_err(|e| e.0)
}

/// The one error of `text`, shown as `q.toml:LINE:COL: path: message`.
fn one_error(text: &str) -> String {
    let errs = load(text).expect_err("a bad file loaded");
    assert_eq!(errs.len(), 1, "{errs:?}");
    errs[0].to_string()
}

const QUEUES: &str = "[workload]\nqueues = [\"a\", \"b\"]\n";

#[test]
fn a_limit_for_a_queue_the_scenario_lacks_is_refused_at_its_key() {
    let shown = one_error(&format!(
        "{QUEUES}[protocol]\nconcurrency = 3\nqueue_limits = {{ a = 1, c = 2 }}\n"
    ));
    assert!(
        shown.starts_with("q.toml:5:") && shown.contains("protocol.queue_limits.c: "),
        "{shown}"
    );
    assert!(shown.contains("not one of workload.queues"), "{shown}");
    let shown = one_error(&format!(
        "{QUEUES}[protocol]\nqueue_parallelism = {{ c = 2 }}\n"
    ));
    assert!(
        shown.starts_with("q.toml:4:23: protocol.queue_parallelism.c: "),
        "{shown}"
    );
    assert!(shown.contains("not one of workload.queues"), "{shown}");
}

#[test]
fn a_zero_limit_is_refused_at_its_key() {
    let shown = one_error(&format!("{QUEUES}[protocol]\nqueue_limits = {{ b = 0 }}\n"));
    assert!(
        shown.starts_with("q.toml:4:18: protocol.queue_limits.b: "),
        "{shown}"
    );
    assert!(
        shown.contains("between 1 and protocol.concurrency"),
        "{shown}"
    );
    let shown = one_error(&format!(
        "{QUEUES}[protocol]\nqueue_parallelism = {{ a = 0 }}\n"
    ));
    assert!(
        shown.starts_with("q.toml:4:23: protocol.queue_parallelism.a: "),
        "{shown}"
    );
    assert!(shown.contains("at least 1"), "{shown}");
}

#[test]
fn a_worker_limit_above_the_concurrency_is_refused() {
    let shown = one_error(&format!(
        "{QUEUES}[protocol]\nconcurrency = 2\n[protocol.queue_limits]\na = 3\n"
    ));
    assert!(
        shown.starts_with("q.toml:6:1: protocol.queue_limits.a: "),
        "{shown}"
    );
}

#[test]
fn a_store_limit_beyond_the_bound_is_refused_at_its_key() {
    let shown = one_error(&format!(
        "{QUEUES}[protocol]\nqueue_parallelism = {{ a = 4294967295 }}\n"
    ));
    assert!(
        shown.starts_with("q.toml:4:23: protocol.queue_parallelism.a: "),
        "{shown}"
    );
}

/// The limits worker `k` is built with, per queue, in its order.
fn worker_limits(cfg: &SimConfig, k: usize) -> Vec<(String, u32)> {
    let queues = leasehold_model::protocol::queues_of(cfg, k);
    let built = worker_config(cfg, "w", &queues, None)
        .build()
        .expect("a valid worker");
    built
        .queues
        .iter()
        .map(|q| (q.name.clone(), q.limit))
        .collect()
}

#[test]
fn each_queue_gets_its_own_limit_on_the_worker_and_the_store() {
    let cfg = load(&format!(
        "{QUEUES}[topology]\nqueues_per_worker = 2\n[protocol]\nconcurrency = 4\nqueue_limit = 2\n\
         parallelism = 5\nqueue_limits = {{ b = 1 }}\nqueue_parallelism = {{ a = 3 }}\n"
    ))
    .expect("loads");
    // `a` keeps the common limit, `b` has its own, whichever comes first.
    assert_eq!(worker_limits(&cfg, 0), [("a".into(), 2), ("b".into(), 1)]);
    assert_eq!(worker_limits(&cfg, 1), [("b".into(), 1), ("a".into(), 2)]);
    let policy = policy_of(&cfg, 0).expect("a valid policy");
    assert_eq!(policy.parallelism_of("a"), Some(3));
    assert_eq!(policy.parallelism_of("b"), Some(5));
}

#[test]
fn without_per_queue_entries_the_single_limits_mean_what_they_meant() {
    let cfg = load(&format!(
        "{QUEUES}[topology]\nqueues_per_worker = 2\n[protocol]\nconcurrency = 4\nqueue_limit = 2\n"
    ))
    .expect("loads");
    assert_eq!(worker_limits(&cfg, 0), [("a".into(), 2), ("b".into(), 2)]);
    let policy = policy_of(&cfg, 0).expect("a valid policy");
    assert_eq!(policy.parallelism_of("a"), None);
    // Without `queue_limit` every queue gets the concurrency, as before.
    let cfg = load(&format!("{QUEUES}[topology]\nqueues_per_worker = 2\n")).expect("loads");
    assert_eq!(worker_limits(&cfg, 0), [("a".into(), 2), ("b".into(), 2)]);
    // Only the named queue is limited on the store.
    let cfg = load(&format!(
        "{QUEUES}[protocol]\nqueue_parallelism = {{ b = 1 }}\n"
    ))
    .expect("loads");
    let policy = policy_of(&cfg, 0).expect("a valid policy");
    assert_eq!(policy.parallelism_of("a"), None);
    assert_eq!(policy.parallelism_of("b"), Some(1));
}
