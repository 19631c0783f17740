//! The memory adapter under simulation (the default store).
//!
//! The rows live in a [`MemoryState`] that outlives the store host, so a
//! crash keeps what committed; a restart opens a new store on the same
//! state. The only store that carries the catalogue's store-side bugs.
//! Its factory comes from [`OnMemoryRows`], which any store kept in the
//! memory adapter's rows (a test's double or fault injector) implements to
//! get one too.

// The store traits return `impl Future + Send`; these bodies clone what they
// need before the `async` block, so the futures own it and can run on the
// driver thread: `async fn` would borrow the arguments instead.
#![allow(clippy::manual_async_fn)]

use super::part_gate::{PartFate, PartGate};
use super::{SeedContext, SetupError, SimStore, SimStoreClock, StoreFactory};
use leasehold_core::{
    BatchAnswer, BatchRequest, ClaimRequest, CrashReport, Event, JobId, Lease, Policy, Release,
    ReleaseRequest, StoreError, StoreTime, SweepRequest,
};
use leasehold_memory::{MemoryState, MemoryStore};
use leasehold_model::catalogue::Variant;
use std::future::Future;
use std::sync::{Arc, Mutex};

/// Makes a [`MemoryStore`] per seed.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryFactory;

/// The memory store with the catalogue variant it runs, and the gate its
/// batch's parts take turns at ([`PartGate`]).
pub struct SimMemoryStore {
    store: MemoryStore,
    variant: Option<Variant>,
    gate: PartGate,
    /// Whether the store host may arm the gate (not in a differential run,
    /// [`SeedContext::differential`]); unarmed, every turn is ready at
    /// once, as without a gate.
    offers_gate: bool,
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
    // batch runs by parts through `release` and `claim` (the recorded
    // history hashes depend on it), each of which takes its turn at the
    // part gate first (ready at once unless the store host armed it).
    except [release, claim, batch, batch_within, work_available] {
        fn release(
            &self,
            req: ReleaseRequest,
        ) -> impl Future<Output = Result<Release, StoreError>> + Send {
            let turn = self.gate.turn();
            async move {
                match turn.await {
                    PartFate::Run => self.store.release(req).await,
                    PartFate::Conflict => Err(StoreError::Conflict(req.job)),
                }
            }
        }

        fn claim(
            &self,
            req: ClaimRequest,
        ) -> impl Future<Output = Result<Vec<Lease>, StoreError>> + Send {
            let turn = self.gate.turn();
            async move {
                match turn.await {
                    PartFate::Run => self.store.claim(req).await,
                    PartFate::Conflict => Err(StoreError::Conflict(JobId(0))),
                }
            }
        }

        fn batch(
            &self,
            req: BatchRequest,
        ) -> impl Future<Output = Result<BatchAnswer, StoreError>> + Send {
            async move {
                #[cfg(feature = "catalogue")]
                if self.variant == Some(Variant::BatchAnswersInCompletionOrder) {
                    return leasehold_memory::batch_variant::batch_in_completion_order(self, req)
                        .await;
                }
                leasehold_core::batch_by_parts(self, req).await
            }
        }
    }
}

impl SimStore for SimMemoryStore {
    fn part_gate(&self) -> Option<&PartGate> {
        self.offers_gate.then_some(&self.gate)
    }

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

/// A store over the memory adapter's rows, which outlive the store host: a
/// crash keeps what committed, and a restart opens a new store on the same
/// rows. Such a store (the memory store itself, a test's double or fault
/// injector around it) implements this and gets its [`StoreFactory`]: no
/// driver (its awaits are the simulation's own), fresh rows per seed.
pub trait OnMemoryRows: Send + Sync + 'static {
    /// The store.
    type Store: SimStore;
    /// A short name for reports (`memory`, ...).
    const NAME: &'static str;
    /// Whether the store carries every one of the catalogue's store-side
    /// bugs (the memory store does; a double around it does not).
    #[doc(hidden)]
    const CARRIES_STORE_VARIANTS: bool = false;

    /// Opens a store on the seed's rows. Called at every start of the
    /// store host.
    fn open_on(&self, rows: MemoryRows, ctx: &SeedContext) -> Self::Store;
}

/// What a store over the memory adapter's rows opens on: the seed's rows,
/// the policy to apply and the store clock.
pub struct MemoryRows {
    /// The rows, shared by every start of the store host.
    pub rows: Arc<Mutex<MemoryState>>,
    /// The policy the store must apply.
    pub policy: Policy,
    /// The store host's simulated clock.
    pub clock: SimStoreClock,
}

impl MemoryRows {
    /// The memory store on these rows.
    pub fn store(&self) -> MemoryStore {
        MemoryStore::with_state(self.policy.clone(), self.clock.clone(), self.rows.clone())
    }
}

impl<T: OnMemoryRows> StoreFactory for T {
    type Store = T::Store;
    type Database = Arc<Mutex<MemoryState>>;

    fn name(&self) -> String {
        T::NAME.into()
    }

    fn uses_driver(&self) -> bool {
        false
    }

    fn carries_store_variant(&self, v: Variant) -> bool {
        // Every store-side bug but those planted in PostgreSQL's own code.
        T::CARRIES_STORE_VARIANTS && !leasehold_model::catalogue::postgres_only(v)
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
        let policy = ctx.policy.clone();
        let store = self.open_on(
            MemoryRows {
                rows: db.clone(),
                policy,
                clock,
            },
            ctx,
        );
        async move { Ok(store) }
    }
}

impl OnMemoryRows for MemoryFactory {
    type Store = SimMemoryStore;
    const NAME: &'static str = "memory";
    const CARRIES_STORE_VARIANTS: bool = true;

    fn open_on(&self, rows: MemoryRows, ctx: &SeedContext) -> SimMemoryStore {
        let mut store = rows.store();
        configure_memory(&mut store, ctx.variant);
        let variant = ctx.variant;
        SimMemoryStore {
            store,
            variant,
            gate: PartGate::default(),
            offers_gate: !ctx.differential,
        }
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
