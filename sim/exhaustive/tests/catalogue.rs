//! The catalogue's worker variants through S1's two pinned halves (a
//! measurement, run by hand with `--features buggy-variants -- --ignored
//! --nocapture`): which are found, with which invariant and the shortest
//! counterexample's length. `LEASEHOLD_VARIANTS=name,name` runs only
//! those.

#![cfg(feature = "buggy-variants")]

use leasehold_exhaustive::model::WORKER_VARIANTS;
use leasehold_exhaustive::{check, Scope, Verdict, World};

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
