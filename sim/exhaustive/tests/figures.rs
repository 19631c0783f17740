//! Runs a scope given in the environment, by hand (both ignored by
//! default): `LEASEHOLD_SCOPE=w,j,crashes,lost,conflicts,unavailable,cancels`.
//! `figures` searches it whole and prints its figures; `probe` searches it
//! depth-first up to a state budget (`LEASEHOLD_PROBE_STATES`, default
//! 2,000,000) and fails with the path of any violation it meets.

mod scope_spec;

use leasehold_exhaustive::run::{check_watched, probe as probe_world};
use leasehold_exhaustive::{trace, Scope, Verdict, World};
use std::time::Duration;

/// The scope named by `LEASEHOLD_SCOPE` (one worker, one job, no faults
/// when unset), and how it was spelled.
fn scope_from_env() -> (Scope, String) {
    let spec = std::env::var("LEASEHOLD_SCOPE").unwrap_or_else(|_| "1,1,0,0,0,0,0".into());
    let scope = scope_spec::builder_of(&spec).build().expect("scope");
    (scope, spec)
}

/// Prints progress every 30 s, so a run stopped at a cap still says how
/// far it got.
fn every_30s() -> impl FnMut(usize, Duration) {
    let mut shown = Duration::ZERO;
    move |states, elapsed| {
        if elapsed >= shown + Duration::from_secs(30) {
            shown = elapsed;
            println!("  {states} states after {elapsed:.0?}");
        }
    }
}

#[test]
#[ignore = "a measurement, run by hand"]
fn figures() {
    let (scope, spec) = scope_from_env();
    let r = check_watched(World::new(scope), 2, every_30s());
    println!(
        "scope {spec}: {} states ({} generated), depth {}, {:.1?}, {:.0} states/s, violated {:?}",
        r.unique_states,
        r.state_count,
        r.max_depth,
        r.elapsed,
        r.states_per_sec(),
        r.violated
    );
}

/// The correct core meets no violation in the probe's budget (not a proof
/// that none exists: see `run::probe`).
#[test]
#[ignore = "a probe of a scope too large to search whole, run by hand"]
fn probe() {
    let (scope, spec) = scope_from_env();
    let budget: usize = std::env::var("LEASEHOLD_PROBE_STATES")
        .map(|v| v.parse().expect("a state count"))
        .unwrap_or(2_000_000);
    let horizon = scope.horizon;
    let r = probe_world(World::new(scope), budget, every_30s());
    println!(
        "probe {spec}, horizon {horizon}: {} states ({} generated), depth {}, {:.1?}, violated {:?}",
        r.unique_states, r.state_count, r.max_depth, r.elapsed, r.violated
    );
    if let Verdict::Violated {
        inv,
        why,
        path,
        states,
    } = &r.verdict
    {
        panic!(
            "{inv} after {} steps: {why}\n{}",
            path.len(),
            trace::render(path, states)
        );
    }
}
