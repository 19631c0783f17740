//! `--mode soak`: a long run with retention on.
//!
//! `--jobs` no-op jobs arrive at a steady `--rate` per second (the jobs
//! due since the last [`TICK`] go in one `enqueue_many`), `--workers`
//! instances of `leasehold_core::Worker` built with the **default**
//! configuration drain them, and the core's `Pruner` (retention
//! `--retention`, period, batch and rounds from `PrunerConfig`'s defaults
//! unless given) prunes on its period: the bench calls
//! `Pruner::prune_once` on the Pruner's own schedule (period, doubling
//! backoff after a failure), over a store wrapper that checks each
//! `Store::prune` answer as it arrives (`pruned_answers.rs`): a wake-up
//! that fails loses the ids of its earlier calls, the wrapper does not.
//!
//! Every `--report-every` seconds one line: elapsed, enqueued, completed,
//! backlog, pruned, rows in the jobs and audit tables, the jobs table's
//! and its indexes' sizes, and completions per second in the interval.
//! At the end, after one last prune, the checks (`--mode soak` exits 1 if
//! one fails):
//! - every enqueued job ran, none ran twice (the handler's [`Ledger`]);
//! - no job is left `pending` or `running`;
//! - no pruned id was pruned before it ran or less than `R` after it first
//!   started (its finish is no earlier than its start, the prune no later
//!   than its answer);
//! - rows left = enqueued − pruned (fewer only by what calls the Pruner
//!   abandoned at its request timeout may have deleted unseen, at most a
//!   batch each), none of them finished more than `R`
//!   before the last prune began (store clock), and at least every job
//!   that first started within `R` of the last prune's answer is left:
//!   the rows left are the jobs finished within the last `R`.

use crate::args::Settings;
use crate::figures::ENQUEUE_CHUNK;
use crate::pruned_answers::Answered;
use crate::soak_ledger::{Ledger, PruneTally};
use crate::store_sizes::{mib, unavailable, Inspect, Sizes};
use crate::BatchStore;
use leasehold_core::{
    shutdown_channel, Handler, HandlerError, Lease, NewJob, Pruner, PrunerConfig, Shutdown,
    StopSignal, StoreError, TokioRuntime, Worker, WorkerConfig,
};
use serde_json::json;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const QUEUE: &str = "soak";
/// The enqueuer's tick: the arrivals due since the last one go together.
const TICK: Duration = Duration::from_millis(10);
/// Longest the run waits past its arrival schedule for the last jobs.
const DRAIN_GRACE: Duration = Duration::from_secs(600);

/// The handler: marks the job's enqueue index (its payload) as run.
struct Mark(Arc<Ledger>);

impl Handler for Mark {
    fn handle(
        &self,
        lease: Lease,
        _stop: StopSignal,
    ) -> impl Future<Output = Result<Vec<u8>, HandlerError>> + Send {
        // A payload that is no index is never marked: the run then fails
        // its "every job ran" check rather than passing by accident.
        self.0.ran(&lease.payload);
        std::future::ready(Ok(Vec::new()))
    }
}

/// Enqueues `jobs` jobs at `rate` per second; bounded by `jobs` (each
/// inner pass enqueues at least one) and by the schedule (one tick per
/// [`TICK`] until the last job is due).
async fn arrive<S: BatchStore>(
    store: Arc<S>,
    ledger: Arc<Ledger>,
    jobs: u64,
    rate: u32,
    enqueued: Arc<AtomicU64>,
) -> Result<(), StoreError> {
    let start = Instant::now();
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut next = 0u64;
    while next < jobs {
        ticks.tick().await;
        let due = ((start.elapsed().as_secs_f64() * f64::from(rate)) as u64).min(jobs);
        while next < due {
            let k = (due - next).min(ENQUEUE_CHUNK as u64);
            let batch: Vec<NewJob> = (next..next + k)
                .map(|i| NewJob::new(QUEUE, Ledger::payload(i as u32)))
                .collect();
            let ids = store.enqueue_batch(&batch).await?;
            ledger
                .enqueued(&ids, next as u32)
                .map_err(StoreError::Corrupt)?;
            next += k;
            enqueued.store(next, Ordering::SeqCst);
        }
    }
    Ok(())
}

/// The Pruner on its period (its answers are checked as the store gives
/// them, by [`Answered`]); a failed wake-up waits the Pruner's backoff.
async fn prune<S: BatchStore>(
    pruner: Arc<Pruner<Answered<S>, TokioRuntime>>,
    cfg: PrunerConfig,
    tally: Arc<Mutex<PruneTally>>,
    mut shutdown: Shutdown,
) {
    let mut failures: u32 = 0;
    while !shutdown.is_requested() {
        let wait = match pruner.prune_once().await {
            Ok(_) => {
                failures = 0;
                cfg.period
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                if let Ok(mut t) = tally.lock() {
                    t.failed_wake_ups += 1;
                    t.last_error = Some(e.to_string());
                }
                cfg.backoff_after(failures)
            }
        };
        tokio::select! {
            biased;
            _ = shutdown.wait() => {}
            _ = tokio::time::sleep(wait.to_std()) => {}
        }
    }
}

/// One report line's figures.
#[derive(Clone, Copy, Debug)]
struct Sample {
    at: Duration,
    enqueued: u64,
    completed: u64,
    pruned: u64,
    sizes: Sizes,
    /// Completions per second since the previous sample.
    rate: f64,
}

fn line(s: &Sample) -> String {
    let wal = s
        .sizes
        .wal_bytes
        .map(|w| format!(" wal {} MiB", mib(Some(w))))
        .unwrap_or_default();
    format!(
        "   t={:>5}s enqueued {:>8} completed {:>8} backlog {:>6} pruned {:>8} | rows: jobs {:>8} audit {:>8} | jobs table {} MiB, indexes {} MiB, total {} MiB{wal} | {:.0} jobs/s",
        s.at.as_secs(),
        s.enqueued,
        s.completed,
        s.enqueued.saturating_sub(s.completed),
        s.pruned,
        s.sizes.jobs_rows,
        s.sizes.audit_rows,
        mib(s.sizes.table_bytes),
        mib(s.sizes.index_bytes),
        mib(Some(s.sizes.total_bytes)),
        s.rate
    )
}

fn sample_json(s: &Sample) -> serde_json::Value {
    json!({
        "t_s": s.at.as_secs(), "enqueued": s.enqueued, "completed": s.completed,
        "pruned": s.pruned, "jobs_rows": s.sizes.jobs_rows, "audit_rows": s.sizes.audit_rows,
        "table_bytes": s.sizes.table_bytes, "index_bytes": s.sizes.index_bytes,
        "total_bytes": s.sizes.total_bytes, "wal_bytes": s.sizes.wal_bytes,
        "jobs_per_s": s.rate,
    })
}

/// One named check and whether it held.
struct Check {
    what: String,
    ok: bool,
}

fn check(what: String, ok: bool) -> Check {
    Check { what, ok }
}

/// The run on one store; answers whether every check held.
async fn soak<S: BatchStore + Inspect + 'static>(
    store: Arc<S>,
    s: &Settings,
    backend: &str,
    detail: &str,
) -> Result<bool, StoreError> {
    let cfg = s
        .pruner()
        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
    let retention_ms = cfg.request.retention.0;
    let load_before = crate::load::load_average();
    let ledger = Arc::new(Ledger::new(s.jobs()));
    let enqueued = Arc::new(AtomicU64::new(0));
    let tally = Arc::new(Mutex::new(PruneTally::default()));
    let (stop, shutdown) = shutdown_channel();
    let mut workers = Vec::new();
    let mut config = String::new();
    for w in 0..s.workers() {
        // The default configuration: users run the `Worker` as built.
        let wc = WorkerConfig::builder(format!("soak-{w}"), QUEUE)
            .build()
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        config = format!(
            "{} default Workers (concurrency={}, lease={}, poll_interval={})",
            s.workers, wc.concurrency, wc.lease, wc.poll_interval
        );
        let worker = Worker::new(store.clone(), Mark(ledger.clone()), TokioRuntime::new(), wc);
        workers.push(tokio::spawn(worker.run(shutdown.clone())));
    }
    let answered = Arc::new(Answered {
        inner: store.clone(),
        ledger: ledger.clone(),
        tally: tally.clone(),
    });
    let pruner = Arc::new(Pruner::new(answered, TokioRuntime::new(), cfg.clone()));
    let pruning = tokio::spawn(prune(
        pruner.clone(),
        cfg.clone(),
        tally.clone(),
        shutdown.clone(),
    ));
    let arrivals = tokio::spawn(arrive(
        store.clone(),
        ledger.clone(),
        s.jobs,
        s.rate,
        enqueued.clone(),
    ));
    let settings = format!(
        "mode=soak jobs={} rate={}/s {config}; Pruner retention={} period={} batch={} rounds={}; audit={}; report every {} s",
        s.jobs, s.rate, cfg.request.retention, cfg.period, cfg.request.limit, cfg.max_rounds,
        s.audit(), s.report_every
    );
    let header = format!("== {backend} ({detail})\n   settings: {settings}");
    crate::emit(
        s,
        &header,
        &json!({"backend": backend, "detail": detail, "settings": settings}),
    );

    // Report until every job ran; bounded by the arrival schedule plus
    // DRAIN_GRACE.
    let start = Instant::now();
    let deadline = Duration::from_secs_f64(s.jobs as f64 / f64::from(s.rate)) + DRAIN_GRACE;
    let every = Duration::from_secs(s.report_every);
    let mut samples: Vec<Sample> = Vec::new();
    let (mut last_at, mut last_done) = (Duration::ZERO, 0u64);
    let mut failure = None;
    while ledger.completed() < s.jobs {
        tokio::time::sleep(every.saturating_sub(start.elapsed() - last_at)).await;
        if arrivals.is_finished() && enqueued.load(Ordering::SeqCst) < s.jobs {
            failure = Some("the enqueuer stopped early".to_string());
            break;
        }
        let at = start.elapsed();
        let completed = ledger.completed();
        let sizes = store.sizes().await?;
        let sample = Sample {
            at,
            enqueued: enqueued.load(Ordering::SeqCst),
            completed,
            pruned: tally.lock().map(|t| t.pruned).unwrap_or(0),
            sizes,
            rate: (completed - last_done) as f64 / (at - last_at).as_secs_f64().max(1e-9),
        };
        let text = line(&sample);
        crate::emit(s, &text, &sample_json(&sample));
        samples.push(sample);
        (last_at, last_done) = (at, completed);
        if at > deadline {
            failure = Some(format!("not every job ran within {} s", deadline.as_secs()));
            break;
        }
    }
    let elapsed = start.elapsed();
    stop.shutdown();
    let mut claim_errors = 0;
    for w in workers {
        claim_errors += w.await.map_err(unavailable)?.claim_errors;
    }
    pruning.await.map_err(unavailable)?;
    if let Err(e) = arrivals.await.map_err(unavailable)? {
        failure = Some(format!("the enqueuer failed: {e}"));
    }

    // The last prune: every finished row that was due when it began goes
    // (bounded: each call takes a full batch or ends the loop).
    let began = store.now().await?;
    let full = cfg.request.limit as usize * cfg.max_rounds as usize;
    for _ in 0..=(s.jobs() / full.max(1) + 1) {
        let ids = pruner.prune_once().await.map_err(|e| e.error)?;
        if ids.len() < full {
            break;
        }
    }
    let answered_ms = ledger.now_ms();
    let due_left = store.finished_by(began.0 - retention_ms as i64).await?;
    let recent = ledger.started_after(answered_ms.saturating_sub(retention_ms));
    let unfinished = store.unfinished().await?;
    let end = store.sizes().await?;
    let t = tally.lock().map(|t| t.clone()).unwrap_or_default();
    let total = enqueued.load(Ordering::SeqCst);
    let checks = [
        check(format!("run finished: {}", failure.as_deref().unwrap_or("yes")), failure.is_none()),
        check(format!("every enqueued job ran: {} of {total} did not", ledger.missing()), ledger.missing() == 0 && total == s.jobs),
        check(format!("none ran twice: {} second starts", ledger.twice()), ledger.twice() == 0),
        check(format!("nothing pending or running left: {unfinished}"), unfinished == 0),
        check(
            format!(
                "nothing pruned early: {} pruned, {} less than R after they started (closest {} ms after, R = {retention_ms} ms), {} before they ran, {} unknown ids",
                t.pruned, t.early, t.min_margin_ms.map_or("-".into(), |m| m.to_string()), t.not_run, t.unknown
            ),
            t.early == 0 && t.not_run == 0 && t.unknown == 0,
        ),
        // A call the Pruner abandoned may have deleted up to a batch
        // unseen: only then may rows be missing, and at most that many.
        check(
            format!(
                "rows left = enqueued - pruned: {} = {total} - {}{}",
                end.jobs_rows,
                t.pruned,
                if t.abandoned_calls > 0 {
                    format!(
                        " (or less, by at most {} x {}: calls the Pruner abandoned; {} rows unseen)",
                        t.abandoned_calls,
                        cfg.request.limit,
                        total.saturating_sub(end.jobs_rows + t.pruned)
                    )
                } else {
                    String::new()
                }
            ),
            end.jobs_rows + t.pruned == total
                || (end.jobs_rows + t.pruned < total
                    && total - end.jobs_rows - t.pruned
                        <= t.abandoned_calls * u64::from(cfg.request.limit)),
        ),
        check(format!("no row left that finished more than R before the last prune: {due_left}"), due_left == 0),
        check(
            format!("every job started within R of the last prune is left: {} rows >= {recent}", end.jobs_rows),
            end.jobs_rows >= recent,
        ),
    ];
    let ok = checks.iter().all(|c| c.ok);
    let load_after = crate::load::load_average();
    let steady: Vec<&Sample> = samples
        .iter()
        .filter(|x| x.at.as_millis() as u64 > retention_ms + cfg.period.0)
        .collect();
    let max_total = steady.iter().map(|x| x.sizes.total_bytes).max();
    let max_rows = steady.iter().map(|x| x.sizes.jobs_rows).max();
    let full_intervals: Vec<&Sample> = samples.iter().filter(|x| x.enqueued < s.jobs).collect();
    let first = full_intervals
        .get(1)
        .or(full_intervals.first())
        .map(|x| x.rate);
    let last = full_intervals.last().map(|x| x.rate);
    let mut text = format!(
        "   end after {:.0} s: {} | rows: jobs {} audit {} | jobs table {} MiB, indexes {} MiB, total {} MiB{}\n   after the first R + period: at most {} job rows, total at most {} MiB; throughput per interval: second {:.0} jobs/s, last full {:.0} jobs/s; prune calls failed: {}, abandoned: {}, wake-ups failed: {}{}; claim errors: {claim_errors}\n   load average before {}, after {}",
        elapsed.as_secs_f64(),
        if ok { "all checks passed" } else { "A CHECK FAILED" },
        end.jobs_rows, end.audit_rows, mib(end.table_bytes), mib(end.index_bytes), mib(Some(end.total_bytes)),
        end.wal_bytes.map(|w| format!(", wal {} MiB", mib(Some(w)))).unwrap_or_default(),
        max_rows.map_or("-".into(), |r| r.to_string()),
        mib(max_total),
        first.unwrap_or(0.0), last.unwrap_or(0.0),
        t.failed_calls,
        t.abandoned_calls,
        t.failed_wake_ups,
        t.last_error.as_deref().map(|e| format!(" (last error: {e})")).unwrap_or_default(),
        crate::load::load_text(load_before), crate::load::load_text(load_after),
    );
    for c in &checks {
        text.push_str(&format!(
            "\n   [{}] {}",
            if c.ok { "ok" } else { "FAILED" },
            c.what
        ));
    }
    let value = json!({
        "backend": backend, "mode": "soak", "ok": ok, "elapsed_s": elapsed.as_secs_f64(),
        "end": { "jobs_rows": end.jobs_rows, "audit_rows": end.audit_rows,
                 "table_bytes": end.table_bytes, "index_bytes": end.index_bytes,
                 "total_bytes": end.total_bytes, "wal_bytes": end.wal_bytes },
        "steady_max_jobs_rows": max_rows, "steady_max_total_bytes": max_total,
        "prune_calls_failed": t.failed_calls, "prune_calls_abandoned": t.abandoned_calls,
        "prune_wake_ups_failed": t.failed_wake_ups, "first_interval_jobs_per_s": first, "last_interval_jobs_per_s": last,
        "checks": checks.iter().map(|c| json!({"check": c.what, "ok": c.ok})).collect::<Vec<_>>(),
        "load_average_before": load_before, "load_average_after": load_after,
    });
    crate::emit(s, &text, &value);
    Ok(ok)
}

async fn postgres(s: &Settings) -> Result<bool, StoreError> {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        println!("== postgres: SKIPPED (DATABASE_URL is not set)");
        return Ok(true);
    };
    let schema = format!("lh_soak_{}", std::process::id());
    // A connection per Worker, one for the Pruner, one for the reports.
    let pool = (s.workers + 2).min(64) as u32;
    let store = crate::pg_schema::migrated(&url, &schema, s, pool).await?;
    let version: String = sqlx::query_scalar("SHOW server_version")
        .fetch_one(store.pool())
        .await
        .map_err(unavailable)?;
    let detail = format!("PostgreSQL {version}, pool {pool}, autovacuum as configured");
    let store = Arc::new(store);
    let result = soak(store.clone(), s, "postgres", &detail).await;
    let _ = sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .execute(store.pool())
        .await;
    result
}

async fn sqlite(s: &Settings) -> Result<bool, StoreError> {
    let (dir, store) = crate::temp_sqlite(s, "soak.db").await?;
    let detail = format!(
        "WAL, synchronous={:?}, file in {}",
        s.sqlite_durability(),
        dir.path().display()
    );
    soak(Arc::new(store), s, "sqlite", &detail).await
}

/// Runs soak mode on each selected store; answers whether all passed.
pub fn main(s: &Settings, rt: &tokio::runtime::Runtime) -> bool {
    s.each_backend(|b| match b {
        "postgres" => rt.block_on(postgres(s)),
        _ => rt.block_on(sqlite(s)),
    })
}
