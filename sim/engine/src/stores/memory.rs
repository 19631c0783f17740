//! The memory adapter under simulation (the default store).
//!
//! The rows live in a [`MemoryState`] that outlives the store host, so a
//! crash keeps what committed; a restart opens a new store on the same
//! state. The only store that carries the catalogue's store-side bugs.

// The store traits return `impl Future + Send`; these bodies clone what they
// need before the `async` block, so the futures own it and can run on the
// driver thread: `async fn` would borrow the arguments instead.
#![allow(clippy::manual_async_fn)]

use super::{SeedContext, SetupError, SimStore, SimStoreClock, StoreFactory};
use leasehold_core::{CrashReport, Event, StoreError, StoreTime, SweepRequest};
use leasehold_memory::{MemoryState, MemoryStore};
use leasehold_model::catalogue::Variant;
use std::future::Future;
use std::sync::{Arc, Mutex};

/// Makes a [`MemoryStore`] per seed.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryFactory;

/// The memory store with the catalogue variant it runs.
pub struct SimMemoryStore {
    store: MemoryStore,
    variant: Option<Variant>,
}

impl std::ops::Deref for SimMemoryStore {
    type Target = MemoryStore;
    fn deref(&self) -> &MemoryStore {
        &self.store
    }
}

leasehold_core::forward_store! {
    impl[] Store for SimMemoryStore, |self| self.store;
    // The trait's defaults, as the engine's own forwarder had them: a
    // batch runs by parts through the forwarded `release` and `claim`
    // (the recorded history hashes depend on it).
    except [batch, batch_within, work_available] {}
}

impl SimStore for SimMemoryStore {
    fn audit_log(&self) -> impl Future<Output = Result<Option<Vec<Event>>, StoreError>> + Send {
        let events = self.store.events();
        async move { Ok(Some(events)) }
    }

    fn sweep_with_wall(
        &self,
        req: SweepRequest,
        wall: Option<StoreTime>,
    ) -> impl Future<Output = Result<Vec<CrashReport>, StoreError>> + Send {
        let buggy = memory_sweep_with_wall(&self.store, &req, wall, self.variant);
        async move {
            match buggy {
                Some(r) => r,
                None => leasehold_core::Store::sweep(&self.store, req).await,
            }
        }
    }
}

impl StoreFactory for MemoryFactory {
    type Store = SimMemoryStore;
    type Database = Arc<Mutex<MemoryState>>;

    fn name(&self) -> String {
        "memory".into()
    }

    fn uses_driver(&self) -> bool {
        false
    }

    fn carries_store_variants(&self) -> bool {
        true
    }

    fn create(
        &self,
        _ctx: &SeedContext,
    ) -> impl Future<Output = Result<Self::Database, SetupError>> + Send {
        async { Ok(Arc::default()) }
    }

    fn open(
        &self,
        db: &Self::Database,
        ctx: &SeedContext,
        clock: SimStoreClock,
    ) -> impl Future<Output = Result<Self::Store, SetupError>> + Send {
        let mut store = MemoryStore::with_state(ctx.policy.clone(), clock, db.clone());
        configure_memory(&mut store, ctx.variant);
        let variant = ctx.variant;
        async move { Ok(SimMemoryStore { store, variant }) }
    }
}

/// Puts a store-side variant (the bug catalogue's) into the memory store.
fn configure_memory(store: &mut MemoryStore, v: Option<Variant>) {
    #[cfg(feature = "catalogue")]
    store.set_variant(v);
    let _ = (store, v);
}

/// The memory store's sweep under `sweeper-own-clock`: expiry judged by the
/// sweeper's wall clock. `None` when the variant is not in force.
fn memory_sweep_with_wall(
    store: &MemoryStore,
    req: &leasehold_core::SweepRequest,
    wall: Option<leasehold_core::StoreTime>,
    v: Option<Variant>,
) -> Option<Result<Vec<leasehold_core::CrashReport>, leasehold_core::StoreError>> {
    #[cfg(feature = "catalogue")]
    if let (Some(Variant::SweeperOwnClock), Some(w)) = (v, wall) {
        return Some(store.sweep_at(req.clone(), w));
    }
    let _ = (store, req, wall, v);
    None
}
