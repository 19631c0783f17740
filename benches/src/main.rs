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
//! - `worker`: W instances of the real `leasehold_core::Worker` runtime,
//!   each running up to `--concurrency` leases (claims ask for the free
//!   slots; one release per job). Latency is from the store granting the
//!   lease (store time) to the handler starting (host wall clock, same
//!   machine), so it has millisecond resolution.

#![warn(missing_docs)]

use leasehold_core::worker::RuntimeEvent;
use leasehold_core::{
    shutdown_channel, ClaimRequest, Handler, HandlerError, JobId, Lease, Millis, NewJob, Policy,
    Release, ReleaseRequest, StopSignal, Store, StoreError, TokioRuntime, Worker, WorkerConfig,
    WorkerId,
};
use leasehold_postgres::{Coalescing, PgStore, DEFAULT_COALESCE_BATCH, DEFAULT_FLUSHERS};
use leasehold_sqlite::{Durability, SqliteStore};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const QUEUE: &str = "bench";
const LEASE: Millis = Millis(60_000);
const ENQUEUE_CHUNK: usize = 1_000;
/// Longest a drain may take before the bench gives up.
const DRAIN_DEADLINE: Duration = Duration::from_secs(600);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Batch,
    Worker,
}

#[derive(Clone, Debug)]
struct Settings {
    jobs: usize,
    workers: usize,
    batch: u32,
    concurrency: u32,
    mode: Mode,
    audit: bool,
    backends: Vec<String>,
    sqlite_sync: Durability,
    coalesce: bool,
}

fn usage() -> ! {
    eprintln!(
        "usage: leasehold-bench [--jobs N] [--workers W] [--batch B] [--concurrency C]\n\
         \x20                      [--mode batch|worker] [--no-audit] [--backend postgres|sqlite|both]\n\
         \x20                      [--sqlite-sync full|normal] [--coalesce]"
    );
    std::process::exit(2)
}

fn parse_args() -> Settings {
    let mut s = Settings {
        jobs: 20_000,
        workers: 16,
        batch: 200,
        concurrency: 16,
        mode: Mode::Batch,
        audit: true,
        backends: vec!["postgres".into(), "sqlite".into()],
        sqlite_sync: Durability::Full,
        coalesce: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--jobs" => s.jobs = val().parse().unwrap_or_else(|_| usage()),
            "--workers" => s.workers = val().parse().unwrap_or_else(|_| usage()),
            "--batch" => s.batch = val().parse().unwrap_or_else(|_| usage()),
            "--concurrency" => s.concurrency = val().parse().unwrap_or_else(|_| usage()),
            "--mode" => {
                s.mode = match val().as_str() {
                    "batch" => Mode::Batch,
                    "worker" => Mode::Worker,
                    _ => usage(),
                }
            }
            "--no-audit" => s.audit = false,
            "--coalesce" => s.coalesce = true,
            "--backend" => {
                s.backends = match val().as_str() {
                    "both" => vec!["postgres".into(), "sqlite".into()],
                    b @ ("postgres" | "sqlite") => vec![b.to_string()],
                    _ => usage(),
                }
            }
            "--sqlite-sync" => {
                s.sqlite_sync = match val().as_str() {
                    "full" => Durability::Full,
                    "normal" => Durability::Normal,
                    _ => usage(),
                }
            }
            "-h" | "--help" => usage(),
            _ => usage(),
        }
    }
    if s.jobs == 0 || s.workers == 0 || s.batch == 0 || s.concurrency == 0 {
        usage();
    }
    s
}

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

impl BatchStore for PgStore {
    fn enqueue_batch(
        &self,
        jobs: &[NewJob],
    ) -> impl Future<Output = Result<Vec<JobId>, StoreError>> + Send {
        self.enqueue_many(jobs)
    }
    fn release_batch(
        &self,
        reqs: &[ReleaseRequest],
    ) -> impl Future<Output = Result<Vec<Result<Release, StoreError>>, StoreError>> + Send {
        self.release_many(reqs)
    }
    async fn settle(&self) -> Result<(), StoreError> {
        sqlx::query("ANALYZE leasehold_jobs")
            .execute(self.pool())
            .await
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        Ok(())
    }
}

impl BatchStore for SqliteStore {
    fn enqueue_batch(
        &self,
        jobs: &[NewJob],
    ) -> impl Future<Output = Result<Vec<JobId>, StoreError>> + Send {
        self.enqueue_many(jobs)
    }
    fn release_batch(
        &self,
        reqs: &[ReleaseRequest],
    ) -> impl Future<Output = Result<Vec<Result<Release, StoreError>>, StoreError>> + Send {
        self.release_many(reqs)
    }
    async fn settle(&self) -> Result<(), StoreError> {
        sqlx::query("ANALYZE")
            .execute(self.pool())
            .await
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        Ok(())
    }
}

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
/// connection set-up is not timed.
async fn warm_up<S: BatchStore>(store: &Arc<S>, workers: usize) -> Result<(), StoreError> {
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
    store.settle().await
}

/// What one drain measured.
struct Figures {
    enqueue: Duration,
    drain: Duration,
    latencies_us: Vec<u64>,
    claims: u64,
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
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
    let enqueue = enqueue_all(&*store, s.jobs).await?;
    warm_up(&store, s.workers).await?;
    let done = Arc::new(AtomicU64::new(0));
    let claims = Arc::new(AtomicU64::new(0));
    let t = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..s.workers {
        let (store, done, claims) = (store.clone(), done.clone(), claims.clone());
        let (n, batch) = (s.jobs as u64, s.batch);
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
    let mut latencies_us = Vec::with_capacity(s.jobs);
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
    })
}

/// The no-op handler of worker mode; records grant→start latency.
struct NoOp {
    latencies_us: Arc<Mutex<Vec<u64>>>,
}

impl Handler for NoOp {
    fn handle(
        &self,
        lease: Lease,
        _stop: StopSignal,
    ) -> impl Future<Output = Result<Vec<u8>, HandlerError>> + Send {
        let granted_ms = lease.expires_at.0 - LEASE.0 as i64;
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
    let enqueue = enqueue_all(&*store, s.jobs).await?;
    warm_up(&store, s.workers).await?;
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(s.jobs)));
    let committed = Arc::new(AtomicU64::new(0));
    let all_done = Arc::new(tokio::sync::Notify::new());
    let (stop, shutdown) = shutdown_channel();
    let t = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..s.workers {
        let cfg = WorkerConfig::builder(format!("bench-{w}"), QUEUE)
            .concurrency(s.concurrency)
            .lease(LEASE)
            .renew_interval(Millis(20_000))
            .poll_interval(Millis(2))
            .build()
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        let (committed, all_done, n) = (committed.clone(), all_done.clone(), s.jobs as u64);
        let worker = Worker::new(
            store.clone(),
            NoOp {
                latencies_us: latencies.clone(),
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
    })
}

async fn run<S: BatchStore>(store: Arc<S>, s: &Settings) -> Result<Figures, StoreError> {
    match s.mode {
        Mode::Batch => drain_batched(store, s).await,
        Mode::Worker => drain_workers(store, s).await,
    }
}

fn report(backend: &str, detail: &str, s: &Settings, f: &mut Figures) {
    f.latencies_us.sort_unstable();
    let rate = s.jobs as f64 / f.drain.as_secs_f64();
    let enq_rate = s.jobs as f64 / f.enqueue.as_secs_f64();
    println!("== {backend} ({detail})");
    match s.mode {
        Mode::Batch => println!(
            "   settings: mode=batch jobs={} workers={} claim/release batch={} lease={} audit={}",
            s.jobs, s.workers, s.batch, LEASE, s.audit
        ),
        Mode::Worker => println!(
            "   settings: mode=worker (leasehold_core::Worker) jobs={} workers={} concurrency/worker={} lease={} audit={}",
            s.jobs, s.workers, s.concurrency, LEASE, s.audit
        ),
    }
    println!(
        "   enqueue:  {:.0} jobs/s ({:.2} s, batches of {ENQUEUE_CHUNK})",
        enq_rate,
        f.enqueue.as_secs_f64()
    );
    println!(
        "   drain:    {:.0} jobs/s ({} jobs in {:.3} s, {} {})",
        rate,
        s.jobs,
        f.drain.as_secs_f64(),
        f.claims,
        match s.mode {
            Mode::Batch => "claim calls",
            Mode::Worker => "leases granted",
        }
    );
    let unit = if s.mode == Mode::Batch {
        "claim sent"
    } else {
        "lease granted"
    };
    println!(
        "   {unit} -> start latency: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} samples)",
        percentile(&f.latencies_us, 0.50) as f64 / 1000.0,
        percentile(&f.latencies_us, 0.99) as f64 / 1000.0,
        f.latencies_us.last().copied().unwrap_or(0) as f64 / 1000.0,
        f.latencies_us.len()
    );
}

async fn bench_postgres(s: &Settings) -> Result<(), StoreError> {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        println!(
            "== postgres: SKIPPED (DATABASE_URL is not set; run under scripts/with-postgres.sh)"
        );
        return Ok(());
    };
    let schema = format!("lh_bench_{}", std::process::id());
    let store = PgStore::builder(&url)
        .schema(schema.clone())
        .policy(Policy::default())
        .audit(s.audit)
        .max_connections((s.workers as u32 + 2).min(64))
        .connect()
        .await?;
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
    let result = if s.coalesce {
        let c = Coalescing::new(store.clone(), DEFAULT_COALESCE_BATCH, DEFAULT_FLUSHERS);
        run(Arc::new(c), s).await
    } else {
        run(store.clone(), s).await
    };
    let _ = sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .execute(store.pool())
        .await;
    let mut f = result?;
    let detail = format!(
        "PostgreSQL {version}, fsync={fsync}, synchronous_commit={sync_commit}, pool={}{}",
        (s.workers + 2).min(64),
        if s.coalesce {
            format!(", coalescing claims/releases (batch {DEFAULT_COALESCE_BATCH}, {DEFAULT_FLUSHERS} flushers each)")
        } else {
            String::new()
        }
    );
    report("postgres", &detail, s, &mut f);
    Ok(())
}

async fn bench_sqlite(s: &Settings) -> Result<(), StoreError> {
    let dir = tempfile::tempdir().map_err(|e| StoreError::Unavailable(e.to_string()))?;
    let store = SqliteStore::builder(dir.path().join("bench.db"))
        .audit(s.audit)
        .durability(s.sqlite_sync)
        .open()
        .await?;
    store.migrate().await?;
    let mut f = run(Arc::new(store), s).await?;
    let detail = format!(
        "WAL, synchronous={:?}, file in {}",
        s.sqlite_sync,
        dir.path().display()
    );
    report("sqlite", &detail, s, &mut f);
    Ok(())
}

fn main() {
    let s = parse_args();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!(
        "leasehold-bench: {} no-op jobs, {} workers, {} cores",
        s.jobs,
        s.workers,
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    let mut failed = false;
    for b in &s.backends {
        let r = match b.as_str() {
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
