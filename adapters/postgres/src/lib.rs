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
//! ## Depends on
//! `leasehold-core` and sqlx (PostgreSQL). It must never depend on another
//! adapter, the conformance suite (which tests it from `tests/`) or the
//! simulator (which runs it through its store factory).

#![warn(missing_docs)]

mod coalesce;
mod error;
mod listener;
mod rollback;
mod row;
mod vacuum;

pub use coalesce::{Coalescing, COALESCE_QUEUE_CAP, DEFAULT_COALESCE_BATCH, DEFAULT_FLUSHERS};
pub use listener::WorkListener;
pub use vacuum::{
    VacuumStats, MAX_VACUUM_PERIOD, MIN_VACUUM_PERIOD, VACUUM_CLOSE_WAIT, VACUUM_MIN_DEAD_ROWS,
};

use leasehold_core::transition::{self, EnqueuePlan, ReleasePlan, RenewPlan};
pub(crate) use leasehold_core::tx_faults::AtCommit;
use leasehold_core::tx_faults::TxFaults;
use leasehold_core::{
    BatchAnswer, BatchMerger, BatchRequest, CancelOutcome, ClaimRequest, CrashReport, Event,
    FireRequest, InputError, JobId, JobRecord, Lease, ListRequest, ListSchedulesRequest, NewJob,
    Patience, Policy, Release, ReleaseRequest, RenewRequest, Renewal, Schedule, ScheduleRecord,
    Store, StoreClock, StoreError, StoreTime, SweepRequest, DEFAULT_MERGE_FLUSHERS,
};
use leasehold_sql::job_columns::{decode_job, to_i64, COLUMNS};
use leasehold_sql::pool_close::close_pool;
use row::Batch;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions, PgRow};
use sqlx::Row;
use std::collections::{BTreeMap, BTreeSet};
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
/// Audit rows (transactions) read per round trip by [`PgStore::events`].
const EVENT_PAGE_ROWS: u32 = 1_000;
/// Most pages [`PgStore::events`] reads: a bound on its loop.
const MAX_EVENT_PAGES: usize = 10_000_000;
/// First key of the advisory locks that serialize claims of a limited queue.
const ADVISORY_NAMESPACE: i32 = 0x6c68_6c64; // "lhld"

/// The database clock in ms, stable within a statement; `$1` overrides it.
const STMT_CLOCK: &str =
    "COALESCE($1::bigint, floor(extract(epoch from statement_timestamp()) * 1000)::bigint)";
/// The database clock in ms at the moment of evaluation; `$1` overrides it.
pub(crate) const LIVE_CLOCK: &str =
    "COALESCE($1::bigint, floor(extract(epoch from clock_timestamp()) * 1000)::bigint)";

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
            merger: BatchMerger::new(self.batch_flushers),
            wake: listener::PgWake::new(&pool, &self.channel),
            pool,
            schema: self.schema,
            policy: self.policy,
            clock_override: self.clock_override,
            audit: self.audit,
            channel: self.channel,
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
    /// The store's own vacuums, when asked for ([`PgStoreBuilder::vacuum_every`]).
    vacuum: Option<vacuum::Vacuum>,
    /// Rollbacks of transactions their callers dropped, still under way.
    rollbacks: Arc<rollback::Rollbacks>,
}

/// Runs `$body` (an expression using `$conn: &mut PgConnection`) in one
/// transaction, retrying a conflict at most [`MAX_CONFLICT_RETRIES`] times.
macro_rules! in_tx {
    ($self:ident, |$conn:ident| $body:expr) => {{
        let mut last_conflict = JobId(0);
        let mut answer = None;
        for _ in 0..=MAX_CONFLICT_RETRIES {
            // A transaction dropped by its caller may still hold row locks
            // until its rollback is answered (`rollback.rs`).
            $self.rollbacks.settled().await;
            let tx = $self.pool.begin().await.map_err(error::map)?;
            let mut tx = $crate::rollback::TxGuard::new(tx, &$self.rollbacks);
            let result = {
                let $conn: &mut PgConnection = tx.conn();
                $body
            };
            let result = match result {
                Ok(v) => match $self.tx_faults.at_commit().await {
                    $crate::AtCommit::Commit => Ok(v),
                    $crate::AtCommit::Fail(code) => {
                        Err($crate::raise_injected(tx.conn(), code).await)
                    }
                },
                Err(e) => Err(e),
            };
            match result {
                Ok(v) => {
                    tx.commit().await.map_err(error::map_commit)?;
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

mod batch;
mod schedules;

/// Makes PostgreSQL itself fail the open transaction with `sqlstate`
/// (the simulator's injected serialization or deadlock failure), and
/// answers the error the adapter maps it to.
pub(crate) async fn raise_injected(conn: &mut PgConnection, sqlstate: &str) -> StoreError {
    if !is_sqlstate(sqlstate) {
        return StoreError::Unavailable(format!("bad injected SQLSTATE {sqlstate:?}"));
    }
    let sql = format!(
        "DO $$ BEGIN RAISE EXCEPTION 'leasehold: injected failure' USING ERRCODE = '{sqlstate}'; END $$"
    );
    match sqlx::query(&sql).execute(conn).await {
        Err(e) => error::map(e),
        Ok(_) => StoreError::Unavailable("the injected failure was not raised".into()),
    }
}

/// Whether `s` has a SQLSTATE's shape (five letters or digits), so it can
/// be spliced into the `RAISE` of [`raise_injected`].
fn is_sqlstate(s: &str) -> bool {
    s.len() == 5 && s.chars().all(|c| c.is_ascii_alphanumeric())
}

/// One answer (or input error) per release request.
type ReleaseAnswers = Vec<Result<Release, StoreError>>;

/// Rows loaded under lock, and the store time read after the locks were held.
struct Locked {
    rows: Vec<JobRecord>,
    now: Option<StoreTime>,
}

fn decode_locked(rows: &[PgRow]) -> Result<Locked, StoreError> {
    let mut out = Locked {
        rows: Vec::with_capacity(rows.len()),
        now: None,
    };
    for r in rows {
        out.rows.push(decode_job(r)?);
        let t: i64 = r.try_get(20).map_err(error::map)?;
        out.now = Some(
            out.now
                .map_or(StoreTime(t), |n: StoreTime| n.max(StoreTime(t))),
        );
    }
    Ok(out)
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
        }
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
        close_pool(&self.pool).await;
    }

    /// A listener for enqueue notifications on this store's channel.
    pub async fn work_listener(&self) -> Result<WorkListener, StoreError> {
        WorkListener::connect(&self.pool, &self.channel).await
    }

    fn clock_param(&self) -> Option<i64> {
        self.clock_override.as_ref().map(|c| c.now().0)
    }

    /// The audit log: one event per accepted transition, in insertion order.
    pub async fn events(&self) -> Result<Vec<Event>, StoreError> {
        let mut out = Vec::new();
        let mut after = 0;
        // Bounded: each non-empty page advances `after`; stops on an empty
        // page.
        for _ in 0..MAX_EVENT_PAGES {
            let page = self.events_page(after, EVENT_PAGE_ROWS).await?;
            let Some((seq, _)) = page.last() else {
                break;
            };
            after = *seq;
            out.extend(page.into_iter().map(|(_, e)| e));
        }
        Ok(out)
    }

    /// The audit events of up to `limit` audit rows (transactions) with a
    /// sequence number above `after_seq`, in order, each with its row's
    /// sequence number (shared by the events of one transaction). Page
    /// with the last event's number until a page comes back empty.
    pub async fn events_page(
        &self,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<(i64, Event)>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, events::text FROM leasehold_audit WHERE seq > $1 ORDER BY seq LIMIT $2",
        )
        .bind(after_seq)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(error::map)?;
        let mut out = Vec::new();
        for r in &rows {
            let seq: i64 = r.try_get(0).map_err(error::map)?;
            let text: String = r.try_get(1).map_err(error::map)?;
            let events: Vec<Event> = serde_json::from_str(&text)
                .map_err(|e| StoreError::Corrupt(format!("audit row {seq}: {e}")))?;
            out.extend(events.into_iter().map(|e| (seq, e)));
        }
        Ok(out)
    }

    /// Locks the rows of `ids` (in id order) and reads the clock after.
    async fn lock_rows(
        &self,
        conn: &mut PgConnection,
        ids: &[JobId],
    ) -> Result<Locked, StoreError> {
        let ids: Vec<i64> = ids
            .iter()
            .map(|id| to_i64(id.0))
            .collect::<Result<_, _>>()?;
        let sql = format!(
            "SELECT c.*, {LIVE_CLOCK} FROM (SELECT {COLUMNS} FROM leasehold_jobs \
             WHERE id = ANY($2) ORDER BY id FOR UPDATE) c"
        );
        let rows = sqlx::query(&sql)
            .bind(self.clock_param())
            .bind(ids)
            .fetch_all(&mut *conn)
            .await
            .map_err(error::map)?;
        decode_locked(&rows)
    }

    /// Reads the rows of `ids` without locking them, and the clock after
    /// the statement's snapshot: the write that follows checks each row's
    /// version, so a row changed meanwhile is a conflict (the transaction
    /// retries), never a lost update. Saves a row lock (and its WAL
    /// record) per job on the release path.
    async fn load_rows(
        &self,
        conn: &mut PgConnection,
        ids: &[JobId],
    ) -> Result<Locked, StoreError> {
        // An id too large to be stored has no row: it is answered unknown.
        let ids: Vec<i64> = ids.iter().filter_map(|id| to_i64(id.0).ok()).collect();
        let sql = format!("SELECT {COLUMNS}, {LIVE_CLOCK} FROM leasehold_jobs WHERE id = ANY($2)");
        let rows = sqlx::query(&sql)
            .bind(self.clock_param())
            .bind(ids)
            .fetch_all(&mut *conn)
            .await
            .map_err(error::map)?;
        decode_locked(&rows)
    }

    /// Writes `batch`; fewer rows written than pushed means a conflict.
    async fn write(&self, conn: &mut PgConnection, batch: Batch) -> Result<(), StoreError> {
        let n = batch.len();
        if n == 0 {
            return Ok(());
        }
        let written = batch
            .update()
            .fetch_one(&mut *conn)
            .await
            .map_err(error::map)?;
        if written != n as i64 {
            return Err(StoreError::Conflict(JobId(0)));
        }
        Ok(())
    }

    fn push(&self, batch: &mut Batch, a: &transition::Applied, old: u64) -> Result<(), StoreError> {
        batch.push_row(&a.record, old)?;
        if self.audit {
            batch.push_event(&a.event)?;
        }
        Ok(())
    }

    /// Enqueues many jobs in one transaction; answers their ids in order
    /// (the existing id for a repeated idempotency key). All or nothing: a
    /// bad spec rejects the whole batch.
    pub async fn enqueue_many(&self, jobs: &[NewJob]) -> Result<Vec<JobId>, StoreError> {
        for job in jobs {
            transition::validate_new_job(job, &self.policy)?;
        }
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        in_tx!(self, |conn| self.enqueue_in(conn, jobs).await)
    }

    async fn enqueue_in(
        &self,
        conn: &mut PgConnection,
        jobs: &[NewJob],
    ) -> Result<Vec<JobId>, StoreError> {
        let keys: Vec<String> = jobs
            .iter()
            .filter_map(|j| j.idempotency_key.clone())
            .collect();
        let mut existing: BTreeMap<String, JobRecord> = BTreeMap::new();
        if !keys.is_empty() {
            let sql =
                format!("SELECT {COLUMNS} FROM leasehold_jobs WHERE idempotency_key = ANY($1)");
            let rows = sqlx::query(&sql)
                .bind(&keys)
                .fetch_all(&mut *conn)
                .await
                .map_err(error::map)?;
            for r in &rows {
                let rec = decode_job(r)?;
                if let Some(k) = rec.idempotency_key.clone() {
                    existing.insert(k, rec);
                }
            }
        }
        // Ids only for specs that will insert, so answers for existing keys
        // and rejected specs burn no ids.
        let mut seen = std::collections::BTreeSet::new();
        let fresh = jobs
            .iter()
            .filter(|j| match &j.idempotency_key {
                None => true,
                Some(k) => !existing.contains_key(k) && seen.insert(k.clone()),
            })
            .count();
        let sql = format!(
            "SELECT {STMT_CLOCK}, ARRAY(SELECT nextval('leasehold_job_ids') FROM generate_series(1, $2))"
        );
        let row = sqlx::query(&sql)
            .bind(self.clock_param())
            .bind(fresh as i64)
            .fetch_one(&mut *conn)
            .await
            .map_err(error::map)?;
        let now = StoreTime(row.try_get(0).map_err(error::map)?);
        let ids: Vec<i64> = row.try_get(1).map_err(error::map)?;
        let mut ids = ids.into_iter();
        let mut batch = Batch::default();
        let mut answers = Vec::with_capacity(jobs.len());
        for job in jobs {
            let prior = job.idempotency_key.as_ref().and_then(|k| existing.get(k));
            let id = match prior {
                Some(rec) => rec.id,
                None => JobId(
                    ids.next()
                        .and_then(|i| u64::try_from(i).ok())
                        .ok_or_else(|| StoreError::Corrupt("job id sequence".into()))?,
                ),
            };
            match transition::enqueue(job, id, prior, &self.policy, now)? {
                EnqueuePlan::Existing(id) => answers.push(id),
                EnqueuePlan::Insert(a) => {
                    batch.push_row(&a.record, 0)?;
                    if self.audit {
                        batch.push_event(&a.event)?;
                    }
                    if let Some(k) = &a.record.idempotency_key {
                        existing.insert(k.clone(), a.record.clone());
                    }
                    answers.push(id);
                }
            }
        }
        if batch.len() > 0 {
            batch
                .insert(self.channel.clone())
                .execute(&mut *conn)
                .await
                .map_err(error::map)?;
        }
        Ok(answers)
    }

    /// Each claim's bad input answered on its own (an empty grant for the
    /// valid ones, to be filled), and the indices of the valid claims.
    fn validate_claims(
        &self,
        reqs: &[ClaimRequest],
    ) -> (Vec<Result<Vec<Lease>, StoreError>>, Vec<usize>) {
        let answers: Vec<Result<Vec<Lease>, StoreError>> = reqs
            .iter()
            .map(|r| {
                transition::validate_claim(&r.queue, r.lease, r.max, &self.policy)
                    .map(|()| Vec::new())
                    .map_err(StoreError::Input)
            })
            .collect();
        let valid = (0..reqs.len()).filter(|&i| answers[i].is_ok()).collect();
        (answers, valid)
    }

    /// Answers many claim requests (any holders, any queues) in one
    /// transaction and one write: per queue, one `SKIP LOCKED` scan takes
    /// up to the sum of the requests' `max` (within the queue's parallelism
    /// limit), and the rows are handed out in request order. Each request
    /// gets its own leases, or its own input error.
    pub async fn claim_many(
        &self,
        reqs: &[ClaimRequest],
    ) -> Result<Vec<Result<Vec<Lease>, StoreError>>, StoreError> {
        let (mut answers, valid) = self.validate_claims(reqs);
        if valid.is_empty() {
            return Ok(answers);
        }
        let granted = in_tx!(self, |conn| self.claim_in(conn, reqs, &valid).await)?;
        for (i, leases) in valid.into_iter().zip(granted) {
            answers[i] = Ok(leases);
        }
        Ok(answers)
    }

    /// Claims for the requests `valid` (indices into `reqs`, all validated);
    /// answers their leases in the same order.
    async fn claim_in(
        &self,
        conn: &mut PgConnection,
        reqs: &[ClaimRequest],
        valid: &[usize],
    ) -> Result<Vec<Vec<Lease>>, StoreError> {
        let mut batch = Batch::default();
        let granted = self.claim_rows(conn, reqs, valid, &mut batch).await?;
        self.write(conn, batch).await?;
        Ok(granted)
    }

    /// The claims of [`Self::claim_in`], with their rows pushed on `batch`
    /// for the caller to write.
    async fn claim_rows(
        &self,
        conn: &mut PgConnection,
        reqs: &[ClaimRequest],
        valid: &[usize],
        batch: &mut Batch,
    ) -> Result<Vec<Vec<Lease>>, StoreError> {
        // Queues in name order, so concurrent batches take their advisory
        // locks in one order and never deadlock.
        let mut by_queue: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (slot, &i) in valid.iter().enumerate() {
            by_queue
                .entry(reqs[i].queue.as_str())
                .or_default()
                .push(slot);
        }
        let mut granted: Vec<Vec<Lease>> = vec![Vec::new(); valid.len()];
        for (queue, slots) in by_queue {
            let running = if self.policy.parallelism_of(queue).is_some() {
                sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
                    .bind(ADVISORY_NAMESPACE)
                    .bind(queue)
                    .execute(&mut *conn)
                    .await
                    .map_err(error::map)?;
                let n: i64 = sqlx::query_scalar(
                    "SELECT COUNT(*) FROM leasehold_jobs WHERE queue = $1 AND state = 'running'",
                )
                .bind(queue)
                .fetch_one(&mut *conn)
                .await
                .map_err(error::map)?;
                u32::try_from(n).unwrap_or(u32::MAX)
            } else {
                0
            };
            let wanted = slots
                .iter()
                .fold(0u32, |acc, &slot| acc.saturating_add(reqs[valid[slot]].max));
            let cap = transition::claim_capacity(queue, wanted, running, &self.policy);
            if cap == 0 {
                continue;
            }
            let sql = format!(
                "SELECT {COLUMNS}, {STMT_CLOCK} FROM leasehold_jobs \
                 WHERE queue = $2 AND state = 'pending' AND run_at <= {STMT_CLOCK} \
                 ORDER BY priority DESC, run_at, id LIMIT $3 FOR UPDATE SKIP LOCKED"
            );
            let rows = sqlx::query(&sql)
                .bind(self.clock_param())
                .bind(queue)
                .bind(i64::from(cap))
                .fetch_all(&mut *conn)
                .await
                .map_err(error::map)?;
            let locked = decode_locked(&rows)?;
            let Some(now) = locked.now else {
                continue;
            };
            let slot_reqs: Vec<&ClaimRequest> = slots.iter().map(|&i| &reqs[valid[i]]).collect();
            let handed = self.hand_out(&locked.rows, &slot_reqs, now, batch)?;
            for (&slot, leases) in slots.iter().zip(handed) {
                granted[slot] = leases;
            }
        }
        Ok(granted)
    }

    /// Hands `rows` (candidates in claim order) to `reqs` (claims of one
    /// queue) in request order, each up to its own `max`, as consecutive
    /// claims would take them; the claimed rows go on `batch`.
    fn hand_out(
        &self,
        rows: &[JobRecord],
        reqs: &[&ClaimRequest],
        now: StoreTime,
        batch: &mut Batch,
    ) -> Result<Vec<Vec<Lease>>, StoreError> {
        let mut granted = vec![Vec::new(); reqs.len()];
        let mut rows = rows.iter();
        for (req, leases) in reqs.iter().zip(&mut granted) {
            while leases.len() < req.max as usize {
                let Some(record) = rows.next() else { break };
                match transition::claim(record, &req.worker, req.lease, now) {
                    Ok((applied, lease)) => {
                        self.push(batch, &applied, record.version)?;
                        leases.push(lease);
                    }
                    Err(refusal) => {
                        tracing::debug!(job = %record.id, ?refusal, "claim candidate refused by the core")
                    }
                }
            }
        }
        Ok(granted)
    }

    /// Releases many leases in one transaction and one write. Each request
    /// gets its own answer (or its own input error); requests for the same
    /// job apply in order. The whole batch fails only when the store does
    /// (`Unavailable`: unknown outcome for every request).
    pub async fn release_many(
        &self,
        reqs: &[ReleaseRequest],
    ) -> Result<Vec<Result<Release, StoreError>>, StoreError> {
        if reqs.is_empty() {
            return Ok(Vec::new());
        }
        in_tx!(self, |conn| self.release_in(conn, reqs).await)
    }

    async fn release_in(
        &self,
        conn: &mut PgConnection,
        reqs: &[ReleaseRequest],
    ) -> Result<Vec<Result<Release, StoreError>>, StoreError> {
        let mut batch = Batch::default();
        let answers = self.release_rows(conn, reqs, &mut batch).await?;
        self.write(conn, batch).await?;
        Ok(answers)
    }

    /// The releases of [`Self::release_in`], with their rows and events
    /// pushed on `batch` for the caller to write.
    async fn release_rows(
        &self,
        conn: &mut PgConnection,
        reqs: &[ReleaseRequest],
        batch: &mut Batch,
    ) -> Result<Vec<Result<Release, StoreError>>, StoreError> {
        if reqs.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<JobId> = reqs.iter().map(|r| r.job).collect();
        let loaded = self.load_rows(conn, &ids).await?;
        let (answers, woken) = self.apply_releases(reqs, loaded, batch)?;
        let woken: BTreeSet<&str> = woken.iter().map(String::as_str).collect();
        listener::notify_queues(conn, &self.channel, &woken).await?;
        Ok(answers)
    }

    /// Applies `reqs` in order through the core to the rows `loaded` (a job
    /// without a row is unknown), pushing each changed row (once, at its
    /// last state) and every event on `batch`. Answers each request, and
    /// the queues whose workers the changes wake.
    fn apply_releases(
        &self,
        reqs: &[ReleaseRequest],
        loaded: Locked,
        batch: &mut Batch,
    ) -> Result<(ReleaseAnswers, BTreeSet<String>), StoreError> {
        // Current row per job, and the version it was loaded at.
        let mut rows: BTreeMap<JobId, (u64, JobRecord)> = loaded
            .rows
            .into_iter()
            .map(|r| (r.id, (r.version, r)))
            .collect();
        let mut events = Vec::new();
        let mut answers = Vec::with_capacity(reqs.len());
        for req in reqs {
            let (Some((_, current)), Some(now)) = (rows.get_mut(&req.job), loaded.now) else {
                answers.push(Err(StoreError::Input(InputError::UnknownJob(req.job))));
                continue;
            };
            answers.push(
                match transition::release(current, req.token, &req.outcome, &self.policy, now) {
                    Ok(ReleasePlan::Apply(a)) => {
                        *current = a.record;
                        events.push(a.event);
                        Ok(Release::Committed)
                    }
                    Ok(ReleasePlan::Repeat) => Ok(Release::Committed),
                    Ok(ReleasePlan::Lost) => Ok(Release::Lost),
                    Err(e) => Err(StoreError::Input(e)),
                },
            );
        }
        let mut woken = BTreeSet::new();
        for (loaded_version, record) in rows.values() {
            if record.version != *loaded_version {
                batch.push_row(record, *loaded_version)?;
                // A release always ends a running lease.
                if loaded.now.is_some_and(|now| {
                    leasehold_core::wakes_workers(
                        Some(leasehold_core::JobState::Running),
                        record,
                        now,
                        &self.policy,
                    )
                }) {
                    woken.insert(record.queue.clone());
                }
            }
        }
        if self.audit {
            for e in &events {
                batch.push_event(e)?;
            }
        }
        Ok((answers, woken))
    }

    async fn one_row(
        &self,
        conn: &mut PgConnection,
        id: JobId,
    ) -> Result<(JobRecord, StoreTime), StoreError> {
        let locked = self.lock_rows(conn, &[id]).await?;
        match (locked.rows.into_iter().next(), locked.now) {
            (Some(r), Some(now)) => Ok((r, now)),
            _ => Err(StoreError::Input(InputError::UnknownJob(id))),
        }
    }

    async fn renew_in(
        &self,
        conn: &mut PgConnection,
        req: &RenewRequest,
    ) -> Result<Renewal, StoreError> {
        let (record, now) = self.one_row(conn, req.job).await?;
        match transition::renew(&record, req.token, req.lease, &self.policy, now)? {
            RenewPlan::Renewed(applied, answer) => {
                let mut batch = Batch::default();
                self.push(&mut batch, &applied, record.version)?;
                self.write(conn, batch).await?;
                Ok(answer)
            }
            RenewPlan::Lost => Ok(Renewal::Lost),
        }
    }

    async fn cancel_in(
        &self,
        conn: &mut PgConnection,
        id: JobId,
    ) -> Result<CancelOutcome, StoreError> {
        let (record, now) = self.one_row(conn, id).await?;
        let (applied, answer) = transition::cancel(&record, now);
        if let Some(applied) = applied {
            let mut batch = Batch::default();
            self.push(&mut batch, &applied, record.version)?;
            self.write(conn, batch).await?;
        }
        Ok(answer)
    }

    async fn sweep_in(
        &self,
        conn: &mut PgConnection,
        limit: u32,
    ) -> Result<Vec<CrashReport>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS}, {STMT_CLOCK} FROM leasehold_jobs \
             WHERE state = 'running' AND expires_at <= {STMT_CLOCK} \
             ORDER BY expires_at, id LIMIT $2 FOR UPDATE SKIP LOCKED"
        );
        let rows = sqlx::query(&sql)
            .bind(self.clock_param())
            .bind(i64::from(limit))
            .fetch_all(&mut *conn)
            .await
            .map_err(error::map)?;
        let locked = decode_locked(&rows)?;
        let Some(now) = locked.now else {
            return Ok(Vec::new());
        };
        let mut batch = Batch::default();
        let mut reports = Vec::with_capacity(locked.rows.len());
        let mut woken = std::collections::BTreeSet::new();
        for record in &locked.rows {
            // The core re-checks the guard on the row as locked.
            if let Ok((applied, report)) = transition::sweep(record, now) {
                if leasehold_core::wakes_workers(
                    Some(record.state),
                    &applied.record,
                    now,
                    &self.policy,
                ) {
                    woken.insert(record.queue.as_str());
                }
                self.push(&mut batch, &applied, record.version)?;
                reports.push(report);
            }
        }
        listener::notify_queues(conn, &self.channel, &woken).await?;
        self.write(conn, batch).await?;
        Ok(reports)
    }
}

impl Store for PgStore {
    async fn now(&self) -> Result<StoreTime, StoreError> {
        if let Some(c) = &self.clock_override {
            return Ok(c.now());
        }
        let sql = format!("SELECT {LIVE_CLOCK}");
        let t: i64 = sqlx::query_scalar(&sql)
            .bind(None::<i64>)
            .fetch_one(&self.pool)
            .await
            .map_err(error::map)?;
        Ok(StoreTime(t))
    }

    async fn enqueue(&self, job: NewJob) -> Result<JobId, StoreError> {
        let ids = self.enqueue_many(std::slice::from_ref(&job)).await?;
        ids.into_iter()
            .next()
            .ok_or_else(|| StoreError::Corrupt("enqueue answered no id".into()))
    }

    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Lease>, StoreError> {
        transition::validate_claim(&req.queue, req.lease, req.max, &self.policy)?;
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
        in_tx!(self, |conn| self.sweep_in(conn, req.limit).await)
    }

    async fn cancel(&self, job: JobId) -> Result<CancelOutcome, StoreError> {
        in_tx!(self, |conn| self.cancel_in(conn, job).await)
    }

    async fn get(&self, job: JobId) -> Result<Option<JobRecord>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM leasehold_jobs WHERE id = $1");
        let row = sqlx::query(&sql)
            .bind(to_i64(job.0)?)
            .fetch_optional(&self.pool)
            .await
            .map_err(error::map)?;
        row.as_ref().map(decode_job).transpose()
    }

    async fn list(&self, req: ListRequest) -> Result<Vec<JobRecord>, StoreError> {
        let sql =
            format!("SELECT {COLUMNS} FROM leasehold_jobs WHERE id > $1 ORDER BY id LIMIT $2");
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
        in_tx!(self, |conn| self.put_schedule_in(conn, &schedule).await)
    }

    async fn remove_schedule(&self, name: String) -> Result<bool, StoreError> {
        in_tx!(self, |conn| Self::remove_schedule_in(conn, &name).await)
    }

    async fn fire(&self, req: FireRequest) -> Result<JobId, StoreError> {
        in_tx!(self, |conn| self.fire_in(conn, &req).await)
    }

    async fn list_schedules(
        &self,
        req: ListSchedulesRequest,
    ) -> Result<Vec<ScheduleRecord>, StoreError> {
        self.list_schedules_in(&req).await
    }

    fn work_available(&self, queue: &str) -> impl std::future::Future<Output = ()> + Send {
        self.wake.work_available(queue)
    }
}

#[cfg(test)]
mod spliced_names {
    use super::{check_identifier, is_sqlstate};

    /// Only a SQLSTATE's shape is spliced into the injected `RAISE`.
    #[test]
    fn only_sqlstates_are_raised() {
        for ok in ["40001", "40P01", "23505"] {
            assert!(is_sqlstate(ok), "{ok:?}");
        }
        for bad in ["", "4000", "400011", "40'01", "4000\u{e9}", "40 01"] {
            assert!(!is_sqlstate(bad), "{bad:?}");
        }
    }

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
