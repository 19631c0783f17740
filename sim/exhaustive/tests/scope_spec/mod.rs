//! A scope spelled as the by-hand runs take it (`figures.rs`,
//! `catalogue.rs`): `LEASEHOLD_SCOPE=w,j,crashes,lost,conflicts,unavailable,cancels`.

use leasehold_exhaustive::scope::ScopeBuilder;
use leasehold_exhaustive::Scope;

/// The scope `spec` spells: seven numbers, comma-separated.
pub fn builder_of(spec: &str) -> ScopeBuilder {
    let n: Vec<u8> = spec
        .split(',')
        .map(|x| x.parse().expect("a number"))
        .collect();
    assert_eq!(n.len(), 7, "LEASEHOLD_SCOPE takes seven numbers: {spec}");
    Scope::builder()
        .workers(n[0])
        .jobs(n[1])
        .crashes(n[2])
        .lost(n[3])
        .conflicts(n[4])
        .unavailable(n[5])
        .cancels(n[6])
}
