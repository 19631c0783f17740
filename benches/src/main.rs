//! # leasehold-bench
//!
//! Enqueues N no-op jobs, then drains them with W concurrent workers on
//! Postgres (`DATABASE_URL`, a fresh schema) and on SQLite (a temp file),
//! and prints throughput, claim→start latency and the settings.
//!
//! ```text
//! scripts/with-postgres.sh cargo run --release -p leasehold-bench -- --jobs 20000 --workers 16
//! ```
//!
//! Modes (`--mode`):
//! - `batch` (default): each worker loops "claim up to `--batch` leases,
//!   start each (no-op), release them all with one batch release". This is
//!   the store's throughput with batched claims and releases, the way
//!   graphile-worker's batched mode is measured. Latency is from sending
//!   the claim to the job starting, on the worker's monotonic clock (µs).
//! - `worker`: first a `batch` drain (the store's batched ceiling), then W
//!   instances of the real `leasehold_core::Worker` runtime with its
//!   **default** configuration (only `--concurrency` overrides one
//!   setting), on the same store; prints both figures and their ratio.
//!   Each worker sends its queued releases and its claims for the free
//!   slots in one `Store::batch`. Latency is from the store granting the
//!   lease (store time) to the handler starting (host wall clock, same
//!   machine), so it has millisecond resolution.
//! - `latency`: jobs arrive at `--rate` per second on an idle queue for
//!   `--duration` seconds and one default `Worker` drains them; reports
//!   enqueue-commit → handler-start percentiles (`latency.rs`).
//! - `soak`: a long run with retention on: `--jobs` jobs arrive at
//!   `--rate`, default `Worker`s drain them, the core's `Pruner` prunes;
//!   sizes every `--report-every` seconds, then checks that nothing was
//!   lost, run twice or pruned early (`soak.rs`).
//! - `prune-claims` (PostgreSQL): claim throughput and latency of default
//!   `Worker`s without and during the prune of a `--jobs` backlog, and the
//!   lock views during it (`prune_claims.rs`).
//!
//! ## Depends on
//! `leasehold-core` and the adapters it measures, nothing of the simulator.

#![warn(missing_docs)]

mod args;
mod claim_timing;
mod cpu;
mod figures;
mod latency;
mod load;
mod lock_watch;
mod pg_schema;
mod pg_sizes;
mod prune_claims;
mod pruned_answers;
mod rounds;
mod soak;
mod soak_ledger;
mod sqlite_sizes;
mod store_sizes;
mod wal;

use args::{Mode, Settings};
use clap::Parser;
use figures::{Figures, ENQUEUE_CHUNK};

use leasehold_core::worker::RuntimeEvent;
use leasehold_core::{
    shutdown_channel, ClaimRequest, Handler, HandlerError, JobId, Lease, Millis, NewJob, Policy,
    Release, ReleaseRequest, StopSignal, Store, StoreError, TokioRuntime, Worker, WorkerConfig,
    WorkerId,
};
use leasehold_postgres::{Coalescing, PgStore, DEFAULT_COALESCE_BATCH, DEFAULT_FLUSHERS};
use leasehold_sqlite::SqliteStore;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wal::WalSample;

/// The queue of the batched drains (and of the prune-claims backlog).
pub const QUEUE: &str = "bench";
/// The lease every claim asks for.
pub const LEASE: Millis = Millis(60_000);
/// Longest a drain may take before the bench gives up.
const DRAIN_DEADLINE: Duration = Duration::from_secs(600);

/// The batch operations both adapters offer as inherent methods.
trait BatchStore: Store {
    fn enqueue_batch(
        &self,
        jobs: &[NewJob],
    ) -> impl Future<Output = Result<Vec<JobId>, StoreError>> + Send;
    fn release_batch(
        &self,
        reqs: &[ReleaseRequest],
    ) -> impl Future<Output = Result<Vec<Result<Release, StoreError>>, StoreError>> + Send;
    /// Brings the store to steady state before timing (statistics).
    fn settle(&self) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// [`BatchStore`] for a SQL store: its inherent `enqueue_many` and
/// `release_many`, and `$analyze` to bring its statistics up to date. Both
/// SQL stores offer the same inherent methods; only this bench needs them
/// behind one trait, so the impl is written once here.
macro_rules! sql_batch_store {
    ($store:ty, $analyze:literal) => {
        impl BatchStore for $store {
            fn enqueue_batch(
                &self,
                jobs: &[NewJob],
            ) -> impl Future<Output = Result<Vec<JobId>, StoreError>> + Send {
                self.enqueue_many(jobs)
            }
            fn release_batch(
                &self,
                reqs: &[ReleaseRequest],
            ) -> impl Future<Output = Result<Vec<Result<Release, StoreError>>, StoreError>> + Send
            {
                self.release_many(reqs)
            }
            async fn settle(&self) -> Result<(), StoreError> {
                sqlx::query($analyze)
                    .execute(self.pool())
                    .await
                    .map_err(|e| StoreError::Unavailable(e.to_string()))?;
                Ok(())
            }
        }
    };
}

sql_batch_store!(PgStore, "ANALYZE leasehold_jobs");
sql_batch_store!(SqliteStore, "ANALYZE");

impl BatchStore for Coalescing {
    fn enqueue_batch(
        &self,
        jobs: &[NewJob],
    ) -> impl Future<Output = Result<Vec<JobId>, StoreError>> + Send {
        self.inner().enqueue_many(jobs)
    }
    fn release_batch(
        &self,
        reqs: &[ReleaseRequest],
    ) -> impl Future<Output = Result<Vec<Result<Release, StoreError>>, StoreError>> + Send {
        self.inner().release_many(reqs)
    }
    fn settle(&self) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.inner().settle()
    }
}

/// Opens every pooled connection and prepares the statements the drain
/// uses (a claim on an empty queue, a release of an unknown job), so that
/// connection set-up is not timed; with `analyze`, then brings the store's
/// statistics up to date (`BatchStore::settle`).
async fn warm_up<S: BatchStore>(
    store: &Arc<S>,
    workers: usize,
    analyze: bool,
) -> Result<(), StoreError> {
    let mut tasks = Vec::new();
    for w in 0..workers {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..3 {
                store
                    .claim(ClaimRequest {
                        worker: WorkerId::new(format!("warm-{w}")),
                        queue: "warm-up".into(),
                        lease: LEASE,
                        max: 1,
                    })
                    .await?;
                store
                    .release_batch(&[ReleaseRequest {
                        job: JobId(u64::MAX >> 2),
                        token: leasehold_core::Token(1),
                        outcome: leasehold_core::Outcome::Succeeded(Vec::new()),
                    }])
                    .await?;
            }
            Ok::<(), StoreError>(())
        }));
    }
    for t in tasks {
        t.await
            .map_err(|e| StoreError::Unavailable(e.to_string()))??;
    }
    if analyze {
        store.settle().await?;
    }
    Ok(())
}

async fn enqueue_all<S: BatchStore>(store: &S, n: usize) -> Result<Duration, StoreError> {
    let t = Instant::now();
    let mut left = n;
    while left > 0 {
        let k = left.min(ENQUEUE_CHUNK);
        let jobs: Vec<NewJob> = (0..k).map(|_| NewJob::new(QUEUE, Vec::new())).collect();
        store.enqueue_batch(&jobs).await?;
        left -= k;
    }
    Ok(t.elapsed())
}

async fn drain_batched<S: BatchStore>(store: Arc<S>, s: &Settings) -> Result<Figures, StoreError> {
    let enqueue = enqueue_all(&*store, s.jobs()).await?;
    warm_up(&store, s.workers(), s.analyze()).await?;
    let done = Arc::new(AtomicU64::new(0));
    let claims = Arc::new(AtomicU64::new(0));
    let t = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..s.workers() {
        let (store, done, claims) = (store.clone(), done.clone(), claims.clone());
        let (n, batch) = (s.jobs, s.batch);
        tasks.push(tokio::spawn(async move {
            let worker = WorkerId::new(format!("bench-{w}"));
            let mut lat = Vec::new();
            let started = Instant::now();
            while done.load(Ordering::Relaxed) < n {
                if started.elapsed() > DRAIN_DEADLINE {
                    return Err(StoreError::Unavailable("drain deadline passed".into()));
                }
                let sent = Instant::now();
                let leases = store
                    .claim(ClaimRequest {
                        worker: worker.clone(),
                        queue: QUEUE.into(),
                        lease: LEASE,
                        max: batch,
                    })
                    .await?;
                claims.fetch_add(1, Ordering::Relaxed);
                if leases.is_empty() {
                    // Others hold the rest; wait for them to finish.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    continue;
                }
                let mut reqs = Vec::with_capacity(leases.len());
                for l in leases {
                    // The job "starts" here: a no-op.
                    lat.push(sent.elapsed().as_micros() as u64);
                    reqs.push(ReleaseRequest {
                        job: l.job,
                        token: l.token,
                        outcome: leasehold_core::Outcome::Succeeded(Vec::new()),
                    });
                }
                let answers = store.release_batch(&reqs).await?;
                for a in &answers {
                    if *a != Ok(Release::Committed) {
                        return Err(StoreError::Corrupt(format!("release answered {a:?}")));
                    }
                }
                done.fetch_add(reqs.len() as u64, Ordering::Relaxed);
            }
            Ok(lat)
        }));
    }
    let mut latencies_us = Vec::with_capacity(s.jobs());
    for task in tasks {
        latencies_us.extend(
            task.await
                .map_err(|e| StoreError::Unavailable(e.to_string()))??,
        );
    }
    Ok(Figures {
        enqueue,
        drain: t.elapsed(),
        latencies_us,
        claims: claims.load(Ordering::Relaxed),
        ceiling: None,
        config: None,
        cpu: None,
        wal: None,
    })
}

/// The no-op handler of worker mode; records grant→start latency.
struct NoOp {
    latencies_us: Arc<Mutex<Vec<u64>>>,
    /// The lease the workers ask for (grant time = expiry − lease).
    lease: Millis,
}

impl Handler for NoOp {
    fn handle(
        &self,
        lease: Lease,
        _stop: StopSignal,
    ) -> impl Future<Output = Result<Vec<u8>, HandlerError>> + Send {
        let granted_ms = lease.expires_at.0 - self.lease.0 as i64;
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        let lat = (now_ms - granted_ms).max(0) as u64 * 1000;
        if let Ok(mut l) = self.latencies_us.lock() {
            l.push(lat);
        }
        std::future::ready(Ok(Vec::new()))
    }
}

async fn drain_workers<S: BatchStore>(store: Arc<S>, s: &Settings) -> Result<Figures, StoreError> {
    let enqueue = enqueue_all(&*store, s.jobs()).await?;
    warm_up(&store, s.workers(), s.analyze()).await?;
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(s.jobs())));
    let committed = Arc::new(AtomicU64::new(0));
    let all_done = Arc::new(tokio::sync::Notify::new());
    let (stop, shutdown) = shutdown_channel();
    let t = Instant::now();
    let mut tasks = Vec::new();
    let mut config = String::new();
    for w in 0..s.workers() {
        // The default configuration: users run the `Worker` as built.
        let mut builder = WorkerConfig::builder(format!("bench-{w}"), QUEUE);
        if let Some(c) = s.concurrency {
            builder = builder.concurrency(c);
        }
        let cfg = builder
            .build()
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        config = format!(
            "{} (concurrency={}, lease={}, renew_interval={}, poll_interval={}, request_timeout={})",
            if s.concurrency.is_some() { "defaults but --concurrency" } else { "defaults" },
            cfg.concurrency, cfg.lease, cfg.renew_interval, cfg.poll_interval, cfg.request_timeout
        );
        let lease = cfg.lease;
        let (committed, all_done, n) = (committed.clone(), all_done.clone(), s.jobs);
        let worker = Worker::new(
            store.clone(),
            NoOp {
                latencies_us: latencies.clone(),
                lease,
            },
            TokioRuntime::new(),
            cfg,
        )
        .with_observer(move |e: &RuntimeEvent| {
            if let RuntimeEvent::Released {
                answer: Some(Release::Committed),
                ..
            } = e
            {
                if committed.fetch_add(1, Ordering::SeqCst) + 1 == n {
                    all_done.notify_one();
                }
            }
        });
        tasks.push(tokio::spawn(worker.run(shutdown.clone())));
    }
    if tokio::time::timeout(DRAIN_DEADLINE, all_done.notified())
        .await
        .is_err()
    {
        return Err(StoreError::Unavailable("drain deadline passed".into()));
    }
    let drain = t.elapsed();
    stop.shutdown();
    let mut claims = 0;
    for task in tasks {
        let stats = task
            .await
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        claims += stats.claimed;
    }
    let latencies_us = latencies.lock().map(|l| l.clone()).unwrap_or_default();
    Ok(Figures {
        enqueue,
        drain,
        latencies_us,
        claims,
        ceiling: None,
        config: Some(config),
        cpu: None,
        wal: None,
    })
}

async fn run<S: BatchStore>(store: Arc<S>, s: &Settings) -> Result<Figures, StoreError> {
    let before = cpu::CpuSample::now();
    let mut f = drain(store, s).await?;
    f.cpu = before.zip(cpu::CpuSample::now()).map(|(a, b)| a.until(&b));
    Ok(f)
}

async fn drain<S: BatchStore>(store: Arc<S>, s: &Settings) -> Result<Figures, StoreError> {
    match s.mode {
        Mode::Batch => drain_batched(store, s).await,
        Mode::Worker => {
            // The ceiling first, on the same store and connections.
            let ceiling = drain_batched(store.clone(), s).await?;
            let mut f = drain_workers(store, s).await?;
            f.ceiling = Some(s.jobs as f64 / ceiling.drain.as_secs_f64().max(1e-9));
            Ok(f)
        }
        Mode::Latency | Mode::Soak | Mode::PruneClaims => {
            unreachable!("these modes run in their own files")
        }
    }
}

/// Prints one store's report for round `round`: human lines on stdout, or
/// with `--json` one JSON object on stdout and the human lines on stderr.
fn report(backend: &str, detail: &str, s: &Settings, round: usize, f: &Figures) {
    let (mut text, mut value) = figures::report(backend, detail, s, f);
    if s.rounds() > 1 {
        text = text.replacen('\n', &format!("\n   round {round} of {}\n", s.rounds), 1);
    }
    value["round"] = round.into();
    emit(s, &text, &value);
}

/// After the last round: the range of each figure over the rounds.
fn report_rounds(backend: &str, s: &Settings, rounds: &[Figures]) {
    if rounds.len() > 1 {
        let (text, value) = rounds::report(backend, s, &rounds::summarize(s, rounds));
        emit(s, &text, &value);
    }
}

fn emit(s: &Settings, text: &str, value: &serde_json::Value) {
    if s.json {
        eprintln!("{text}");
        println!("{value}");
    } else {
        println!("{text}");
    }
}

async fn bench_postgres(s: &Settings) -> Result<(), StoreError> {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        println!(
            "== postgres: SKIPPED (DATABASE_URL is not set; run under scripts/with-postgres.sh)"
        );
        return Ok(());
    };
    let schema = format!("lh_bench_{}", std::process::id());
    let mut builder = PgStore::builder(&url)
        .schema(schema.clone())
        .policy(Policy::default())
        .audit(s.audit())
        .max_connections((s.workers + 2).min(64) as u32);
    if let Some(n) = s.flushers {
        builder = builder.batch_flushers(n as usize);
    }
    if let Some(ms) = s.vacuum_every {
        builder = builder.vacuum_every(Duration::from_millis(ms));
    }
    let store = builder.connect().await?;
    store.migrate().await?;
    let version: String = sqlx::query_scalar("SHOW server_version")
        .fetch_one(store.pool())
        .await
        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
    let fsync: String = sqlx::query_scalar("SHOW fsync")
        .fetch_one(store.pool())
        .await
        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
    let sync_commit: String = sqlx::query_scalar("SHOW synchronous_commit")
        .fetch_one(store.pool())
        .await
        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
    let store = Arc::new(store);
    let detail = format!(
        "PostgreSQL {version}, fsync={fsync}, synchronous_commit={sync_commit}, pool={}{}{}",
        (s.workers + 2).min(64),
        s.flushers
            .map(|n| format!(", {n} merged batches in flight"))
            .unwrap_or_default(),
        if s.coalesce {
            format!(", coalescing claims/releases (batch {DEFAULT_COALESCE_BATCH}, {DEFAULT_FLUSHERS} flushers each)")
        } else {
            String::new()
        }
    );
    let coalescing = s.coalesce.then(|| {
        Arc::new(Coalescing::new(
            store.clone(),
            DEFAULT_COALESCE_BATCH,
            DEFAULT_FLUSHERS,
        ))
    });
    let mut rounds = Vec::new();
    let mut result = Ok(());
    for round in 1..=s.rounds() {
        let before = WalSample::now(store.pool()).await;
        let f = match &coalescing {
            Some(c) => run(c.clone(), s).await,
            None => run(store.clone(), s).await,
        };
        let mut f = match f {
            Ok(f) => f,
            Err(e) => {
                result = Err(e);
                break;
            }
        };
        let after = WalSample::now(store.pool()).await;
        f.wal = before.zip(after).map(|(a, b)| a.until(&b));
        report("postgres", &detail, s, round, &f);
        rounds.push(f);
    }
    if let (Some(every), Some(v)) = (s.vacuum_every, store.vacuum_stats()) {
        let mean = v.micros.checked_div(v.runs).unwrap_or(0) as f64 / 1000.0;
        let line = format!(
            "   store vacuum every {every} ms: {} run(s), {mean:.1} ms each on average, {} idle look(s), {} failed",
            v.runs, v.idle, v.failed
        );
        if s.json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    let _ = sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .execute(store.pool())
        .await;
    report_rounds("postgres", s, &rounds);
    result
}

/// A migrated SQLite store in file `file` of a fresh temporary directory
/// (removed when the returned handle drops), with the run's audit and
/// durability settings.
async fn temp_sqlite(
    s: &Settings,
    file: &str,
) -> Result<(tempfile::TempDir, SqliteStore), StoreError> {
    let dir = tempfile::tempdir().map_err(|e| StoreError::Unavailable(e.to_string()))?;
    let store = SqliteStore::builder(dir.path().join(file))
        .audit(s.audit())
        .durability(s.sqlite_durability())
        .open()
        .await?;
    store.migrate().await?;
    Ok((dir, store))
}

async fn bench_sqlite(s: &Settings) -> Result<(), StoreError> {
    let (dir, store) = temp_sqlite(s, "bench.db").await?;
    let detail = format!(
        "WAL, synchronous={:?}, file in {}",
        s.sqlite_durability(),
        dir.path().display()
    );
    let store = Arc::new(store);
    let mut rounds = Vec::new();
    for round in 1..=s.rounds() {
        let f = run(store.clone(), s).await?;
        report("sqlite", &detail, s, round, &f);
        rounds.push(f);
    }
    report_rounds("sqlite", s, &rounds);
    Ok(())
}

fn main() {
    let s = Settings::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    // Latency mode has its own settings and report (`latency.rs`).
    if s.mode == Mode::Latency {
        if !latency::main(&s, &rt) {
            std::process::exit(1);
        }
        return;
    }
    // Soak mode has its own report and checks (`soak.rs`), the
    // prune-claims mode its own report (`prune_claims.rs`).
    let own = match s.mode {
        Mode::Soak => Some(soak::main as fn(&Settings, &tokio::runtime::Runtime) -> bool),
        Mode::PruneClaims => {
            Some(prune_claims::main as fn(&Settings, &tokio::runtime::Runtime) -> bool)
        }
        _ => None,
    };
    if let Some(mode) = own {
        if !mode(&s, &rt) {
            std::process::exit(1);
        }
        return;
    }
    let header = format!(
        "leasehold-bench: {} no-op jobs, {} workers, {} cores",
        s.jobs,
        s.workers,
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    if s.json {
        eprintln!("{header}");
    } else {
        println!("{header}");
    }
    let mut failed = false;
    for b in s.backends() {
        let r = match b {
            "postgres" => rt.block_on(bench_postgres(&s)),
            _ => rt.block_on(bench_sqlite(&s)),
        };
        if let Err(e) = r {
            eprintln!("{b}: failed: {e}");
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
}
