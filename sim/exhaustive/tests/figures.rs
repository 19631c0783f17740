//! Prints the figures of a scope given in the environment (for measuring;
//! ignored by default): `LEASEHOLD_SCOPE=w,j,crashes,lost,conflicts,unavailable,cancels`.

use leasehold_exhaustive::run::check_watched;
use leasehold_exhaustive::{Scope, World};
use std::time::Duration;

#[test]
#[ignore = "a measurement, run by hand"]
fn figures() {
    let spec = std::env::var("LEASEHOLD_SCOPE").unwrap_or_else(|_| "1,1,0,0,0,0,0".into());
    let n: Vec<u8> = spec
        .split(',')
        .map(|x| x.parse().expect("a number"))
        .collect();
    let scope = Scope::builder()
        .workers(n[0])
        .jobs(n[1])
        .crashes(n[2])
        .lost(n[3])
        .conflicts(n[4])
        .unavailable(n[5])
        .cancels(n[6])
        .build()
        .expect("scope");
    // Progress every 30 s, so a run stopped at a cap still says how far
    // it got.
    let mut shown = Duration::ZERO;
    let r = check_watched(World::new(scope), 2, |states, elapsed| {
        if elapsed >= shown + Duration::from_secs(30) {
            shown = elapsed;
            println!("  {states} states after {elapsed:.0?}");
        }
    });
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
