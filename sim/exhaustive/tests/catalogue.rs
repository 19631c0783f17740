//! The catalogue's worker variants through S1's two pinned halves (a
//! measurement, run by hand with `--features buggy-variants -- --ignored
//! --nocapture`): which are found, with which invariant and the shortest
//! counterexample's length. `LEASEHOLD_VARIANTS=name,name` runs only
//! those.

#![cfg(feature = "buggy-variants")]

mod scope_spec;

use leasehold_exhaustive::model::WORKER_VARIANTS;
use leasehold_exhaustive::{check, counterexample, trace, Scope, Verdict, World};

#[test]
#[ignore = "a measurement, run by hand"]
fn worker_variants_through_s1() {
    for (name, scope) in [("S1", Scope::s1()), ("S1 crash", Scope::s1_crash())] {
        // `LEASEHOLD_VARIANTS=a,b` measures only those.
        let only = std::env::var("LEASEHOLD_VARIANTS").unwrap_or_default();
        for v in WORKER_VARIANTS {
            if !only.is_empty() && !only.split(',').any(|n| n == v.to_string()) {
                continue;
            }
            let r = check(World::with_variant(scope.clone(), v), 2);
            match &r.verdict {
                Verdict::Holds | Verdict::NoneWithin { .. } => println!(
                    "{name}: {v}: not found ({} states, {:.1?})",
                    r.unique_states, r.elapsed
                ),
                Verdict::Violated { inv, path, .. } => println!(
                    "{name}: {v}: {inv}, shortest path {} steps ({} states, {:.1?}; all: {:?})",
                    path.len(),
                    r.unique_states,
                    r.elapsed,
                    r.violated
                ),
            }
        }
    }
}

/// One worker variant at one scope, by hand: `LEASEHOLD_VARIANT=name`,
/// `LEASEHOLD_SCOPE=w,j,crashes,lost,conflicts,unavailable,cancels` and
/// `LEASEHOLD_CX_OUT=FILE` (optionally `LEASEHOLD_MAX_JOB_TIME=ms`): the shortest counterexample (one thread) is
/// printed and written as the scenario `leasehold exhaust
/// --write-counterexample` writes, without building the CLI.
#[test]
#[ignore = "a measurement, run by hand"]
fn one_variant_counterexample() {
    let name = std::env::var("LEASEHOLD_VARIANT").expect("LEASEHOLD_VARIANT");
    let v = WORKER_VARIANTS
        .into_iter()
        .find(|v| v.to_string() == name)
        .expect("a worker variant");
    let spec = std::env::var("LEASEHOLD_SCOPE").expect("LEASEHOLD_SCOPE");
    let mut b = scope_spec::builder_of(&spec);
    // `LEASEHOLD_MAX_JOB_TIME=ms`: handlers longer than the default 700 ms
    // (a variant that only matters while a handler outlives its lease).
    if let Ok(ms) = std::env::var("LEASEHOLD_MAX_JOB_TIME") {
        b = b.max_job_time(leasehold_core::Millis(ms.parse().expect("ms")));
    }
    let scope = b.build().expect("scope");
    let r = check(World::with_variant(scope.clone(), v), 1);
    println!(
        "{name} at {spec}: {} states, {:.1?}",
        r.unique_states, r.elapsed
    );
    let Verdict::Violated {
        inv,
        why,
        path,
        states,
    } = &r.verdict
    else {
        println!("not found");
        return;
    };
    println!("{inv}: {why}\n{}", trace::render(path, states));
    let sc = counterexample::scenario(&scope, Some(&name), *inv, why, path, states);
    let out = std::env::var("LEASEHOLD_CX_OUT").expect("LEASEHOLD_CX_OUT");
    std::fs::write(&out, sc.toml).expect("written");
    println!("written to {out}; unexpressed: {:?}", sc.unexpressed);
}
