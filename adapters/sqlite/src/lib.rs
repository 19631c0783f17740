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
//! - writes are cancellation-safe: a store future dropped mid-write (a
//!   request timeout) closes its connection, which rolls the transaction
//!   back and frees the lock, instead of pooling a connection that is still
//!   inside it (`write_conn`).
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
//! sets of rows (`batch.rs`, `set_sql.rs`): one statement loads every row a
//! batch's releases name, the core's transitions run in Rust on them in
//! request order, one statement writes them all (each row still guarded by
//! its own loaded version) and one inserts their audit events; a claim
//! scans each queue once. Rows are read back as one aggregated value per
//! statement (`row_set.rs`). Every statement carries a bounded number of
//! rows, so a batch costs a handful of statements whatever its size.
//!
//! ## Audit log
//! With [`SqliteStoreBuilder::audit`] on (the default), each transition's
//! [`Event`] is written to `lease_events` in the same transaction;
//! [`SqliteStore::events`] reads them back in commit order.
//!
//! ## Depends on
//! `leasehold-core` and sqlx (SQLite). It must never depend on another
//! adapter, the conformance suite (which tests it from `tests/`) or the
//! simulator (which runs it through its store factory).

#![warn(missing_docs)]

mod batch;
mod busy;
#[cfg(test)]
mod close_tests;
mod error;
mod row_set;
mod set_sql;
mod write_conn;

use leasehold_core::transition::{self, Applied, EnqueuePlan, RenewPlan};
use leasehold_core::tx_faults::TxFaults;
use leasehold_core::{
    BatchAnswer, BatchMerger, BatchRequest, CancelOutcome, ClaimRequest, CrashReport, Event,
    FireRequest, InputError, JobId, JobRecord, Lease, ListRequest, ListSchedulesRequest, NewJob,
    Patience, Policy, Release, ReleaseRequest, RenewRequest, Renewal, Schedule, ScheduleRecord,
    Store, StoreClock, StoreError, StoreTime, SweepRequest, SystemStoreClock, WorkSignal,
    DEFAULT_MERGE_FLUSHERS,
};
use leasehold_sql::job_columns::{decode_job, to_i64, COLUMNS};
use leasehold_sql::pool_close::close_pool;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use sqlx::Row;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use write_conn::WriteConn;

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
        let pool = SqlitePoolOptions::new()
            .max_connections(self.max_connections.max(2))
            .acquire_timeout(self.busy_timeout)
            .connect_with(opts.clone())
            .await
            .map_err(error::map)?;
        let writers = SqlitePoolOptions::new()
            .max_connections(WRITE_CONNECTIONS)
            .acquire_timeout(self.busy_timeout)
            .connect_with(opts.busy_timeout(busy::slice(self.busy_timeout)))
            .await
            .map_err(error::map)?;
        Ok(SqliteStore {
            pool,
            writers,
            busy_timeout: self.busy_timeout,
            clock: self.clock,
            policy: self.policy,
            audit: self.audit,
            write_lock: tokio::sync::Mutex::new(()),
            wake: WorkSignal::new(),
            merger: BatchMerger::new(DEFAULT_MERGE_FLUSHERS),
            tx_faults: TxFaults::default(),
        })
    }
}

/// A job store on one SQLite file. See the crate docs.
pub struct SqliteStore {
    /// Reads and migrations; waits the whole busy timeout in SQLite.
    pool: SqlitePool,
    /// Write transactions; waits one [`BUSY_SLICE`] at a time in SQLite.
    writers: SqlitePool,
    busy_timeout: Duration,
    clock: Arc<dyn StoreClock>,
    policy: Policy,
    audit: bool,
    write_lock: tokio::sync::Mutex<()>,
    /// Wakes this process's idle workers after a commit (`wake.rs`).
    wake: WorkSignal,
    /// Merges the concurrent `Store::batch` calls of this process's workers
    /// (writes serialize on the file's lock anyway; one commit for many).
    merger: BatchMerger,
    /// Faults the simulator arms at commit points (never in production).
    tx_faults: TxFaults,
}

/// Runs `$body` (an expression using `$conn: &mut SqliteConnection` and
/// `$now: StoreTime`) in one `BEGIN IMMEDIATE` transaction, retrying a
/// version conflict at most [`MAX_CONFLICT_RETRIES`] times.
macro_rules! in_write_tx {
    ($self:ident, |$conn:ident, $now:ident| $body:expr) => {{
        let mut last_conflict = JobId(0);
        let mut answer = None;
        for _ in 0..=MAX_CONFLICT_RETRIES {
            let _writer = $self.write_lock.lock().await;
            let mut tx = WriteConn::begin(&$self.writers, $self.busy_timeout).await?;
            let $now = $self.clock.now();
            let result = {
                let $conn: &mut SqliteConnection = tx.conn();
                $body
            };
            match result {
                Ok(v) => {
                    // SQLite has no serialization failures to raise: only
                    // an armed stall (the caller drops us here) applies.
                    let _ = $self.tx_faults.at_commit().await;
                    tx.commit().await?;
                    answer = Some(v);
                    break;
                }
                Err(StoreError::Conflict(id)) => {
                    tx.rollback().await;
                    last_conflict = id;
                }
                Err(e) => {
                    tx.rollback().await;
                    return Err(e);
                }
            }
        }
        answer.ok_or(StoreError::Conflict(last_conflict))
    }};
}

mod schedules;
mod wake;

impl SqliteStore {
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
        }
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
        let _writer = self.write_lock.lock().await;
        sqlx::migrate!("../../migrations/sqlite")
            .run(&self.pool)
            .await
            .map_err(|e| StoreError::Unavailable(format!("sqlite migration: {e}")))
    }

    /// The policy this store applies.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The read pool (for inspection in tests and tools). Its connections
    /// wait the whole busy timeout for a lock.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// The write pool, whose connections wait one [`BUSY_SLICE`] at a time
    /// (for the simulator's check that cancelled calls leave no connection
    /// busy).
    #[doc(hidden)]
    pub fn write_pool(&self) -> &SqlitePool {
        &self.writers
    }

    /// The faults the simulator arms at this store's commit points.
    #[doc(hidden)]
    pub fn tx_faults(&self) -> &TxFaults {
        &self.tx_faults
    }

    /// Closes both pools, waiting for connections to finish: when it
    /// returns, no connection holds the file (see `leasehold_sql::pool_close`).
    pub async fn close(&self) {
        close_pool(&self.writers).await;
        close_pool(&self.pool).await;
    }

    /// The audit log: one event per accepted transition, in commit order.
    pub async fn events(&self) -> Result<Vec<Event>, StoreError> {
        self.events_page(0, u32::MAX)
            .await
            .map(|page| page.into_iter().map(|(_, e)| e).collect::<Vec<Event>>())
    }

    /// Up to `limit` audit events with a sequence number above `after_seq`,
    /// in commit order, each with its sequence number (for paging exports).
    pub async fn events_page(
        &self,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<(i64, Event)>, StoreError> {
        let rows =
            sqlx::query("SELECT seq, event FROM lease_events WHERE seq > ? ORDER BY seq LIMIT ?")
                .bind(after_seq)
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await
                .map_err(error::map)?;
        rows.iter()
            .map(|r| {
                let seq: i64 = r.try_get(0).map_err(error::map)?;
                let text: String = r.try_get(1).map_err(error::map)?;
                let event = serde_json::from_str(&text)
                    .map_err(|e| StoreError::Corrupt(format!("event {seq}: {e}")))?;
                Ok((seq, event))
            })
            .collect()
    }

    /// Enqueues many jobs in one transaction; answers their ids in order
    /// (the existing id for a repeated idempotency key). All or nothing: a
    /// bad spec rejects the whole batch.
    pub async fn enqueue_many(&self, jobs: &[NewJob]) -> Result<Vec<JobId>, StoreError> {
        let ids = self.enqueue_many_tx(jobs).await?;
        self.announce_enqueued(jobs);
        Ok(ids)
    }

    async fn enqueue_many_tx(&self, jobs: &[NewJob]) -> Result<Vec<JobId>, StoreError> {
        for job in jobs {
            transition::validate_new_job(job, &self.policy)?;
        }
        in_write_tx!(self, |conn, now| {
            let mut ids = Vec::with_capacity(jobs.len());
            let mut failed = None;
            for job in jobs {
                match self.enqueue_in(conn, job, now).await {
                    Ok(id) => ids.push(id),
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            match failed {
                Some(e) => Err(e),
                None => Ok(ids),
            }
        })
    }

    /// Answers `req` in one `BEGIN IMMEDIATE` transaction and one commit:
    /// releases in order, then claims in order, each through the same code
    /// as its single operation; bad claims are answered at once.
    async fn batch_in_one_tx(&self, req: BatchRequest) -> Result<BatchAnswer, StoreError> {
        let checked: Vec<Result<(), StoreError>> = req
            .claims
            .iter()
            .map(|c| {
                transition::validate_claim(&c.queue, c.lease, c.max, &self.policy)
                    .map_err(StoreError::Input)
            })
            .collect();
        if req.releases.is_empty() && checked.iter().all(|c| c.is_err()) {
            return Ok(BatchAnswer {
                releases: Vec::new(),
                claims: checked
                    .into_iter()
                    .map(|c| c.map(|()| Vec::new()))
                    .collect(),
            });
        }
        let valid: Vec<&ClaimRequest> = req
            .claims
            .iter()
            .zip(&checked)
            .filter(|(_, c)| c.is_ok())
            .map(|(r, _)| r)
            .collect();
        let answer = in_write_tx!(self, |conn, now| {
            match self.release_set(conn, &req.releases, now).await {
                Ok(releases) => self
                    .claim_set(conn, &valid, now)
                    .await
                    .map(|granted| (releases, granted)),
                Err(e) => Err(e),
            }
        })
        .map(|(releases, granted)| {
            let mut granted = granted.into_iter();
            let claims = checked
                .into_iter()
                .map(|c| c.map(|()| granted.next().unwrap_or_default()))
                .collect();
            BatchAnswer { releases, claims }
        })?;
        for (r, a) in req.releases.iter().zip(&answer.releases) {
            self.announce_released(r, a).await;
        }
        Ok(answer)
    }

    /// Releases many leases in one transaction. Each request gets its own
    /// answer (or its own input error), as a single release would; requests
    /// for the same job apply in order. The whole batch fails only when the
    /// store does.
    pub async fn release_many(
        &self,
        reqs: &[ReleaseRequest],
    ) -> Result<Vec<Result<Release, StoreError>>, StoreError> {
        let answers = self.release_many_tx(reqs).await?;
        for (req, answer) in reqs.iter().zip(&answers) {
            self.announce_released(req, answer).await;
        }
        Ok(answers)
    }

    async fn release_many_tx(
        &self,
        reqs: &[ReleaseRequest],
    ) -> Result<Vec<Result<Release, StoreError>>, StoreError> {
        in_write_tx!(self, |conn, now| self.release_set(conn, reqs, now).await)
    }

    async fn load(conn: &mut SqliteConnection, id: JobId) -> Result<JobRecord, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM leasehold_jobs WHERE id = ?");
        let row = sqlx::query(&sql)
            .bind(to_i64(id.0)?)
            .fetch_optional(&mut *conn)
            .await
            .map_err(error::map)?;
        match row {
            Some(r) => decode_job(&r),
            None => Err(StoreError::Input(InputError::UnknownJob(id))),
        }
    }

    async fn record_event(
        &self,
        conn: &mut SqliteConnection,
        event: &Event,
    ) -> Result<(), StoreError> {
        if !self.audit {
            return Ok(());
        }
        let json = serde_json::to_string(event)
            .map_err(|e| StoreError::Corrupt(format!("event encoding: {e}")))?;
        sqlx::query("INSERT INTO lease_events (job_id, version, at, event) VALUES (?, ?, ?, ?)")
            .bind(to_i64(event.job.0)?)
            .bind(to_i64(event.version)?)
            .bind(event.at.0)
            .bind(json)
            .execute(&mut *conn)
            .await
            .map_err(error::map)?;
        Ok(())
    }

    /// Inserts a new row; a unique violation (a key taken meanwhile) is a
    /// conflict, so the retry re-reads the key.
    async fn insert(&self, conn: &mut SqliteConnection, a: &Applied) -> Result<(), StoreError> {
        let r = &a.record;
        let sql = format!(
            "INSERT INTO leasehold_jobs ({COLUMNS}) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        );
        let res = sqlx::query(&sql)
            .bind(to_i64(r.id.0)?)
            .bind(&r.queue)
            .bind(&r.payload)
            .bind(r.priority)
            .bind(r.run_at.0)
            .bind(r.state.as_str())
            .bind(i64::from(r.attempt))
            .bind(i64::from(r.max_attempts))
            .bind(to_i64(r.token.0)?)
            .bind(r.holder.as_ref().map(|w| w.as_str()))
            .bind(r.expires_at.map(|t| t.0))
            .bind(r.cancel_requested)
            .bind(r.result.as_deref())
            .bind(r.error.as_deref())
            .bind(r.released.map(|m| to_i64(m.token.0)).transpose()?)
            .bind(r.released.map(|m| m.digest as i64))
            .bind(r.idempotency_key.as_deref())
            .bind(to_i64(r.version)?)
            .bind(r.created_at.0)
            .bind(r.updated_at.0)
            .execute(&mut *conn)
            .await;
        match res {
            Ok(_) => self.record_event(conn, &a.event).await,
            Err(e) if error::is_unique_violation(&e) => Err(StoreError::Conflict(r.id)),
            Err(e) => Err(error::map(e)),
        }
    }

    /// Writes `a` over the row loaded at `loaded_version`; zero rows written
    /// means a concurrent writer won: a conflict.
    async fn update(
        &self,
        conn: &mut SqliteConnection,
        a: &Applied,
        loaded_version: u64,
    ) -> Result<(), StoreError> {
        let r = &a.record;
        let res = sqlx::query(
            "UPDATE leasehold_jobs SET run_at = ?, state = ?, attempt = ?, token = ?, \
             holder = ?, expires_at = ?, cancel_requested = ?, result = ?, error = ?, \
             released_token = ?, released_digest = ?, version = ?, updated_at = ? \
             WHERE id = ? AND version = ?",
        )
        .bind(r.run_at.0)
        .bind(r.state.as_str())
        .bind(i64::from(r.attempt))
        .bind(to_i64(r.token.0)?)
        .bind(r.holder.as_ref().map(|w| w.as_str()))
        .bind(r.expires_at.map(|t| t.0))
        .bind(r.cancel_requested)
        .bind(r.result.as_deref())
        .bind(r.error.as_deref())
        .bind(r.released.map(|m| to_i64(m.token.0)).transpose()?)
        .bind(r.released.map(|m| m.digest as i64))
        .bind(to_i64(r.version)?)
        .bind(r.updated_at.0)
        .bind(to_i64(r.id.0)?)
        .bind(to_i64(loaded_version)?)
        .execute(&mut *conn)
        .await
        .map_err(error::map)?;
        if res.rows_affected() != 1 {
            return Err(StoreError::Conflict(r.id));
        }
        self.record_event(conn, &a.event).await
    }

    async fn enqueue_in(
        &self,
        conn: &mut SqliteConnection,
        job: &NewJob,
        now: StoreTime,
    ) -> Result<JobId, StoreError> {
        let existing = match &job.idempotency_key {
            Some(key) => {
                let sql = format!("SELECT {COLUMNS} FROM leasehold_jobs WHERE idempotency_key = ?");
                let row = sqlx::query(&sql)
                    .bind(key)
                    .fetch_optional(&mut *conn)
                    .await
                    .map_err(error::map)?;
                row.as_ref().map(decode_job).transpose()?
            }
            None => None,
        };
        // Rows are never deleted and ids are taken under the write lock, so
        // max + 1 is unused and ids grow with enqueue order.
        let next: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) + 1 FROM leasehold_jobs")
            .fetch_one(&mut *conn)
            .await
            .map_err(error::map)?;
        let id = JobId(u64::try_from(next).map_err(|_| StoreError::Corrupt("negative id".into()))?);
        match transition::enqueue(job, id, existing.as_ref(), &self.policy, now)? {
            EnqueuePlan::Existing(id) => Ok(id),
            EnqueuePlan::Insert(applied) => {
                self.insert(conn, &applied).await?;
                Ok(id)
            }
        }
    }

    async fn renew_in(
        &self,
        conn: &mut SqliteConnection,
        req: &RenewRequest,
        now: StoreTime,
    ) -> Result<Renewal, StoreError> {
        let record = Self::load(conn, req.job).await?;
        match transition::renew(&record, req.token, req.lease, &self.policy, now)? {
            RenewPlan::Renewed(applied, answer) => {
                self.update(conn, &applied, record.version).await?;
                Ok(answer)
            }
            RenewPlan::Lost => Ok(Renewal::Lost),
        }
    }

    async fn sweep_in(
        &self,
        conn: &mut SqliteConnection,
        limit: u32,
        now: StoreTime,
    ) -> Result<Vec<CrashReport>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM leasehold_jobs \
             WHERE state = 'running' AND expires_at <= ? ORDER BY expires_at, id LIMIT ?"
        );
        let rows = sqlx::query(&sql)
            .bind(now.0)
            .bind(i64::from(limit))
            .fetch_all(&mut *conn)
            .await
            .map_err(error::map)?;
        let mut reports = Vec::with_capacity(rows.len());
        let mut set = set_sql::WriteSet::default();
        for row in &rows {
            let record = decode_job(row)?;
            // The core re-checks the guard on the row as loaded.
            if let Ok((applied, report)) = transition::sweep(&record, now) {
                set.push_row(applied.record, record.version);
                set.push_event(applied.event);
                reports.push(report);
            }
        }
        set.flush(conn, self.audit).await?;
        Ok(reports)
    }

    async fn cancel_in(
        &self,
        conn: &mut SqliteConnection,
        id: JobId,
        now: StoreTime,
    ) -> Result<CancelOutcome, StoreError> {
        let record = Self::load(conn, id).await?;
        let (applied, answer) = transition::cancel(&record, now);
        if let Some(applied) = applied {
            self.update(conn, &applied, record.version).await?;
        }
        Ok(answer)
    }
}

impl Store for SqliteStore {
    async fn now(&self) -> Result<StoreTime, StoreError> {
        Ok(self.clock.now())
    }

    async fn enqueue(&self, job: NewJob) -> Result<JobId, StoreError> {
        transition::validate_new_job(&job, &self.policy)?;
        let id = in_write_tx!(self, |conn, now| self.enqueue_in(conn, &job, now).await)?;
        self.announce_enqueued(std::slice::from_ref(&job));
        Ok(id)
    }

    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Lease>, StoreError> {
        transition::validate_claim(&req.queue, req.lease, req.max, &self.policy)?;
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
        self.merger.batch(req, |r| self.batch_in_one_tx(r)).await
    }

    async fn batch_within(
        &self,
        req: BatchRequest,
        patience: Patience,
    ) -> Result<BatchAnswer, StoreError> {
        // A worker running a merged batch finishes it past its own limit
        // (for at most one more), so the others' answers are not lost.
        self.merger
            .batch_within(req, |r| self.batch_in_one_tx(r), patience)
            .await
    }

    async fn sweep(&self, req: SweepRequest) -> Result<Vec<CrashReport>, StoreError> {
        let reports = in_write_tx!(self, |conn, now| self.sweep_in(conn, req.limit, now).await)?;
        self.announce_swept(&reports).await;
        Ok(reports)
    }

    async fn cancel(&self, job: JobId) -> Result<CancelOutcome, StoreError> {
        in_write_tx!(self, |conn, now| self.cancel_in(conn, job, now).await)
    }

    async fn get(&self, job: JobId) -> Result<Option<JobRecord>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM leasehold_jobs WHERE id = ?");
        let row = sqlx::query(&sql)
            .bind(to_i64(job.0)?)
            .fetch_optional(&self.pool)
            .await
            .map_err(error::map)?;
        row.as_ref().map(decode_job).transpose()
    }

    async fn list(&self, req: ListRequest) -> Result<Vec<JobRecord>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM leasehold_jobs WHERE id > ? ORDER BY id LIMIT ?");
        let after = req.after.map(|a| to_i64(a.0)).transpose()?.unwrap_or(0);
        let rows = sqlx::query(&sql)
            .bind(after)
            .bind(i64::from(req.limit))
            .fetch_all(&self.pool)
            .await
            .map_err(error::map)?;
        rows.iter().map(decode_job).collect()
    }

    async fn put_schedule(&self, schedule: Schedule) -> Result<(), StoreError> {
        schedule.validate(&self.policy)?;
        in_write_tx!(self, |conn, now| self
            .put_schedule_in(conn, &schedule, now)
            .await)
    }

    async fn remove_schedule(&self, name: String) -> Result<bool, StoreError> {
        in_write_tx!(self, |conn, _now| Self::remove_schedule_in(conn, &name)
            .await)
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
        self.list_schedules_in(&req).await
    }

    fn work_available(&self, queue: &str) -> impl std::future::Future<Output = ()> + Send {
        self.wake.subscribe(queue)
    }
}
