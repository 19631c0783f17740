//! The stores the simulator puts under faults: the memory adapter, the real
//! SQLite and PostgreSQL adapters, or a user's own [`Store`].
//!
//! A [`StoreFactory`] makes one durable database per seed
//! ([`StoreFactory::create`]), opens a store on it at every start of the
//! store host ([`StoreFactory::open`]: the first start and every restart
//! after a crash reopen the *same* database), and removes it at the end
//! ([`StoreFactory::destroy`]).
//!
//! ## Determinism with drivers that run on their own threads
//! The memory store answers inside the store host's poll. SQL drivers do
//! their I/O on threads of their own, and an answer that arrived whenever
//! the OS delivered it would land at a nondeterministic simulated instant. So a
//! factory that [uses a driver](StoreFactory::uses_driver) gets a
//! [`Driver`](driver::Driver): one private tokio runtime per seed on which
//! the store is opened and every operation runs, driven by the simulation
//! thread itself until the answer is back (nothing else of the simulation
//! runs meanwhile). A store operation therefore
//! takes no simulated time at all: it executes at the instant the store
//! host received the request, in the order the host received requests
//! (one at a time), and simulated time resumes only after it committed.
//! Real time spent in the database never shows in the history.
//!
//! Store time is not read from the OS either: every store is built on a
//! [`SimStoreClock`], which the store host sets to its own simulated wall
//! clock just before each operation (the adapters' clock override).
//!
//! ## Crashes
//! A store crash drops the host's software and then closes the store
//! ([`SimStore::close`]: for the SQL stores, every pooled connection). Since
//! operations are atomic in simulated time, a crash always falls between
//! two of them: what committed survives in the database, and requests that
//! had not been executed, or whose answers had not been delivered, are
//! lost with the host. A restart opens the same database again.

mod backend;
mod batch_policy;
#[cfg(feature = "sql")]
mod coalesced;
pub mod driver;
pub mod interleave;
#[cfg(all(test, feature = "sql"))]
mod interleave_bites;
mod interleave_candidates;
mod memory;
pub mod part_gate;
mod pin;
#[cfg(feature = "sql")]
mod postgres;
#[cfg(feature = "sql")]
mod sqlite;
#[cfg(feature = "sql")]
mod sqlite_memstatus;

pub use backend::Backend;
pub use memory::{MemoryFactory, MemoryRows, OnMemoryRows};
#[cfg(feature = "sql")]
pub use postgres::{PostgresFactory, DEFAULT_SCHEMA_PREFIX};
#[cfg(feature = "sql")]
pub use sqlite::SqliteFactory;

use leasehold_core::tx_faults::TxFaults;
use leasehold_core::{
    ClaimRequest, CrashReport, Event, Lease, Policy, Release, ReleaseRequest, Store, StoreClock,
    StoreError, StoreTime, SweepRequest,
};
use leasehold_model::catalogue::Variant;
use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// A store the simulator can run: any [`Store`], plus what the simulator
/// needs around it. Every method has a default.
pub trait SimStore: Store {
    /// The store's own audit log, every committed transition in commit
    /// order, if it keeps one. Without one the checker derives the
    /// transitions from its reference model of the store's answers.
    fn audit_log(&self) -> impl Future<Output = Result<Option<Vec<Event>>, StoreError>> + Send {
        async { Ok(None) }
    }

    /// Closes every connection: the store host crashed.
    fn close(&self) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// Whether [`Store::batch`] applies the whole batch at one point, as
    /// one transaction does (the default). A store whose `batch` is the
    /// trait's default (each part on its own, in order) and whose requests
    /// can interleave (it awaits between reads and writes) answers `false`:
    /// the store host then applies a batch's parts one at a time itself and
    /// records each where it ran, so the checker judges the order they
    /// really ran in.
    fn batch_is_atomic(&self) -> bool {
        true
    }

    /// The faults the store injects at its transactions' commit points
    /// when the store host arms them ([`TxFaults`]): the real SQL stores
    /// have them, so a worker batch can be cancelled mid-transaction inside
    /// the real adapter. Without them (the default) a cancelled batch is
    /// one the store never started. The store host arms them only around
    /// one call at a time, so a store that offers them must answer each
    /// call without other calls running inside it (a driver, or one poll).
    #[doc(hidden)]
    fn tx_faults(&self) -> Option<&TxFaults> {
        None
    }

    /// The store host's hand in a batch's parts ([`part_gate::PartGate`]),
    /// for a store whose [`Store::batch`] runs its parts as separate
    /// concurrent calls and takes a turn of this gate in each (the memory
    /// store). Without one (the default) a batch's parts finish as the store
    /// finishes them, and the scenario options that reorder or fail single
    /// parts (`faults.batch_parts`, `faults.conflict_on`) reach nothing.
    #[doc(hidden)]
    fn part_gate(&self) -> Option<&part_gate::PartGate> {
        None
    }

    /// Waits until the work a dropped call left behind is done (for the SQL
    /// stores: the rollback of its transaction, which `sqlx` finishes in
    /// the background once the call's connection is back in the pool).
    /// Store operations take no simulated time, and neither does the end
    /// of a cancelled one: without this, whether the next request ran
    /// before or after the rollback would depend on real time (on
    /// PostgreSQL a `SKIP LOCKED` claim would skip rows the dead
    /// transaction still locked, or not). An error when it does not end.
    #[doc(hidden)]
    fn settle(&self) -> impl Future<Output = Result<(), String>> + Send {
        async { Ok(()) }
    }

    /// Whether armed failures are raised by the database itself inside the
    /// transaction (PostgreSQL's serialization and deadlock failures, then
    /// retried or answered `Conflict` by the adapter). Without (the
    /// default), the store host answers a drawn conflict `Conflict` itself.
    #[doc(hidden)]
    fn raises_injected_failures(&self) -> bool {
        false
    }

    /// The database sessions holding the locks the session `session` (a
    /// transaction's, as its adapter told the statement gate) waits on;
    /// empty when it waits on none. The statement scheduler asks it of
    /// every running transaction ([`interleave`]). Default: none (a store
    /// whose transactions never wait on one another's locks, or that
    /// answers a held lock at the gate itself, as SQLite's does).
    #[doc(hidden)]
    fn lock_waiters(&self, _session: i64) -> impl Future<Output = Result<Vec<i64>, String>> + Send {
        async { Ok(Vec::new()) }
    }

    /// Single claims that reached the store host in one instant, answered
    /// as production answers concurrent callers of one process (one answer
    /// per request, in order): PostgreSQL through its `Coalescing`
    /// wrapper, which merges them into one transaction. The default, for a
    /// store without such a wrapper, answers each alone, in order.
    #[doc(hidden)]
    fn coalesced_claims(
        self: Arc<Self>,
        reqs: Vec<ClaimRequest>,
    ) -> impl Future<Output = Vec<Result<Vec<Lease>, StoreError>>> + Send {
        async move {
            let mut out = Vec::with_capacity(reqs.len());
            for r in reqs {
                out.push(self.claim(r).await);
            }
            out
        }
    }

    /// How many worker batches one interleaved group may hold
    /// ([`interleave::Join::Batch`]): as many as the store runs in
    /// transactions of their own at once. A SQL store answers concurrent
    /// batches through a `BatchMerger` with that many flushers; each
    /// batch of a group, polled in turn on the driver's one thread, takes
    /// a flusher of its own before any of them awaits the database, so up
    /// to that many never merge. One more would wait for a flusher outside
    /// any statement gate, where the scheduler cannot see it. Default: 1.
    #[doc(hidden)]
    fn concurrent_batches(&self) -> usize {
        1
    }

    /// Whether [`SimStore::coalesced_claims`] and
    /// [`SimStore::coalesced_releases`] answer a whole group in one
    /// transaction (PostgreSQL's `Coalescing` wrapper); only then may the
    /// statement scheduler run the group as one of its calls
    /// (`hosts/store_coalesce.rs`). Default: no (one by one).
    #[doc(hidden)]
    fn coalesces_in_one_tx(&self) -> bool {
        false
    }

    /// Single releases sent at once, as [`SimStore::coalesced_claims`].
    #[doc(hidden)]
    fn coalesced_releases(
        self: Arc<Self>,
        reqs: Vec<ReleaseRequest>,
    ) -> impl Future<Output = Vec<Result<Release, StoreError>>> + Send {
        async move {
            let mut out = Vec::with_capacity(reqs.len());
            for r in reqs {
                out.push(self.release(r).await);
            }
            out
        }
    }

    /// A sweep that carries the sweeper's own wall clock (only the
    /// catalogue's `sweeper-own-clock` store looks at it; a correct store
    /// ignores it, which is the default).
    #[doc(hidden)]
    fn sweep_with_wall(
        &self,
        req: SweepRequest,
        _wall: Option<StoreTime>,
    ) -> impl Future<Output = Result<Vec<CrashReport>, StoreError>> + Send {
        self.sweep(req)
    }
}

/// What a factory knows of the seed it makes a store for.
#[derive(Clone, Debug)]
pub struct SeedContext {
    /// Scenario name.
    pub scenario: String,
    /// Seed.
    pub seed: u64,
    /// The policy the store must apply (limits, backoff, parallelism).
    pub policy: Policy,
    /// The catalogue variant in force (never set outside the catalogue).
    #[doc(hidden)]
    pub variant: Option<Variant>,
    /// Whether SQL transactions of one instant are interleaved at their
    /// statements ([`interleave`]; the memory store ignores it).
    pub interleave: bool,
    /// The run is one side of a comparison between two different stores
    /// ([`crate::runner::RunOptions::differential`]): the store offers no
    /// part gate ([`SimStore::part_gate`]) and the store host answers no
    /// enqueue `Conflict`, so both runs of the seed get the same inputs.
    pub differential: bool,
}

/// A store could not be set up: bad configuration or an unreachable
/// database (the CLI exits 2).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(pub String);

impl SetupError {
    /// An error with a message.
    pub fn new(msg: impl Into<String>) -> Self {
        SetupError(msg.into())
    }
}

/// Makes the store of each seed. Shared by every seed of a run (and by
/// threads running seeds in parallel).
pub trait StoreFactory: Send + Sync + 'static {
    /// The store.
    type Store: SimStore;
    /// The durable part of one seed's store (a file, a schema, shared state).
    type Database: Send + Sync + 'static;

    /// A short name for reports (`memory`, `sqlite`, `postgres`, ...).
    fn name(&self) -> String;

    /// Whether the store does real I/O on its own threads, so its calls
    /// must go through a [`Driver`](driver::Driver). Default: yes.
    fn uses_driver(&self) -> bool {
        true
    }

    /// Whether the store's I/O needs the driver's reactor (sockets, as
    /// PostgreSQL's connections do). Default: yes. A store whose
    /// connections are threads of their own (SQLite's) answers `false`,
    /// and its driver waits for each answer on a cheaper wake-up
    /// ([`Driver::without_io`](driver::Driver::without_io)).
    fn driver_needs_io(&self) -> bool {
        true
    }

    /// Makes a fresh, empty database for one seed.
    fn create(
        &self,
        ctx: &SeedContext,
    ) -> impl Future<Output = Result<Self::Database, SetupError>> + Send;

    /// Opens a store on the seed's database, reading time from `clock`.
    /// Called at every start of the store host: after a crash it must
    /// reopen the same data.
    fn open(
        &self,
        db: &Self::Database,
        ctx: &SeedContext,
        clock: SimStoreClock,
    ) -> impl Future<Output = Result<Self::Store, SetupError>> + Send;

    /// Whether the store carries the catalogue's store-side bug `v`
    /// (default: none). The memory store carries every one; the SQL stores
    /// carry those their adapters plant (the pruning bugs); a run of any
    /// other store-side variant on a store that does not carry it is
    /// refused, not run as if it tested the bug.
    #[doc(hidden)]
    fn carries_store_variant(&self, v: Variant) -> bool {
        let _ = v;
        false
    }

    /// Removes the seed's database (default: drop it).
    fn destroy(&self, db: Self::Database) -> impl Future<Output = ()> + Send {
        async move { drop(db) }
    }
}

/// The store clock under simulation: the store host's simulated wall
/// clock, set before each operation (a store operation takes no simulated
/// time, so one reading per operation is exact).
#[derive(Clone, Debug, Default)]
pub struct SimStoreClock(Arc<AtomicI64>);

impl SimStoreClock {
    /// Sets the time the next operation runs at.
    pub fn set(&self, t: StoreTime) {
        self.0.store(t.0, Ordering::Relaxed);
    }
}

impl StoreClock for SimStoreClock {
    fn now(&self) -> StoreTime {
        StoreTime(self.0.load(Ordering::Relaxed))
    }
}

/// The variant a SQL store is built with: the seed's, when it is a bug of
/// the store (a worker-side variant leaves the store correct). The runner
/// has already refused a store-side one the store does not carry, and the
/// adapter's builder refuses it again.
#[cfg(all(feature = "sql", feature = "catalogue"))]
fn store_side(v: Option<Variant>) -> Option<Variant> {
    v.filter(|v| leasehold_model::catalogue::is_store_side(*v))
}

/// Most real time a dropped call's cleanup may take ([`SimStore::settle`]).
#[cfg(feature = "sql")]
const SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Waits until every connection of a pool is idle again, as `sizes` (the
/// pool's size and its idle count) tells, for at most [`SETTLE_LIMIT`].
#[cfg(feature = "sql")]
async fn pool_settled(sizes: impl Fn() -> (u32, usize)) -> Result<(), String> {
    let start = std::time::Instant::now();
    // Bounded by SETTLE_LIMIT.
    loop {
        let (size, idle) = sizes();
        if idle >= size as usize {
            return Ok(());
        }
        if start.elapsed() > SETTLE_LIMIT {
            return Err(format!(
                "{} of {size} connection(s) still busy {}s after a cancelled call: \
                 its transaction never ended, later writers would wait on it",
                size as usize - idle,
                SETTLE_LIMIT.as_secs()
            ));
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
}
