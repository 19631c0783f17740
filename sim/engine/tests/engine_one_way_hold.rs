//! A one-way hold (`hold A -> B FROM..TO`) delays only the messages from A
//! to B: a worker's first claim held on its way to the store is served
//! when the hold ends, while one whose answer is held is served at once and
//! answered when the hold ends. The two-way `hold A B` still holds both.

mod engine_support;

use engine_support::run;
use leasehold_model::config::SimConfig;
use leasehold_model::history::{History, Op, Record};
use leasehold_model::scenario::load_str;
use std::path::Path;

/// One worker, one job, 1 ms hops, and `event` as the only fault.
fn with(event: &str) -> SimConfig {
    let text = format!(
        r#"
description = "one hold"
seeds = 1
duration = "3s"
tick = "1ms"
events = ["{event}"]

[topology]
workers = 1
sweepers = 1

[workload]
jobs = 1
enqueue_over = "0s"
run_time = ["50ms", "50ms"]

[network]
latency = ["1ms", "1ms"]

[faults]
window = "1s"
"#
    );
    load_str(&text, Path::new("hold.toml"), "hold").unwrap_or_else(|e| panic!("{e}"))
}

/// When the store served the first claim, and when its answer reached the
/// worker (true ms).
fn first_claim(h: &History) -> (u64, u64) {
    let id = h
        .records
        .iter()
        .find_map(|r| match r {
            Record::Request {
                id,
                op: Op::Claim { .. },
                ..
            } => Some(*id),
            _ => None,
        })
        .expect("the worker claims");
    let served = h.records.iter().find_map(|r| match r {
        Record::Served { t, id: i, .. } if *i == id => Some(*t),
        _ => None,
    });
    let answered = h.records.iter().find_map(|r| match r {
        Record::Answer { t, id: i, .. } if *i == id => Some(*t),
        _ => None,
    });
    (
        served.expect("the first claim is served"),
        answered.expect("the first claim is answered"),
    )
}

#[test]
fn a_one_way_hold_delays_its_direction_only() {
    // Held on its way to the store: served when the hold ends, and the
    // answer comes straight back.
    let out = run(&with("hold worker-1 -> store 0ms..100ms"), 0);
    let (served, answered) = first_claim(&out.history);
    assert!((100..=101).contains(&served), "served at {served}ms");
    assert!(answered <= served + 1, "answered at {answered}ms");

    // Held on its way back: served at once, answered when the hold ends.
    let out = run(&with("hold store -> worker-1 0ms..100ms"), 0);
    let (served, answered) = first_claim(&out.history);
    assert!(served <= 2, "served at {served}ms");
    assert!((100..=101).contains(&answered), "answered at {answered}ms");
}

#[test]
fn a_two_way_hold_still_holds_both_directions() {
    // Written either way round, `hold A B` holds the request too.
    let out = run(&with("hold worker-1 store 0ms..100ms"), 0);
    let (served, _) = first_claim(&out.history);
    assert!((100..=101).contains(&served), "served at {served}ms");
    let out = run(&with("hold store worker-1 0ms..100ms"), 0);
    let (served, _) = first_claim(&out.history);
    assert!(
        (100..=101).contains(&served),
        "the two-way hold named store first also holds the request: served at {served}ms"
    );
}
