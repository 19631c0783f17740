//! The mutex search cross-checked by brute force: random small lock
//! histories (at most 7 calls, 14 records, with `:fail` and `:info`
//! outcomes and calls never completed), written as EDN and checked by
//! `jepsen::mutex::check`, against every order of every subset of calls
//! enumerated outright (all `:ok` calls, any of the unknown ones). The
//! verdicts must agree, and a window reported as failing from either
//! state must fail from both by brute force too.

mod common;

use common::BruteCall;
use leasehold_check::jepsen::edn::read_history;
use leasehold_check::jepsen::linearize::Limits;
use leasehold_check::jepsen::mutex::{check, MutexVerdict};
use proptest::prelude::*;
use std::path::Path;

/// One call of a generated history.
#[derive(Clone, Debug)]
struct G {
    acquire: bool,
    /// Record number of the invocation and of the `:ok` return.
    invoked: usize,
    returned: Option<usize>,
    /// `:fail`: left out.
    failed: bool,
}

/// Builds a history from choices: each choice picks a process; an idle
/// process invokes (acquire or release by the choice's bit), a busy one
/// completes `:ok`, `:fail` or `:info`. Processes that crash are retired.
fn generate(choices: &[(u8, u8)]) -> (String, Vec<G>) {
    let mut text = String::new();
    let mut calls: Vec<G> = Vec::new();
    // Per live process slot: its process number and open call.
    let mut slots: Vec<(i64, Option<usize>)> = vec![(0, None), (1, None), (2, None)];
    let mut next_process = 3;
    let mut records = 0;
    for &(pick, what) in choices {
        if records >= 14 || calls.len() >= 7 && slots.iter().all(|s| s.1.is_none()) {
            break;
        }
        let slot = usize::from(pick) % slots.len();
        let (p, open) = slots[slot];
        let line = |kind: &str, f: &str| {
            format!("{{:type :{kind}, :f :{f}, :process {p}, :index {records}}}\n")
        };
        match open {
            None if calls.len() < 7 => {
                let acquire = what % 2 == 0;
                text.push_str(&line("invoke", if acquire { "acquire" } else { "release" }));
                calls.push(G {
                    acquire,
                    invoked: records,
                    returned: None,
                    failed: false,
                });
                slots[slot].1 = Some(calls.len() - 1);
            }
            None => continue,
            Some(k) => {
                let f = if calls[k].acquire {
                    "acquire"
                } else {
                    "release"
                };
                match what % 5 {
                    0..=2 => {
                        text.push_str(&line("ok", f));
                        calls[k].returned = Some(records);
                    }
                    3 => {
                        text.push_str(&line("fail", f));
                        calls[k].failed = true;
                    }
                    _ => {
                        text.push_str(&line("info", f));
                        slots[slot] = (next_process, None);
                        next_process += 1;
                        records += 1;
                        continue;
                    }
                }
                slots[slot].1 = None;
            }
        }
        records += 1;
    }
    (text, calls)
}

/// Every order enumerated outright (`common::brute`).
fn brute(calls: &[&G], held: bool) -> bool {
    let calls: Vec<BruteCall> = calls
        .iter()
        .map(|c| BruteCall {
            acquire: c.acquire,
            invoked: c.invoked,
            returned: c.returned,
        })
        .collect();
    common::brute(&calls, held, u64::MAX).expect("no budget limit")
}

fn judged(calls: &[G]) -> Vec<&G> {
    calls.iter().filter(|c| !c.failed).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4_000, ..ProptestConfig::default() })]

    #[test]
    fn the_search_agrees_with_brute_force(choices in proptest::collection::vec((any::<u8>(), any::<u8>()), 0..30)) {
        let (text, calls) = generate(&choices);
        let ops = read_history(&text, Path::new("g.edn")).expect("generated EDN reads");
        let report = check(&ops, Path::new("g.edn"), &Limits::default()).expect("well formed");
        let live = judged(&calls);
        let expected = brute(&live, false);
        match report.verdict {
            None => prop_assert!(live.is_empty(), "{text}"),
            Some(MutexVerdict::Valid) => prop_assert!(expected, "search passed, brute force did not:\n{text}"),
            Some(MutexVerdict::Invalid(v)) => {
                prop_assert!(!expected, "search failed, brute force passed:\n{text}");
                // The window, by :index, fails from both states.
                let (lo, hi) = v.span;
                let window: Vec<&G> = live
                    .iter()
                    .copied()
                    .filter(|c| v.window_indices.contains(&(c.invoked as i64)) || v.earlier_unknown.contains(&(c.invoked as i64)))
                    .collect();
                prop_assert_eq!(window.len(), v.window.len() + v.earlier_unknown.len(), "{:?}\n{}", v.window, text);
                prop_assert!(v.window_indices.iter().all(|&i| i >= lo && i <= hi), "{v:?}");
                if v.from_any_state {
                    // Returns after the stuck call's count as unknown.
                    let clipped: Vec<G> = window
                        .iter()
                        .map(|c| G { returned: c.returned.filter(|&r| r as i64 <= hi), ..(*c).clone() })
                        .collect();
                    let clipped: Vec<&G> = clipped.iter().collect();
                    prop_assert!(!brute(&clipped, false) && !brute(&clipped, true), "window {v:?} passes:\n{text}");
                }
            }
            Some(MutexVerdict::Unknown(why)) => prop_assert!(false, "unknown on a tiny history: {why}"),
        }
    }
}

#[test]
fn the_generator_makes_both_verdicts_and_unknown_outcomes() {
    // Guards the property above against a generator that only ever makes
    // one kind of history.
    let mut rng: u64 = 7;
    let (mut valid, mut invalid, mut with_info) = (0, 0, 0);
    for _ in 0..2_000 {
        let choices: Vec<(u8, u8)> = (0..30)
            .map(|_| {
                rng = rng
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((rng >> 33) as u8, (rng >> 41) as u8)
            })
            .collect();
        let (text, calls) = generate(&choices);
        let live = judged(&calls);
        if live.iter().any(|c| c.returned.is_none()) {
            with_info += 1;
        }
        if !live.is_empty() {
            if brute(&live, false) {
                valid += 1;
            } else {
                invalid += 1;
            }
        }
        assert!(text.lines().count() <= 14);
    }
    assert!(
        valid > 200 && invalid > 200 && with_info > 200,
        "{valid} {invalid} {with_info}"
    );
}
