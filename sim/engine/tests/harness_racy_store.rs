//! The harness runs a user's store whose operations await between their
//! reads and their writes (a store over a key-value service) with its
//! requests concurrent, as a server would: each write reads the whole
//! table, waits for the service, then writes the table back. Two writes that
//! overlap lose one of them (a read-then-write race), and the simulator
//! must report it through the public API. The same store holding a lock
//! across the read and the write passes.

// The store's methods return `impl Future + Send` as the trait declares,
// building owned futures (what a user's code looks like).
#![allow(clippy::manual_async_fn)]

use leasehold_core::{
    CancelOutcome, ClaimRequest, CrashReport, FireRequest, JobId, JobRecord, Lease, ListRequest,
    ListSchedulesRequest, NewJob, Policy, PruneRequest, Release, ReleaseRequest, RenewRequest,
    Renewal, Schedule, ScheduleRecord, Store, StoreError, StoreTime, SweepRequest,
};
use leasehold_memory::{MemoryState, MemoryStore};
use leasehold_sim::harness::check_store;
use leasehold_sim::stores::{MemoryRows, OnMemoryRows, SeedContext, SimStore, SimStoreClock};
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The key-value service's table, and what the store needs to apply an
/// operation to a copy of it.
#[derive(Clone)]
struct Kv {
    table: Arc<Mutex<MemoryState>>,
    policy: Policy,
    clock: SimStoreClock,
    /// Held across read and write when the store is correct.
    lock: Option<Arc<tokio::sync::Mutex<()>>>,
}

/// Round trips to the service between a read and its write.
const ROUND_TRIPS: usize = 2;

impl Kv {
    fn table(&self) -> MemoryState {
        self.table.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Reads the table, waits for the service, applies `op` to the copy
    /// read, and writes the copy back whole.
    fn write<T, F, Fut>(&self, op: F) -> impl Future<Output = T> + Send
    where
        T: Send,
        F: FnOnce(MemoryStore) -> Fut + Send,
        Fut: Future<Output = T> + Send,
    {
        let kv = self.clone();
        async move {
            let _held = match &kv.lock {
                Some(l) => Some(l.clone().lock_owned().await),
                None => None,
            };
            let copy = Arc::new(Mutex::new(kv.table()));
            for _ in 0..ROUND_TRIPS {
                tokio::task::yield_now().await;
            }
            let out = op(MemoryStore::with_state(
                kv.policy.clone(),
                kv.clock.clone(),
                copy.clone(),
            ))
            .await;
            let written = copy.lock().unwrap_or_else(|p| p.into_inner()).clone();
            *kv.table.lock().unwrap_or_else(|p| p.into_inner()) = written;
            out
        }
    }

    /// A read of the table as it is now.
    fn read(&self) -> MemoryStore {
        MemoryStore::with_state(self.policy.clone(), self.clock.clone(), self.table.clone())
    }
}

struct KvStore(Kv);

impl Store for KvStore {
    fn now(&self) -> impl Future<Output = Result<StoreTime, StoreError>> + Send {
        let s = self.0.read();
        async move { s.now().await }
    }
    fn enqueue(&self, job: NewJob) -> impl Future<Output = Result<JobId, StoreError>> + Send {
        self.0.write(|s| async move { s.enqueue(job).await })
    }
    fn claim(
        &self,
        r: ClaimRequest,
    ) -> impl Future<Output = Result<Vec<Lease>, StoreError>> + Send {
        self.0.write(|s| async move { s.claim(r).await })
    }
    fn renew(&self, r: RenewRequest) -> impl Future<Output = Result<Renewal, StoreError>> + Send {
        self.0.write(|s| async move { s.renew(r).await })
    }
    fn release(
        &self,
        r: ReleaseRequest,
    ) -> impl Future<Output = Result<Release, StoreError>> + Send {
        self.0.write(|s| async move { s.release(r).await })
    }
    fn sweep(
        &self,
        r: SweepRequest,
    ) -> impl Future<Output = Result<Vec<CrashReport>, StoreError>> + Send {
        self.0.write(|s| async move { s.sweep(r).await })
    }
    fn cancel(&self, j: JobId) -> impl Future<Output = Result<CancelOutcome, StoreError>> + Send {
        self.0.write(move |s| async move { s.cancel(j).await })
    }
    fn get(&self, j: JobId) -> impl Future<Output = Result<Option<JobRecord>, StoreError>> + Send {
        let s = self.0.read();
        async move { s.get(j).await }
    }
    fn list(
        &self,
        r: ListRequest,
    ) -> impl Future<Output = Result<Vec<JobRecord>, StoreError>> + Send {
        let s = self.0.read();
        async move { s.list(r).await }
    }
    fn put_schedule(&self, sc: Schedule) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.0.write(|s| async move { s.put_schedule(sc).await })
    }
    fn remove_schedule(&self, n: String) -> impl Future<Output = Result<bool, StoreError>> + Send {
        self.0.write(|s| async move { s.remove_schedule(n).await })
    }
    fn fire(&self, r: FireRequest) -> impl Future<Output = Result<JobId, StoreError>> + Send {
        self.0.write(|s| async move { s.fire(r).await })
    }
    fn list_schedules(
        &self,
        r: ListSchedulesRequest,
    ) -> impl Future<Output = Result<Vec<ScheduleRecord>, StoreError>> + Send {
        let s = self.0.read();
        async move { s.list_schedules(r).await }
    }
    fn prune(
        &self,
        r: PruneRequest,
    ) -> impl Future<Output = Result<Vec<JobId>, StoreError>> + Send {
        self.0.write(move |s| async move { s.prune(r).await })
    }
}

/// No audit log, nothing to close; its `batch` is the trait's default,
/// one part after another, with other requests in between.
impl SimStore for KvStore {
    fn batch_is_atomic(&self) -> bool {
        false
    }
}

struct Factory {
    locked: bool,
}

/// Its awaits are the simulation's own (yields) and its table is the
/// memory adapter's rows, so the engine makes its factory (no driver).
impl OnMemoryRows for Factory {
    type Store = KvStore;
    const NAME: &'static str = "kv";

    fn open_on(&self, rows: MemoryRows, _: &SeedContext) -> KvStore {
        KvStore(Kv {
            table: rows.rows,
            policy: rows.policy,
            clock: rows.clock,
            lock: self.locked.then(Arc::default),
        })
    }
}

fn scenarios() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    vec![root.join("fifty_workers_racing_one_queue_grant_each_lease_once.toml")]
}

#[test]
fn a_store_that_reads_then_writes_without_a_lock_is_caught() {
    let report = check_store(Factory { locked: false }, &scenarios(), Some(3)).unwrap();
    let failure = report.failures().next().expect("the lost update is caught");
    assert!(failure.error().is_none(), "{}", failure.summary());
    assert!(
        failure
            .violations()
            .iter()
            .any(|v| matches!(v.invariant.to_string().as_str(), "I1" | "I2" | "I11")),
        "{}",
        failure.summary()
    );
}

#[test]
fn the_same_store_holding_a_lock_across_read_and_write_passes() {
    let report = check_store(Factory { locked: true }, &scenarios(), Some(3)).unwrap();
    let failures: Vec<String> = report.failures().map(|f| f.summary()).collect();
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(report.runs.len(), 3);
}
