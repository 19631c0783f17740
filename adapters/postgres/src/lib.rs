//! # leasehold-postgres
//!
//! A [`Store`] on PostgreSQL (tested on 15), for many workers on many hosts.
//!
//! Every operation is one transaction that loads the affected rows (`FOR
//! UPDATE` for renew and cancel; releases read without row locks, since
//! the write is version-checked), applies the `leasehold_core::transition`
//! function, and writes the new rows with `WHERE id = … AND version = …` in
//! one statement. A
//! version conflict, serialization failure, deadlock or unique violation
//! rolls back and retries, at most [`MAX_CONFLICT_RETRIES`] times. SQL only
//! pre-filters candidates (`state = 'pending' AND run_at <= now` for claim,
//! `state = 'running' AND expires_at <= now` for sweep); the core re-checks.
//!
//! ## The store clock
//! Store time is the database server's clock in milliseconds, read inside
//! the transaction: `statement_timestamp()` in the statement that scans
//! claim and sweep candidates (those never wait for row locks: `SKIP
//! LOCKED`), and `clock_timestamp()` after the row lock is held for renew,
//! release and cancel. Hosts' clocks never matter.
//!
//! For tests only, [`PgStoreBuilder::clock_override`] replaces the database
//! clock with a [`StoreClock`] (for example a
//! [`leasehold_core::ManualStoreClock`]) so that time-dependent behaviour
//! can be driven exactly. Production code must not set it.
//!
//! ## Claims
//! Up to `n` due rows are locked with `FOR UPDATE SKIP LOCKED` in one
//! statement and written in one statement. For a queue with a parallelism
//! limit, claims of that queue serialize on a transaction-scoped advisory
//! lock before counting its running jobs, so two claimers can never both see
//! the last free slot.
//!
//! ## Wake-ups
//! Enqueue sends `NOTIFY <channel>, '<queue>'` in its transaction (delivered
//! at commit), and so do a release or sweep that make a job claimable now
//! (a `Returned` lease, a reclaim) or free a slot of a queue with a
//! parallelism limit. Idle [`leasehold_core::Worker`]s on a `PgStore` wake
//! on these without any setup: the first `Store::work_available` call
//! starts one background task per store that `LISTEN`s on a connection of
//! its own (not one of the pool's), reconnects after a dropped connection
//! with a doubling backoff (50 ms to 5 s), and after every (re)connect wakes
//! every waiting worker once, since notifications sent meanwhile were lost.
//! The worker's poll interval stays the fallback for anything missed and for
//! jobs whose `run_at` is in the future. [`PgStore::work_listener`] gives a
//! [`WorkListener`] for callers who drive their own loop; its
//! [`WorkListener::wait_for_work`] returns on a notification for the queue
//! or after a bounded wait.
//!
//! ## Batches
//! `Store::batch` (what a `leasehold_core::Worker` sends: its queued
//! releases, then its claims) runs in one transaction with one write
//! statement (and, usually, one read: `batch.rs`), and the concurrent batches of one process's workers are
//! merged into shared transactions (`leasehold_core::BatchMerger`, at most
//! [`leasehold_core::DEFAULT_MERGE_FLUSHERS`] in flight, see
//! [`PgStoreBuilder::batch_flushers`]); every request keeps its own answer.
//! A claim that would take nothing (a lone claim, or claims without
//! releases, whose queues have no due job) is answered from one read
//! instead of a transaction (`claim_probe.rs`), and a sweep that would
//! reclaim nothing (no expired lease) likewise (`sweep_probe.rs`). Reads
//! (those probes, `get`,
//! `get_many`) take the one connection the store keeps between reads, so
//! they skip the pool's pings (`leasehold_sql::kept_conn`).
//! [`PgStore::enqueue_many`], [`PgStore::claim_many`] and
//! [`PgStore::release_many`] apply many transitions in one transaction with
//! one write statement each. [`Coalescing`] wraps a store so that the
//! concurrent claims and releases of many workers in one process (the
//! `leasehold_core::Worker` runtime sends one release per job) are answered
//! by such batches.
//!
//! ## Audit log
//! With [`PgStoreBuilder::audit`] on (the default), every transition's
//! [`Event`] is written by the same statement that writes the row: one
//! `leasehold_audit` row per statement holds that statement's events as a
//! JSON array, in the order they were applied. One row per batch instead
//! of one per event costs a batch one heap tuple and one index entry, and
//! lets the server compress the array (TOAST). The view `lease_events`
//! shows one row per event for SQL users. [`PgStore::events`] reads them
//! back in insertion order (per job, in version order).
//!
//! ## Vacuums
//! A claim leaves the job's old entry in the claim index until a vacuum,
//! and later claim scans step over it. Migration 0004 has autovacuum visit
//! `leasehold_jobs` after 1 % of its rows died; a server whose autovacuum
//! still looks too seldom can be helped by the store itself with
//! [`PgStoreBuilder::vacuum_every`] (off by default; `vacuum.rs`).
//!
//! ## Files
//! One file per operation family, its batched and single paths together
//! (`enqueue.rs`, `claim.rs` with `claim_probe.rs`, `release.rs`, `renew.rs`, `row_change.rs`
//! (cancel and retry), `sweep.rs`, `prune.rs`, `batch.rs`, `schedules.rs`,
//! `read.rs`, `events.rs`), on
//! `tx.rs` (the transaction and its retries), `clock.rs` (the store clock
//! in SQL), `load.rs` (reading rows) and `write_batch.rs` (writing them);
//! this file holds the store type, its builder and the `Store` wiring.
//!
//! ## Depends on
//! `leasehold-core`, `leasehold-sql` (what it shares with the SQLite
//! adapter: row codecs, schedule statements, pool closing) and sqlx
//! (PostgreSQL). It must never depend on another
//! adapter, the conformance suite (which tests it from `tests/`) or the
//! simulator (which runs it through its store factory).

#![warn(missing_docs)]

// First: the operations' files use its `in_tx!`.
#[macro_use]
mod tx;

mod batch;
mod claim;
mod claim_probe;
mod clock;
mod coalesce;
mod enqueue;
mod error;
mod events;
mod job_events;
mod listener;
mod load;
mod prune;
mod read;
mod release;
mod renew;
mod rollback;
mod row_change;
mod schedules;
pub mod schema;
mod sweep;
mod sweep_probe;
mod vacuum;
mod write_batch;

pub use coalesce::{Coalescing, COALESCE_QUEUE_CAP, DEFAULT_COALESCE_BATCH, DEFAULT_FLUSHERS};
pub use listener::WorkListener;
pub use vacuum::{
    VacuumStats, MAX_VACUUM_PERIOD, MIN_VACUUM_PERIOD, VACUUM_CLOSE_WAIT, VACUUM_MIN_DEAD_ROWS,
};

use leasehold_core::transition;
use leasehold_core::tx_faults::TxFaults;
use leasehold_core::{
    BatchAnswer, BatchMerger, BatchRequest, CancelOutcome, ClaimRequest, CrashReport, Event,
    FireRequest, JobId, JobRecord, Lease, ListRequest, ListSchedulesRequest, NewJob, Patience,
    Policy, PruneRequest, Release, ReleaseRequest, RenewRequest, Renewal, Schedule, ScheduleRecord,
    Store, StoreClock, StoreError, StoreTime, SweepRequest, DEFAULT_MERGE_FLUSHERS,
};
use leasehold_sql::idle_queues::IdleQueues;
use leasehold_sql::job_sql::FindJob;
use leasehold_sql::kept_conn::{KeptConn, Lent};
use leasehold_sql::pool_close::close_pool;
use leasehold_sql::variant_hook::VariantHook;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, Postgres};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// Default pool size.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 10;
/// Default time to wait for a pooled connection before answering `Unavailable`.
pub const DEFAULT_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default `LISTEN/NOTIFY` channel announcing enqueues.
pub const DEFAULT_NOTIFY_CHANNEL: &str = "leasehold_jobs";
/// How many times an operation is retried after a conflict.
pub const MAX_CONFLICT_RETRIES: u32 = 8;

/// Builds a [`PgStore`]. Start with [`PgStore::builder`].
pub struct PgStoreBuilder {
    url: String,
    schema: Option<String>,
    policy: Policy,
    clock_override: Option<Arc<dyn StoreClock>>,
    audit: bool,
    max_connections: u32,
    acquire_timeout: Duration,
    channel: String,
    application_name: String,
    batch_flushers: usize,
    vacuum_every: Option<Duration>,
    variant: VariantHook,
}

impl PgStoreBuilder {
    /// The store's policy (default: [`Policy::default`]).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Puts the tables in `schema` (sets `search_path`; [`PgStore::migrate`]
    /// creates the schema if missing). Letters, digits and `_` only.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    /// **Tests only**: store time comes from `clock` instead of the
    /// database clock.
    pub fn clock_override(mut self, clock: impl StoreClock) -> Self {
        self.clock_override = Some(Arc::new(clock));
        self
    }

    /// Whether to write the `lease_events` audit log (default: on).
    pub fn audit(mut self, on: bool) -> Self {
        self.audit = on;
        self
    }

    /// Pool size.
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = n;
        self
    }

    /// Time to wait for a pooled connection.
    pub fn acquire_timeout(mut self, d: Duration) -> Self {
        self.acquire_timeout = d;
        self
    }

    /// The `LISTEN/NOTIFY` channel for enqueue wake-ups.
    pub fn notify_channel(mut self, channel: impl Into<String>) -> Self {
        self.channel = channel.into();
        self
    }

    /// Most merged worker batches ([`Store::batch`]) in flight at once
    /// (default [`DEFAULT_MERGE_FLUSHERS`]; at least 1).
    pub fn batch_flushers(mut self, n: usize) -> Self {
        self.batch_flushers = n.max(1);
        self
    }

    /// Vacuums `leasehold_jobs` from the store itself: once per `period`,
    /// when the server counts at least [`VACUUM_MIN_DEAD_ROWS`] dead rows
    /// in it, on a connection of its own (default: off; `period` between
    /// [`MIN_VACUUM_PERIOD`] and [`MAX_VACUUM_PERIOD`], checked by
    /// [`PgStoreBuilder::connect`]).
    ///
    /// For a busy queue on a server whose autovacuum looks too seldom:
    /// every claim leaves an index entry that later claim scans step over
    /// until a vacuum. A vacuum also passes over every index of the table,
    /// a cost that grows with the finished jobs it keeps; measure before
    /// choosing a short period (`docs/PERFORMANCE.md`). Several stores on
    /// one database share the work: a vacuum running elsewhere is skipped,
    /// and one that just ran leaves too few dead rows for the next look.
    pub fn vacuum_every(mut self, period: Duration) -> Self {
        self.vacuum_every = Some(period);
        self
    }

    /// The `application_name` its connections report (default `leasehold`).
    pub fn application_name(mut self, name: impl Into<String>) -> Self {
        self.application_name = name.into();
        self
    }

    /// Runs the store with a catalogue variant in force (the simulator's
    /// bug catalogue only; default none), refused unless the SQL stores
    /// carry it or it is planted in PostgreSQL's own code.
    #[cfg(feature = "buggy-variants")]
    #[doc(hidden)]
    pub fn variant(
        mut self,
        v: Option<leasehold_core::variants::Variant>,
    ) -> Result<Self, leasehold_sql::variant_hook::NotCarried> {
        self.variant = VariantHook::for_postgres(v)?;
        Ok(self)
    }

    /// Connects. Does not migrate: call [`PgStore::migrate`] once.
    pub async fn connect(self) -> Result<PgStore, StoreError> {
        let vacuum_every = self.vacuum_every.map(vacuum::check_period).transpose()?;
        let mut opts = PgConnectOptions::from_str(&self.url)
            .map_err(|e| StoreError::Unavailable(format!("bad database url: {e}")))?
            .application_name(&self.application_name);
        if let Some(schema) = &self.schema {
            check_identifier(schema)?;
            opts = opts.options([("search_path", schema.as_str())]);
        }
        check_identifier(&self.channel)?;
        let pool = PgPoolOptions::new()
            .max_connections(self.max_connections.max(1))
            .acquire_timeout(self.acquire_timeout)
            .connect_with(opts)
            .await
            .map_err(error::map)?;
        let vacuum =
            vacuum_every.map(|p| vacuum::Vacuum::start((*pool.connect_options()).clone(), p));
        Ok(PgStore {
            vacuum,
            rollbacks: Arc::default(),
            tx_faults: TxFaults::default(),
            idle: Arc::default(),
            kept_reader: Arc::default(),
            merger: BatchMerger::new(self.batch_flushers),
            wake: listener::PgWake::new(&pool, &self.channel),
            pool,
            schema: self.schema,
            policy: self.policy,
            clock_override: self.clock_override,
            audit: self.audit,
            channel: self.channel,
            variant: self.variant,
        })
    }
}

fn check_identifier(s: &str) -> Result<(), StoreError> {
    let ok = !s.is_empty()
        && s.len() <= 63
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(StoreError::Unavailable(format!(
            "bad identifier {s:?}: letters, digits and _ only"
        )))
    }
}

/// A job store on PostgreSQL. See the crate docs.
pub struct PgStore {
    pool: PgPool,
    schema: Option<String>,
    policy: Policy,
    clock_override: Option<Arc<dyn StoreClock>>,
    audit: bool,
    channel: String,
    /// Wakes idle workers on `NOTIFY` (`Store::work_available`).
    wake: listener::PgWake,
    /// Merges the concurrent `Store::batch` calls of this process's workers.
    merger: BatchMerger,
    /// Faults the simulator arms at commit points (never in production).
    tx_faults: TxFaults,
    /// The queues whose last claim took nothing (`claim_probe.rs`).
    idle: Arc<IdleQueues>,
    /// A read connection kept between reads (`leasehold_sql::kept_conn`).
    kept_reader: Arc<KeptConn<Postgres>>,
    /// The store's own vacuums, when asked for ([`PgStoreBuilder::vacuum_every`]).
    vacuum: Option<vacuum::Vacuum>,
    /// Rollbacks of transactions their callers dropped, still under way.
    rollbacks: Arc<rollback::Rollbacks>,
    /// The catalogue variant in force (none outside the simulator's
    /// catalogue; see `leasehold_sql::variant_hook`).
    variant: VariantHook,
}

impl PgStore {
    /// A builder for a store at `url` (`postgres://user@host:port/db`).
    pub fn builder(url: impl Into<String>) -> PgStoreBuilder {
        PgStoreBuilder {
            url: url.into(),
            schema: None,
            policy: Policy::default(),
            clock_override: None,
            audit: true,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            acquire_timeout: DEFAULT_ACQUIRE_TIMEOUT,
            channel: DEFAULT_NOTIFY_CHANNEL.to_string(),
            application_name: "leasehold".to_string(),
            batch_flushers: DEFAULT_MERGE_FLUSHERS,
            vacuum_every: None,
            variant: VariantHook::NONE,
        }
    }

    /// Whether this store can run the catalogue variant `v`
    /// ([`PgStoreBuilder::variant`]).
    #[cfg(feature = "buggy-variants")]
    #[doc(hidden)]
    pub fn carries_variant(v: leasehold_core::variants::Variant) -> bool {
        leasehold_sql::variant_hook::carries(v)
            || leasehold_sql::variant_hook::POSTGRES_ONLY.contains(&v)
    }

    /// Connects to `url` with `policy`, and migrates.
    pub async fn connect(url: &str, policy: Policy) -> Result<PgStore, StoreError> {
        let store = Self::builder(url).policy(policy).connect().await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Applies the schema migrations in `migrations/postgres/` (idempotent;
    /// concurrent callers serialize on sqlx's migration lock).
    pub async fn migrate(&self) -> Result<(), StoreError> {
        if let Some(schema) = &self.schema {
            // The name was checked by `check_identifier`.
            sqlx::query(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
                .execute(&self.pool)
                .await
                .map_err(error::map)?;
        }
        sqlx::migrate!("../../migrations/postgres")
            .run(&self.pool)
            .await
            .map_err(|e| StoreError::Unavailable(format!("postgres migration: {e}")))
    }

    /// The policy this store applies.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The faults the simulator arms at this store's commit points.
    #[doc(hidden)]
    pub fn tx_faults(&self) -> &TxFaults {
        &self.tx_faults
    }

    /// The connection pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The schema the tables live in, if set.
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    /// What the store's own vacuum task has done ([`PgStoreBuilder::vacuum_every`]);
    /// `None` when it was not asked for.
    pub fn vacuum_stats(&self) -> Option<VacuumStats> {
        self.vacuum.as_ref().map(vacuum::Vacuum::stats)
    }

    /// Closes the pool (and stops the wake listener and the vacuum task):
    /// when it returns, the store holds no connection (see `leasehold_sql::pool_close`).
    pub async fn close(&self) {
        self.wake.close();
        if let Some(v) = &self.vacuum {
            v.close().await;
        }
        self.kept_reader.close();
        close_pool(&self.pool).await;
    }

    /// A read connection: the one kept since the last read, else one from
    /// the pool. Hand it back with `finish` once the read has ended.
    pub(crate) async fn reader(&self) -> Result<Lent<'_, Postgres>, StoreError> {
        self.kept_reader
            .acquire(&self.pool)
            .await
            .map_err(error::map)
    }

    /// The pool's connections, and how many of them are at rest (idle in
    /// the pool, or kept between reads), counted when called: for the
    /// simulator's check that cancelled calls leave no connection busy.
    #[doc(hidden)]
    pub fn connections_at_rest(&self) -> impl Fn() -> (u32, usize) + Send + Sync + 'static {
        let (pool, kept) = (self.pool.clone(), Arc::clone(&self.kept_reader));
        move || (pool.size(), pool.num_idle() + kept.held())
    }

    /// A listener for enqueue notifications on this store's channel.
    pub async fn work_listener(&self) -> Result<WorkListener, StoreError> {
        WorkListener::connect(&self.pool, &self.channel).await
    }
}

impl Store for PgStore {
    async fn now(&self) -> Result<StoreTime, StoreError> {
        self.clock_now_pooled().await
    }

    async fn enqueue(&self, job: NewJob) -> Result<JobId, StoreError> {
        let ids = self.enqueue_many(std::slice::from_ref(&job)).await?;
        ids.into_iter()
            .next()
            .ok_or_else(|| StoreError::Corrupt("enqueue answered no id".into()))
    }

    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Lease>, StoreError> {
        transition::validate_claim(&req.queue, req.lease, req.max, &self.policy)?;
        if self.nothing_to_claim([req.queue.as_str()]).await {
            return Ok(Vec::new());
        }
        let mut granted = in_tx!(self, |conn| self
            .claim_in(conn, std::slice::from_ref(&req), &[0])
            .await)?;
        Ok(granted.pop().unwrap_or_default())
    }

    async fn renew(&self, req: RenewRequest) -> Result<Renewal, StoreError> {
        in_tx!(self, |conn| self.renew_in(conn, &req).await)
    }

    async fn release(&self, req: ReleaseRequest) -> Result<Release, StoreError> {
        let answers = self.release_many(std::slice::from_ref(&req)).await?;
        answers
            .into_iter()
            .next()
            .unwrap_or_else(|| Err(StoreError::Corrupt("release answered nothing".into())))
    }

    async fn batch(&self, req: BatchRequest) -> Result<BatchAnswer, StoreError> {
        // Concurrent batches (the workers of this process) share
        // transactions; each still gets its own answers.
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
        if self.nothing_to_sweep().await {
            return Ok(Vec::new());
        }
        in_tx!(self, |conn| self.sweep_in(conn, req.limit).await)
    }

    async fn cancel(&self, job: JobId) -> Result<CancelOutcome, StoreError> {
        in_tx!(self, |conn| self
            .change_row(conn, job, transition::cancel)
            .await)
    }

    async fn retry_dead(&self, job: JobId) -> Result<leasehold_core::RetryOutcome, StoreError> {
        in_tx!(self, |conn| self
            .change_row(conn, job, transition::retry)
            .await)
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
        read::JOBS.page(&self.pool, &req).await
    }

    async fn count_jobs(&self) -> Result<leasehold_core::JobCounts, StoreError> {
        read::JOBS.counts(&self.pool).await
    }

    async fn put_schedule(&self, schedule: Schedule) -> Result<(), StoreError> {
        schedule.validate(&self.policy)?;
        in_tx!(self, |conn| self.put_schedule_in(conn, &schedule).await)
    }

    async fn remove_schedule(&self, name: String) -> Result<bool, StoreError> {
        in_tx!(self, |conn| schedules::SQL.remove(conn, &name).await)
    }

    async fn fire(&self, req: FireRequest) -> Result<JobId, StoreError> {
        in_tx!(self, |conn| self.fire_in(conn, &req).await)
    }

    async fn prune(&self, req: PruneRequest) -> Result<Vec<JobId>, StoreError> {
        req.validate()?;
        in_tx!(self, |conn| self.prune_in(conn, &req).await)
    }

    async fn list_schedules(
        &self,
        req: ListSchedulesRequest,
    ) -> Result<Vec<ScheduleRecord>, StoreError> {
        // Byte order, as every other store lists names.
        schedules::SQL.page(self.pool(), &req).await
    }

    fn work_available(&self, queue: &str) -> impl std::future::Future<Output = ()> + Send {
        self.wake.work_available(queue)
    }
}

#[cfg(test)]
mod spliced_names {
    use super::check_identifier;

    /// Schema and channel names are spliced into SQL, so only plain
    /// identifiers pass: letters, digits and `_`, not starting with a
    /// digit, at most 63 bytes (PostgreSQL's limit).
    #[test]
    fn only_plain_identifiers_pass() {
        let longest = "a".repeat(63);
        for ok in ["leasehold", "a_1", "_x", "Schema9", longest.as_str()] {
            assert!(check_identifier(ok).is_ok(), "{ok:?}");
        }
        let too_long = "a".repeat(64);
        for bad in [
            "",
            "1abc",
            "a-b",
            "a b",
            "x\"y",
            "é",
            "a;drop",
            too_long.as_str(),
        ] {
            let e = check_identifier(bad).expect_err(bad);
            assert!(e.to_string().contains("bad identifier"), "{bad:?}: {e}");
        }
    }
}
