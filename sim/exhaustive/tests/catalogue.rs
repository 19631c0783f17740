//! The catalogue's worker variants through S1 (a measurement, run by hand
//! with `--features buggy-variants -- --ignored --nocapture`): which are
//! found, with which invariant and the shortest counterexample's length.

#![cfg(feature = "buggy-variants")]

use leasehold_exhaustive::model::WORKER_VARIANTS;
use leasehold_exhaustive::{check, Scope, Verdict, World};

#[test]
#[ignore = "a measurement, run by hand"]
fn worker_variants_through_s1() {
    for v in WORKER_VARIANTS {
        let r = check(World::with_variant(Scope::s1(), v), 2);
        match &r.verdict {
            Verdict::Holds => println!("{v}: not found ({} states)", r.unique_states),
            Verdict::Violated { inv, path, .. } => println!(
                "{v}: {inv}, shortest path {} steps ({} states, {:.1?}; all: {:?})",
                path.len(),
                r.unique_states,
                r.elapsed,
                r.violated
            ),
        }
    }
}
