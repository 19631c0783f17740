//! The conformance suite against the memory store, in this package so that
//! a change to `leasehold-core` or to this adapter is judged by the suite
//! without building the SQL adapters (what `scripts/mutants.sh` runs for
//! every mutant). The SQL adapters run it in `tests/tests/conformance.rs`.

use leasehold_conformance::{Fixture, Harness, TimeControl};
use leasehold_core::{Event, ManualStoreClock, Policy, StoreTime};
use leasehold_memory::MemoryStore;
use std::sync::Arc;

/// The reference store on a manual clock.
struct MemoryHarness;

impl Harness for MemoryHarness {
    type Store = MemoryStore;

    fn name(&self) -> String {
        "memory".into()
    }

    async fn fresh(&self, policy: Policy) -> Fixture<MemoryStore> {
        let clock = ManualStoreClock::new(StoreTime(1_700_000_000_000));
        Fixture {
            store: Arc::new(MemoryStore::with_clock(policy, clock.clone())),
            time: TimeControl::Manual(clock),
        }
    }

    async fn events(&self, store: &MemoryStore) -> Option<Vec<Event>> {
        Some(store.events())
    }
}

async fn memory_harness() -> Option<MemoryHarness> {
    Some(MemoryHarness)
}

leasehold_conformance::conformance_tests!(memory_harness);
