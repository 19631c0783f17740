//! leasehold's worker runtime inside madsim: the correct core on many
//! seeds of every madsim fault, madsim's determinism check, and catalogued
//! bugs caught by the simulator's checker (`leasehold-check`).
//!
//! Seeds the madsim way: `MADSIM_TEST_SEED` is the first seed (madsim's
//! default: the current time), `MADSIM_TEST_NUM` how many (200 here when
//! unset), `MADSIM_TEST_CHECK_DETERMINISM=1` runs a seed twice and fails
//! on any difference. A failing seed prints `MADSIM_TEST_SEED=…`.
#![cfg(madsim)]

use leasehold_madsim_tests::run::{
    builder, first_detection, run_seed, simulate, simulate_and_check, Detection,
};
use leasehold_madsim_tests::scenario::Scenario;
use leasehold_model::config::InvariantId;
use std::time::Instant;

/// Seeds of the correct core per test run when `MADSIM_TEST_NUM` is unset.
const DEFAULT_SEEDS: u64 = 200;
/// Most seeds a bug scenario may take to show its violation.
const BUG_SEED_BUDGET: u64 = 100;

#[test]
fn correct_core_holds_every_invariant_under_madsim_faults() {
    let b = builder(DEFAULT_SEEDS);
    let (first, n, twice) = (b.seed, b.count, b.check);
    let started = Instant::now();
    b.run(|| async {
        simulate_and_check(Scenario::swarm()).await;
    });
    let secs = started.elapsed().as_secs_f64();
    if twice {
        eprintln!(
            "madsim swarm: seed {first} passed twice, identically (MADSIM_TEST_CHECK_DETERMINISM)"
        );
    } else {
        eprintln!(
            "madsim swarm: seeds {first}..{} passed, {:.1} seeds/s",
            first + n,
            n as f64 / secs.max(1e-9)
        );
    }
}

/// Seeds that once failed the correct core, kept so their cause stays
/// fixed whatever seed range a run draws.
const REGRESSION_SEEDS: [(u64, &str); 2] = [
    (
        1795474917147257895,
        "I5: a release sent after another of its batch whose request a one-way \
         partition lost never left the worker, so its lease was reclaimed as a \
         crash (the default `Store::batch` sent one request after another)",
    ),
    (
        1796087576318868192,
        "I5: a renew sent at 16383 ms was followed by the next at 17884 ms, 1 ms \
         past its due time: the lease task slept `wake - now()` from a clock \
         read floored to whole ms, so the wait ended up to 1 ms past `wake` \
         (the lease task now arms `Runtime::sleep_until(wake)`)",
    ),
];

#[test]
fn seeds_that_once_failed_hold_every_invariant() {
    for (seed, what) in REGRESSION_SEEDS {
        let out = run_seed(Scenario::swarm(), seed);
        assert!(
            out.violations.is_empty(),
            "regression seed {seed} ({what}) fails again:\n{}",
            out.report()
        );
    }
}

#[test]
fn a_seed_gives_the_same_history_twice() {
    let seed = std::env::var("MADSIM_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let a = run_seed(Scenario::swarm(), seed);
    let b = run_seed(Scenario::swarm(), seed);
    assert_eq!(
        a.history.hash(),
        b.history.hash(),
        "seed {seed}: histories differ"
    );
    assert!(
        a.history.records.len() > 100,
        "seed {seed}: a history this short recorded nothing"
    );
}

#[test]
fn madsims_own_determinism_check_passes() {
    for seed in [1, 2, 3] {
        madsim::runtime::Runtime::check_determinism(seed, madsim::Config::default(), || async {
            simulate(Scenario::swarm()).await;
        });
    }
}

fn first_seed() -> u64 {
    std::env::var("MADSIM_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

fn caught(scenario: fn() -> Scenario, expect: InvariantId) -> Detection {
    let d = first_detection(scenario, expect, first_seed(), BUG_SEED_BUDGET);
    match (&d.caught_at, &d.report) {
        (Some(seed), Some(report)) => eprintln!(
            "{}: {expect} caught at seed {seed}, after {} seed(s), {:.1} seeds/s\n{report}",
            d.scenario,
            d.seeds_run,
            d.seeds_per_sec()
        ),
        _ => panic!(
            "{}: no {expect} violation in {} seeds from {} ({:.1} seeds/s)",
            d.scenario,
            d.seeds_run,
            d.first_seed,
            d.seeds_per_sec()
        ),
    }
    d
}

/// One test per catalogue bug: its scenario is caught breaking the
/// invariant named.
macro_rules! catalogue_is_caught {
    ($($test:ident: $scenario:ident breaks $invariant:ident;)*) => {
        $(
            #[test]
            fn $test() {
                caught(Scenario::$scenario, InvariantId::$invariant);
            }
        )*
    };
}

catalogue_is_caught! {
    catalogue_fixed_lock_no_heartbeat_is_caught: fixed_lock_no_heartbeat breaks I3;
    catalogue_expiry_does_not_stop_handler_is_caught: expiry_does_not_stop_handler breaks I3;
    catalogue_heartbeat_too_close_is_caught: heartbeat_too_close breaks I5;
    catalogue_heartbeat_stops_on_error_is_caught: heartbeat_stops_on_error breaks I5;
    catalogue_claim_without_cas_is_caught: claim_without_cas breaks I1;
    catalogue_restart_reuses_identity_is_caught: restart_reuses_identity breaks I6;
    catalogue_merged_answers_misrouted_is_caught: merged_answers_misrouted breaks I1;
    catalogue_waits_only_for_wake_ups_is_caught: waits_only_for_wake_ups breaks I6;
}

/// Seeds of the wake-up test: every one must pass.
const WAKE_SEEDS: u64 = 5;

/// Workers that never poll (`waits-only-for-wake-ups`) finish every job
/// when no fault takes their wake-ups: the store node's wake-up messages
/// alone drive them. Before wake-ups crossed madsim's network, these
/// workers claimed once and never again.
#[test]
fn wake_up_messages_alone_drive_workers_that_never_poll() {
    for seed in first_seed()..first_seed() + WAKE_SEEDS {
        let out = run_seed(Scenario::wake_ups_alone_drive_the_workers(), seed);
        assert!(
            out.violations.is_empty(),
            "wake-ups did not drive the workers:\n{}",
            out.report()
        );
    }
}

/// A worker node's batches leave as one message each, and the production
/// merger puts the claims of several of its workers into one: some `sent`
/// record carries claims of two workers, in the world of bug 16 (six
/// workers a node) run with the correct core, which holds every invariant.
#[test]
fn a_merged_batch_carries_claims_of_two_workers_of_a_node() {
    use leasehold_model::history::{Op, Record};
    use std::collections::{BTreeMap, BTreeSet};
    let mut world = Scenario::merged_answers_misrouted();
    world.variant = None;
    world.name = "madsim-merged-batches".into();
    let out = run_seed(world, first_seed());
    assert!(out.violations.is_empty(), "{}", out.report());
    let mut claimer = BTreeMap::new();
    let mut messages = 0;
    let mut of_two = 0;
    for r in &out.history.records {
        match r {
            Record::Request {
                id,
                op: Op::Claim { worker, .. },
                merged: true,
                ..
            } => {
                claimer.insert(*id, worker.clone());
            }
            Record::Sent { ids, .. } => {
                messages += 1;
                let workers: BTreeSet<_> = ids.iter().filter_map(|id| claimer.get(id)).collect();
                if workers.len() > 1 {
                    of_two += 1;
                }
            }
            _ => {}
        }
    }
    assert!(messages > 0, "no batch left as one message");
    assert!(
        of_two > 0,
        "none of {messages} batch messages carried claims of two workers"
    );
    eprintln!("{of_two} of {messages} batch messages carried claims of two or more workers");
}
