//! `--mode latency`: pickup latency on an idle queue.
//!
//! One enqueuer adds a no-op job every `1/--rate` seconds (a fixed arrival
//! schedule) for `--duration`, one `leasehold_core::Worker` **with the
//! default configuration** (poll interval, concurrency, lease) drains the
//! queue, and each job's latency is measured from the moment the enqueuer
//! saw its enqueue commit to the moment the handler started, on one
//! monotonic clock (µs, into an hdrhistogram). The queue is idle between
//! arrivals, so this is the time the worker takes to notice new work: a
//! poll interval when it polls, a wake-up when the store wakes it
//! (`Store::work_available`). A handler that starts before the enqueuer
//! has seen the commit (possible: the notification can beat the enqueue's
//! answer) counts as 0 µs and is reported separately.
//!
//! The first [`WARM_UP`] of arrivals are not recorded (connections, the
//! wake listener, statement caches).

use crate::args::Settings;
use hdrhistogram::Histogram;
use leasehold_core::worker::config::DEFAULT_POLL_INTERVAL;
use leasehold_core::{
    shutdown_channel, Handler, HandlerError, JobId, Lease, NewJob, Policy, StopSignal, Store,
    StoreError, TokioRuntime, Worker, WorkerConfig,
};
use leasehold_postgres::PgStore;
use serde_json::json;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const QUEUE: &str = "latency";
/// Arrivals in this first stretch are run but not recorded.
pub const WARM_UP: Duration = Duration::from_secs(2);
/// Longest the bench waits for the last arrivals to start.
const SETTLE_DEADLINE: Duration = Duration::from_secs(60);

/// When each side of one job was seen.
enum Seen {
    Committed(Instant),
    Started(Instant),
}

/// Pairs enqueue commits with handler starts, whichever comes first.
#[derive(Default)]
struct Book {
    seen: HashMap<JobId, Seen>,
    /// Jobs whose latency is not recorded (warm-up).
    skip: std::collections::HashSet<JobId>,
    pickup: Vec<u64>,
    early: u64,
    started: u64,
}

impl Book {
    fn record(&mut self, committed: Instant, started: Instant, job: JobId) {
        if self.skip.remove(&job) {
            return;
        }
        match started.checked_duration_since(committed) {
            Some(d) => self.pickup.push(d.as_micros() as u64),
            None => {
                self.early += 1;
                self.pickup.push(0);
            }
        }
    }

    fn committed(&mut self, job: JobId, at: Instant, warm: bool) {
        if warm {
            self.skip.insert(job);
        }
        match self.seen.remove(&job) {
            Some(Seen::Started(s)) => self.record(at, s, job),
            _ => {
                self.seen.insert(job, Seen::Committed(at));
            }
        }
    }

    fn started(&mut self, job: JobId, at: Instant) {
        self.started += 1;
        match self.seen.remove(&job) {
            Some(Seen::Committed(c)) => self.record(c, at, job),
            _ => {
                self.seen.insert(job, Seen::Started(at));
            }
        }
    }
}

/// Notes the start of each job.
struct Stamp(Arc<Mutex<Book>>);

impl Handler for Stamp {
    fn handle(
        &self,
        lease: Lease,
        _stop: StopSignal,
    ) -> impl Future<Output = Result<Vec<u8>, HandlerError>> + Send {
        let at = Instant::now();
        if let Ok(mut b) = self.0.lock() {
            b.started(lease.job, at);
        }
        std::future::ready(Ok(Vec::new()))
    }
}

fn histogram(samples: &[u64]) -> Histogram<u64> {
    let mut h =
        Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("constant bounds are valid");
    for &s in samples {
        h.saturating_record(s.max(1));
    }
    h
}

/// What one store's run measured.
struct Run {
    pickup: Histogram<u64>,
    enqueue: Histogram<u64>,
    early: u64,
    arrivals: u64,
    load_before: Option<[f64; 3]>,
    load_after: Option<[f64; 3]>,
    cpu: Option<crate::cpu::CpuUse>,
}

async fn measure<S: Store>(store: Arc<S>, s: &Settings) -> Result<Run, StoreError> {
    let load_before = crate::load::load_average();
    let cpu_before = crate::cpu::CpuSample::now();
    let book = Arc::new(Mutex::new(Book::default()));
    // The defaults, on purpose: no opting in to anything.
    let cfg = WorkerConfig::builder(format!("latency-{}", std::process::id()), QUEUE)
        .build()
        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
    let (stop, shutdown) = shutdown_channel();
    let worker = Worker::new(store.clone(), Stamp(book.clone()), TokioRuntime::new(), cfg);
    let running = tokio::spawn(worker.run(shutdown));

    let every = Duration::from_secs_f64(1.0 / f64::from(s.rate));
    let total = WARM_UP + s.duration();
    let mut ticks = tokio::time::interval(every);
    let mut enqueue_us = Vec::new();
    let started = Instant::now();
    let mut arrivals = 0u64;
    // Bounded: one pass per arrival, `total / every` of them.
    while started.elapsed() < total {
        ticks.tick().await;
        let warm = started.elapsed() < WARM_UP;
        let sent = Instant::now();
        let job = store.enqueue(NewJob::new(QUEUE, Vec::new())).await?;
        let at = Instant::now();
        if let Ok(mut b) = book.lock() {
            b.committed(job, at, warm);
        }
        if !warm {
            enqueue_us.push((at - sent).as_micros() as u64);
        }
        arrivals += 1;
    }
    // Every arrival must start; bounded wait, polled every 10 ms.
    let deadline = Instant::now() + SETTLE_DEADLINE;
    while book.lock().map(|b| b.started).unwrap_or(0) < arrivals {
        if Instant::now() > deadline {
            return Err(StoreError::Unavailable("arrivals did not all start".into()));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stop.shutdown();
    let _ = running.await;
    let load_after = crate::load::load_average();
    let cpu = cpu_before
        .zip(crate::cpu::CpuSample::now())
        .map(|(a, b)| a.until(&b));
    let b = book
        .lock()
        .map_err(|_| StoreError::Corrupt("book".into()))?;
    Ok(Run {
        pickup: histogram(&b.pickup),
        enqueue: histogram(&enqueue_us),
        early: b.early,
        arrivals,
        load_before,
        load_after,
        cpu,
    })
}

fn report(backend: &str, detail: &str, s: &Settings, r: &Run) {
    let ms = |us: u64| us as f64 / 1000.0;
    let q = |h: &Histogram<u64>| {
        (
            h.value_at_quantile(0.50),
            h.value_at_quantile(0.90),
            h.value_at_quantile(0.99),
            h.max(),
        )
    };
    let (p50, p90, p99, max) = q(&r.pickup);
    let (e50, _, e99, _) = q(&r.enqueue);
    let load = crate::load::load_text;
    let settings = format!(
        "mode=latency rate={}/s duration={}s (+{}s warm-up) worker=default (poll_interval={}, concurrency={}) audit={}",
        s.rate,
        s.duration,
        WARM_UP.as_secs(),
        DEFAULT_POLL_INTERVAL,
        leasehold_core::worker::config::DEFAULT_CONCURRENCY,
        s.audit()
    );
    let text = format!(
        "== {backend} ({detail})\n   settings: {settings}\n   enqueue commit -> handler start: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} samples, {} started before the enqueue answered)\n   enqueue round trip: p50 {:.2} ms, p99 {:.2} ms; load average before {}, after {}\n   {}",
        ms(p50), ms(p90), ms(p99), ms(max), r.pickup.len(), r.early,
        ms(e50), ms(e99), load(r.load_before), load(r.load_after), crate::cpu::line(r.cpu)
    );
    let value = json!({
        "backend": backend, "detail": detail, "mode": "latency",
        "rate_per_s": s.rate, "duration_s": s.duration, "warm_up_s": WARM_UP.as_secs(),
        "worker": { "config": "default", "poll_interval_ms": DEFAULT_POLL_INTERVAL.0,
                    "concurrency": leasehold_core::worker::config::DEFAULT_CONCURRENCY },
        "audit": s.audit(), "arrivals": r.arrivals,
        "pickup": { "from": "enqueue commit seen", "to": "handler start", "unit": "us",
                    "samples": r.pickup.len(), "p50": p50, "p90": p90, "p99": p99, "max": max,
                    "started_before_enqueue_answered": r.early },
        "enqueue_round_trip": { "unit": "us", "p50": e50, "p99": e99 },
        "load_average_before": r.load_before, "load_average_after": r.load_after,
        "cpu": crate::cpu::json(r.cpu),
    });
    crate::emit(s, &text, &value);
}

async fn postgres(s: &Settings) -> Result<(), StoreError> {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        println!("== postgres: SKIPPED (DATABASE_URL is not set)");
        return Ok(());
    };
    let schema = format!("lh_latency_{}", std::process::id());
    // Builder defaults (pool, channel), apart from a schema of its own.
    let store = PgStore::builder(&url)
        .schema(schema.clone())
        .policy(Policy::default())
        .audit(s.audit())
        .connect()
        .await?;
    store.migrate().await?;
    let show = |what: &'static str| {
        let pool = store.pool().clone();
        async move {
            sqlx::query_scalar::<_, String>(&format!("SHOW {what}"))
                .fetch_one(&pool)
                .await
                .map_err(|e| StoreError::Unavailable(e.to_string()))
        }
    };
    let detail = format!(
        "PostgreSQL {}, fsync={}, synchronous_commit={}, default pool, LISTEN/NOTIFY wake-ups",
        show("server_version").await?,
        show("fsync").await?,
        show("synchronous_commit").await?
    );
    let store = Arc::new(store);
    let result = measure(store.clone(), s).await;
    let _ = sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .execute(store.pool())
        .await;
    report("postgres", &detail, s, &result?);
    Ok(())
}

async fn sqlite(s: &Settings) -> Result<(), StoreError> {
    let (_dir, store) = crate::temp_sqlite(s, "latency.db").await?;
    let detail = format!(
        "WAL, synchronous={:?}, enqueuer and worker in one process (in-process wake-ups)",
        s.sqlite_durability()
    );
    let r = measure(Arc::new(store), s).await?;
    report("sqlite", &detail, s, &r);
    Ok(())
}

/// Runs latency mode on each selected store; answers whether all succeeded.
pub fn main(s: &Settings, rt: &tokio::runtime::Runtime) -> bool {
    s.each_backend(|b| match b {
        "postgres" => rt.block_on(postgres(s)).map(|()| true),
        _ => rt.block_on(sqlite(s)).map(|()| true),
    })
}
