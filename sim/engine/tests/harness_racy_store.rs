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

/// One `Store` method on the service's table: a `write` through
/// [`Kv::write`] (read, wait, write the copy back), a `read` on the table
/// as it is now.
macro_rules! on_table {
    (write $op:ident($arg:ident: $ty:ty) -> $out:ty) => {
        fn $op(&self, $arg: $ty) -> impl Future<Output = Result<$out, StoreError>> + Send {
            self.0.write(move |s| async move { s.$op($arg).await })
        }
    };
    (read $op:ident($($arg:ident: $ty:ty)?) -> $out:ty) => {
        fn $op(&self $(, $arg: $ty)?) -> impl Future<Output = Result<$out, StoreError>> + Send {
            let s = self.0.read();
            async move { s.$op($($arg)?).await }
        }
    };
}

/// Every operation the simulation sends; the rest (`batch`, `retry_dead`,
/// ...) are the trait's defaults.
impl Store for KvStore {
    on_table!(read now() -> StoreTime);
    on_table!(write enqueue(job: NewJob) -> JobId);
    on_table!(write claim(r: ClaimRequest) -> Vec<Lease>);
    on_table!(write renew(r: RenewRequest) -> Renewal);
    on_table!(write release(r: ReleaseRequest) -> Release);
    on_table!(write sweep(r: SweepRequest) -> Vec<CrashReport>);
    on_table!(write cancel(j: JobId) -> CancelOutcome);
    on_table!(read get(j: JobId) -> Option<JobRecord>);
    on_table!(read list(r: ListRequest) -> Vec<JobRecord>);
    on_table!(write put_schedule(sc: Schedule) -> ());
    on_table!(write remove_schedule(n: String) -> bool);
    on_table!(write fire(r: FireRequest) -> JobId);
    on_table!(read list_schedules(r: ListSchedulesRequest) -> Vec<ScheduleRecord>);
    on_table!(write prune(r: PruneRequest) -> Vec<JobId>);
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
