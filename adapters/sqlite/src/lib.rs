//! # leasehold-sqlite
//!
//! A [`Store`] on one SQLite file, for single-host deployments and tests.
//!
//! Every operation runs in one `BEGIN IMMEDIATE` transaction: it loads the
//! affected rows, applies the `leasehold_core::transition` function, and
//! writes the new row with `WHERE id = ? AND version = ?`. Candidate queries
//! pre-filter only what the core re-checks (`state = 'pending' AND run_at <=
//! now` for claim, `state = 'running' AND expires_at <= now` for sweep).
//!
//! ## The store clock
//! Store time comes from the [`StoreClock`] given at open time, read inside
//! the write transaction once the write lock is held. It defaults to
//! [`SystemStoreClock`], the host's wall clock: this clock alone decides
//! lease validity (`expires_at`, `run_at`, sweeping), so every process that
//! opens the same file must use the same kind of clock. Tests pass a
//! [`leasehold_core::ManualStoreClock`].
//!
//! ## Concurrency
//! - WAL journal, so readers never block the writer;
//! - writes take the database lock at `BEGIN IMMEDIATE`, so two writers
//!   never deadlock upgrading a read lock; a write waits for another
//!   process's lock up to the busy timeout, in slices of [`BUSY_SLICE`]
//!   that its caller can stop: a write given up (a request timeout) ends
//!   within one slice instead of waiting out the busy timeout on a
//!   connection nobody wants (`busy.rs`);
//! - within one process, writers queue on an async mutex before asking for
//!   the lock, instead of spinning in SQLite's busy handler;
//! - writes use a small pool of their own ([`WRITE_CONNECTIONS`]) and reads
//!   another, so waiting writes never hold the connections reads need;
//!   neither pool pings a connection before handing it out (`open` says
//!   why), and each keeps one connection between operations, unpinged on
//!   its way back (`leasehold_sql::kept_conn`);
//! - writes are cancellation-safe: a store future dropped mid-write (a
//!   request timeout) closes its connection, which rolls the transaction
//!   back and frees the lock, instead of pooling a connection that is still
//!   inside it (`write_conn`);
//! - a claim that would take nothing (a lone claim, or a batch of claims
//!   without releases, whose queues have no due job) is answered from one
//!   read instead of a write transaction: an idle worker's poll never
//!   takes the write lock (`claim_probe.rs`), and a sweep that would
//!   reclaim nothing (no expired lease) likewise (`sweep_probe.rs`);
//! - on a multi-thread runtime, a merged batch's transaction (the
//!   `Worker`'s path) is polled on a thread of the runtime's blocking
//!   pool, woken by its connection's thread directly instead of waiting
//!   for a runtime thread busy with handlers; dropping the call still
//!   drops it (`batch_thread.rs`).
//!
//! Claims are race-free across tasks and processes: the parallelism count,
//! the candidate scan and the writes happen under one exclusive write lock.
//!
//! ## A full disk
//! A write the file system refuses (`ENOSPC`, a file-size limit, a failing
//! disk) answers [`StoreError::Unavailable`] naming the cause ("disk full
//! (SQLITE_FULL)" or "disk I/O error"), commits nothing, and is retried
//! like any unknown outcome: once space is freed, the store heals without
//! a restart (`error.rs`, `tests/tests/sqlite_disk_full.rs`).
//!
//! ## Wake-ups
//! After a commit that may make work claimable (an enqueue, a fire, a
//! `Returned` release, a reclaim, a freed slot of a limited queue) the store
//! wakes the idle [`leasehold_core::Worker`]s **of this process** that use
//! this `SqliteStore` (`Store::work_available`, an in-process signal). SQLite
//! cannot notify other processes: workers there find the job at their next
//! poll (`WorkerConfig::poll_interval`, 1 s by default). See `wake.rs`.
//!
//! ## Batches
//! `Store::batch`, [`SqliteStore::release_many`], claims and sweeps work on
//! sets of rows (`release.rs`, `claim.rs`, `set_sql.rs`): one statement loads every row a
//! batch's releases name, the core's transitions run in Rust on them in
//! request order, one statement writes them all (each row still guarded by
//! its own loaded version) and one inserts their audit events; a claim
//! scans each queue once. Rows are read back as one aggregated value per
//! statement (`row_set.rs`). Every statement carries a bounded number of
//! rows, so a batch costs a handful of statements whatever its size.
//!
//! ## Audit log
//! With [`SqliteStoreBuilder::audit`] on (the default), each transition's
//! [`Event`](leasehold_core::Event) is written to `lease_events` in the
//! same transaction; [`SqliteStore::events`] reads them back in commit
//! order.
//!
//! ## Files
//! One file per operation family, its batched and single paths together
//! (`enqueue.rs`, `claim.rs` with `claim_probe.rs`, `release.rs`, `renew.rs`, `row_change.rs`
//! (cancel and retry), `sweep.rs`, `prune.rs`, `batch.rs`, `schedules.rs`,
//! `read.rs`, `events.rs`), on
//! `tx.rs` (the write transaction), `batch_thread.rs` (where a merged
//! batch's transaction runs), `one_row.rs` and `set_sql.rs` (row
//! writes); this file holds the store type, its builder and the `Store`
//! wiring.
//!
//! ## Depends on
//! `leasehold-core`, `leasehold-sql` (what it shares with the PostgreSQL
//! adapter: row codecs, schedule statements, pool closing) and sqlx
//! (SQLite). It must never depend on another
//! adapter, the conformance suite (which tests it from `tests/`) or the
//! simulator (which runs it through its store factory).

#![warn(missing_docs)]

// First: the operations' files use its `in_write_tx!`.
#[macro_use]
mod tx;

mod batch;
mod batch_thread;
#[cfg(test)]
mod batch_thread_tests;
mod busy;
mod claim;
mod claim_probe;
#[cfg(test)]
mod close_tests;
mod enqueue;
mod error;
mod events;
mod job_events;
mod one_row;
#[cfg(test)]
mod pool_tests;
mod prune;
mod read;
mod release;
mod renew;
mod row_change;
mod row_set;
mod schedules;
pub mod schema;
mod set_sql;
mod sweep;
mod sweep_probe;
mod wake;
mod write_conn;

use leasehold_core::transition;
use leasehold_core::tx_faults::TxFaults;
use leasehold_core::{
    BatchAnswer, BatchMerger, BatchRequest, CancelOutcome, ClaimRequest, CrashReport, FireRequest,
    JobId, JobRecord, Lease, ListRequest, ListSchedulesRequest, NewJob, Patience, Policy,
    PruneRequest, Release, ReleaseRequest, RenewRequest, Renewal, Schedule, ScheduleRecord, Store,
    StoreClock, StoreError, StoreTime, SweepRequest, SystemStoreClock, WorkSignal,
    DEFAULT_MERGE_FLUSHERS,
};
use leasehold_sql::idle_queues::IdleQueues;
use leasehold_sql::job_sql::FindJob;
use leasehold_sql::kept_conn::{KeptConn, Lent};
use leasehold_sql::pool_close::close_pool;
use leasehold_sql::variant_hook::VariantHook;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::Sqlite;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use busy::BUSY_SLICE;

/// Default time a writer waits for another process's write lock.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Default number of pooled read connections.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 4;
/// Connections of the write pool: one writer at a time, plus one for the
/// next writer while a given-up write's connection closes.
pub const WRITE_CONNECTIONS: u32 = 2;
/// How many times an operation is retried after a version conflict.
pub const MAX_CONFLICT_RETRIES: u32 = 8;

/// Durability of a commit (SQLite's `synchronous` pragma in WAL mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous = FULL`: a commit survives power loss (the default).
    Full,
    /// `synchronous = NORMAL`: a commit survives a process crash but the
    /// last commits may be lost on power loss. Faster.
    Normal,
}

/// Builds a [`SqliteStore`]. Start with [`SqliteStore::builder`].
pub struct SqliteStoreBuilder {
    path: PathBuf,
    policy: Policy,
    clock: Arc<dyn StoreClock>,
    audit: bool,
    busy_timeout: Duration,
    max_connections: u32,
    durability: Durability,
    variant: VariantHook,
}

impl SqliteStoreBuilder {
    /// The store's policy (default: [`Policy::default`]).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// The store clock (default: [`SystemStoreClock`]).
    pub fn clock(mut self, clock: impl StoreClock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Whether to write the `lease_events` audit log (default: on).
    pub fn audit(mut self, on: bool) -> Self {
        self.audit = on;
        self
    }

    /// How long a writer waits for another process's lock (default
    /// [`DEFAULT_BUSY_TIMEOUT`]). It waits in slices of [`BUSY_SLICE`], so a
    /// write whose caller gave up stops waiting within one slice.
    pub fn busy_timeout(mut self, d: Duration) -> Self {
        self.busy_timeout = d;
        self
    }

    /// Size of the read pool, at least 2 (default
    /// [`DEFAULT_MAX_CONNECTIONS`]); writes have [`WRITE_CONNECTIONS`] of
    /// their own.
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = n;
        self
    }

    /// Commit durability (default: [`Durability::Full`]).
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }

    /// Runs the store with a catalogue variant in force (the simulator's
    /// bug catalogue only; default none), refused unless the SQL stores
    /// carry it.
    #[cfg(feature = "buggy-variants")]
    #[doc(hidden)]
    pub fn variant(
        mut self,
        v: Option<leasehold_core::variants::Variant>,
    ) -> Result<Self, leasehold_sql::variant_hook::NotCarried> {
        self.variant = VariantHook::new(v)?;
        Ok(self)
    }

    /// Opens (creating if missing) the database file. Does not migrate: call
    /// [`SqliteStore::migrate`] once.
    pub async fn open(self) -> Result<SqliteStore, StoreError> {
        let opts = SqliteConnectOptions::new()
            .filename(&self.path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(match self.durability {
                Durability::Full => SqliteSynchronous::Full,
                Durability::Normal => SqliteSynchronous::Normal,
            })
            .busy_timeout(self.busy_timeout)
            .foreign_keys(true);
        // No ping before each acquire (sqlx's default): a SQLite connection
        // lives in this process and has no server to lose, sqlx pings each
        // connection anyway when it goes back to the pool (and closes a
        // broken one there), and the ping is a round trip to the
        // connection's thread on every operation.
        let pool = SqlitePoolOptions::new()
            .max_connections(self.max_connections.max(2))
            .acquire_timeout(self.busy_timeout)
            .test_before_acquire(false)
            .connect_with(opts.clone())
            .await
            .map_err(error::map)?;
        let writers = SqlitePoolOptions::new()
            .max_connections(WRITE_CONNECTIONS)
            .acquire_timeout(self.busy_timeout)
            .test_before_acquire(false)
            .connect_with(opts.busy_timeout(busy::slice(self.busy_timeout)))
            .await
            .map_err(error::map)?;
        Ok(SqliteStore {
            shared: Arc::new(Shared {
                pool,
                writers,
                busy_timeout: self.busy_timeout,
                clock: self.clock,
                policy: self.policy,
                audit: self.audit,
                write_lock: tokio::sync::Mutex::new(()),
                kept_reader: KeptConn::default(),
                kept_writer: KeptConn::default(),
                wake: WorkSignal::new(),
                merger: BatchMerger::new(DEFAULT_MERGE_FLUSHERS),
                tx_faults: TxFaults::default(),
                idle: IdleQueues::default(),
                variant: self.variant,
            }),
        })
    }
}

/// A job store on one SQLite file. See the crate docs.
pub struct SqliteStore {
    shared: Arc<Shared>,
}

/// The store's parts, behind one `Arc` so that the thread a merged
/// batch's transaction runs on (`batch_thread.rs`) can hold a handle of its
/// own.
struct Shared {
    /// Reads and migrations; waits the whole busy timeout in SQLite.
    pool: SqlitePool,
    /// Write transactions; waits one [`BUSY_SLICE`] at a time in SQLite.
    writers: SqlitePool,
    busy_timeout: Duration,
    clock: Arc<dyn StoreClock>,
    policy: Policy,
    audit: bool,
    write_lock: tokio::sync::Mutex<()>,
    /// A read connection kept between reads (`leasehold_sql::kept_conn`).
    kept_reader: KeptConn<Sqlite>,
    /// The write connection kept between write transactions.
    kept_writer: KeptConn<Sqlite>,
    /// Wakes this process's idle workers after a commit (`wake.rs`).
    wake: WorkSignal,
    /// Merges the concurrent `Store::batch` calls of this process's workers
    /// (writes serialize on the file's lock anyway; one commit for many).
    merger: BatchMerger,
    /// Faults the simulator arms at commit points (never in production).
    tx_faults: TxFaults,
    /// The queues whose last claim took nothing (`claim_probe.rs`).
    idle: IdleQueues,
    /// The catalogue variant in force (none outside the simulator's
    /// catalogue; see `leasehold_sql::variant_hook`).
    variant: VariantHook,
}

impl SqliteStore {
    /// Another handle on this store (same pools, lock and merger), for the
    /// thread a merged batch runs on; not public: a user shares a store
    /// through an `Arc`, and `close` closes it for every handle.
    pub(crate) fn handle(&self) -> SqliteStore {
        SqliteStore {
            shared: Arc::clone(&self.shared),
        }
    }

    /// A builder for a store on the file at `path`.
    pub fn builder(path: impl AsRef<Path>) -> SqliteStoreBuilder {
        SqliteStoreBuilder {
            path: path.as_ref().to_path_buf(),
            policy: Policy::default(),
            clock: Arc::new(SystemStoreClock),
            audit: true,
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            durability: Durability::Full,
            variant: VariantHook::NONE,
        }
    }

    /// Whether this store can run the catalogue variant `v`
    /// ([`SqliteStoreBuilder::variant`]).
    #[cfg(feature = "buggy-variants")]
    #[doc(hidden)]
    pub fn carries_variant(v: leasehold_core::variants::Variant) -> bool {
        leasehold_sql::variant_hook::carries(v)
    }

    /// Opens `path` with `policy` and the system store clock, and migrates it.
    pub async fn open(path: impl AsRef<Path>, policy: Policy) -> Result<SqliteStore, StoreError> {
        let store = Self::builder(path).policy(policy).open().await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Applies the schema migrations in `migrations/sqlite/` (idempotent).
    /// Run it from one process before others open the file.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        let _writer = self.shared.write_lock.lock().await;
        sqlx::migrate!("../../migrations/sqlite")
            .run(&self.shared.pool)
            .await
            .map_err(|e| StoreError::Unavailable(format!("sqlite migration: {e}")))
    }

    /// A read connection: the one kept since the last read, else one from
    /// the read pool. Hand it back with `finish` once the read has ended.
    pub(crate) async fn reader(&self) -> Result<Lent<'_, Sqlite>, StoreError> {
        let s = &self.shared;
        s.kept_reader.acquire(&s.pool).await.map_err(error::map)
    }

    /// The policy this store applies.
    pub fn policy(&self) -> &Policy {
        &self.shared.policy
    }

    /// The read pool (for inspection in tests and tools). Its connections
    /// wait the whole busy timeout for a lock.
    pub fn pool(&self) -> &SqlitePool {
        &self.shared.pool
    }

    /// The write pool, whose connections wait one [`BUSY_SLICE`] at a time
    /// (for the simulator's check that cancelled calls leave no connection
    /// busy).
    #[doc(hidden)]
    pub fn write_pool(&self) -> &SqlitePool {
        &self.shared.writers
    }

    /// Connections of both pools, and how many of them are at rest (idle
    /// in their pool, or kept between operations), counted when called:
    /// for the simulator's check that cancelled calls leave no connection
    /// busy.
    #[doc(hidden)]
    pub fn connections_at_rest(&self) -> impl Fn() -> (u32, usize) + Send + Sync + 'static {
        let shared = Arc::clone(&self.shared);
        move || {
            let s = &shared;
            (
                s.pool.size() + s.writers.size(),
                s.pool.num_idle()
                    + s.writers.num_idle()
                    + s.kept_reader.held()
                    + s.kept_writer.held(),
            )
        }
    }

    /// The faults the simulator arms at this store's commit points.
    #[doc(hidden)]
    pub fn tx_faults(&self) -> &TxFaults {
        &self.shared.tx_faults
    }

    /// Closes both pools, waiting for connections to finish: when it
    /// returns, no connection holds the file (see `leasehold_sql::pool_close`).
    pub async fn close(&self) {
        self.shared.kept_writer.close();
        self.shared.kept_reader.close();
        close_pool(&self.shared.writers).await;
        close_pool(&self.shared.pool).await;
    }
}

impl Store for SqliteStore {
    async fn now(&self) -> Result<StoreTime, StoreError> {
        Ok(self.shared.clock.now())
    }

    async fn enqueue(&self, job: NewJob) -> Result<JobId, StoreError> {
        transition::validate_new_job(&job, &self.shared.policy)?;
        let id = in_write_tx!(self, |conn, now| self.enqueue_in(conn, &job, now).await)?;
        self.announce_enqueued(std::slice::from_ref(&job));
        Ok(id)
    }

    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Lease>, StoreError> {
        transition::validate_claim(&req.queue, req.lease, req.max, &self.shared.policy)?;
        let now = self.shared.clock.now();
        if self.nothing_to_claim([req.queue.as_str()], now).await {
            return Ok(Vec::new());
        }
        let granted = in_write_tx!(self, |conn, now| self.claim_set(conn, &[&req], now).await)?;
        Ok(granted.into_iter().next().unwrap_or_default())
    }

    async fn renew(&self, req: RenewRequest) -> Result<Renewal, StoreError> {
        in_write_tx!(self, |conn, now| self.renew_in(conn, &req, now).await)
    }

    async fn release(&self, req: ReleaseRequest) -> Result<Release, StoreError> {
        let answer =
            self.release_many_tx(std::slice::from_ref(&req))
                .await
                .and_then(|answers| {
                    answers.into_iter().next().unwrap_or_else(|| {
                        Err(StoreError::Corrupt("release answered nothing".into()))
                    })
                });
        self.announce_released(&req, &answer).await;
        answer
    }

    async fn batch(&self, req: BatchRequest) -> Result<BatchAnswer, StoreError> {
        // Concurrent batches (the workers of this process) share one write
        // transaction and one commit; each still gets its own answers.
        self.shared
            .merger
            .batch(req, |r| self.batch_off_runtime(r))
            .await
    }

    async fn batch_within(
        &self,
        req: BatchRequest,
        patience: Patience,
    ) -> Result<BatchAnswer, StoreError> {
        // A worker running a merged batch finishes it past its own limit
        // (for at most one more), so the others' answers are not lost.
        self.shared
            .merger
            .batch_within(req, |r| self.batch_off_runtime(r), patience)
            .await
    }

    async fn sweep(&self, req: SweepRequest) -> Result<Vec<CrashReport>, StoreError> {
        if self.nothing_to_sweep(self.shared.clock.now()).await {
            return Ok(Vec::new());
        }
        let reports = in_write_tx!(self, |conn, now| self.sweep_in(conn, req.limit, now).await)?;
        self.announce_swept(&reports).await;
        Ok(reports)
    }

    async fn cancel(&self, job: JobId) -> Result<CancelOutcome, StoreError> {
        in_write_tx!(self, |conn, now| self
            .change_row(conn, job, now, transition::cancel)
            .await)
    }

    async fn retry_dead(&self, job: JobId) -> Result<leasehold_core::RetryOutcome, StoreError> {
        let answer = in_write_tx!(self, |conn, now| self
            .change_row(conn, job, now, transition::retry)
            .await)?;
        if answer == leasehold_core::RetryOutcome::Retried {
            self.announce_retried(job).await;
        }
        Ok(answer)
    }

    async fn get(&self, job: JobId) -> Result<Option<JobRecord>, StoreError> {
        let mut conn = self.reader().await?;
        let found = read::JOBS.find(&mut *conn, FindJob::Id(job)).await;
        conn.finish(found)
    }

    async fn get_many(&self, jobs: Vec<JobId>) -> Result<Vec<Option<JobRecord>>, StoreError> {
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.reader().await?;
        let found = read::JOBS.many(&mut conn, &jobs).await;
        conn.finish(found)
    }

    async fn list(&self, req: ListRequest) -> Result<Vec<JobRecord>, StoreError> {
        read::JOBS.page(&self.shared.pool, &req).await
    }

    async fn count_jobs(&self) -> Result<leasehold_core::JobCounts, StoreError> {
        read::JOBS.counts(&self.shared.pool).await
    }

    async fn put_schedule(&self, schedule: Schedule) -> Result<(), StoreError> {
        schedule.validate(&self.shared.policy)?;
        in_write_tx!(self, |conn, now| self
            .put_schedule_in(conn, &schedule, now)
            .await)
    }

    async fn remove_schedule(&self, name: String) -> Result<bool, StoreError> {
        in_write_tx!(self, |conn, _now| schedules::SQL.remove(conn, &name).await)
    }

    async fn fire(&self, req: FireRequest) -> Result<JobId, StoreError> {
        let id = in_write_tx!(self, |conn, now| self.fire_in(conn, &req, now).await)?;
        self.announce_fired(id).await;
        Ok(id)
    }

    async fn list_schedules(
        &self,
        req: ListSchedulesRequest,
    ) -> Result<Vec<ScheduleRecord>, StoreError> {
        // Byte order, as every other store lists names.
        schedules::SQL.page(self.pool(), &req).await
    }

    async fn prune(&self, req: PruneRequest) -> Result<Vec<JobId>, StoreError> {
        req.validate()?;
        in_write_tx!(self, |conn, now| self
            .prune_in(conn, &req, now, &schedules::SQL)
            .await)
    }

    fn work_available(&self, queue: &str) -> impl std::future::Future<Output = ()> + Send {
        self.shared.wake.subscribe(queue)
    }
}
