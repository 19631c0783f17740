//! `--mode prune-claims` (PostgreSQL): do claims slow down, or wait,
//! while a large backlog is pruned?
//!
//! 1. A backlog: `--jobs` jobs enqueued and drained by the batched loops
//!    of `--mode batch`, then a wait of `R` (`--retention`) so every one is
//!    past its retention.
//! 2. `--workers` default `Worker`s claim and release fresh no-op jobs on
//!    another queue, kept [`FEED_AHEAD`] jobs ahead by a feeder, through
//!    the whole run (they start with the wait: a warm steady state).
//! 3. Three intervals of `--interval` seconds, in one run: without
//!    pruning, with the core's `Pruner` (its `PrunerConfig` from the
//!    flags) calling `prune_once` back to back on a connection of its own
//!    (the bounded batches, as fast as they go), and without pruning
//!    again. For each: completions per second, and the claim calls'
//!    latency (`claim_timing.rs`); for the prune: rows per second.
//! 4. Throughout, `pg_blocking_pids` and `pg_locks` every 50 ms
//!    (`lock_watch.rs`): did any session wait on the pruner's?

use crate::args::Settings;
use crate::claim_timing::{ClaimClock, Timed, TimedPrune};
use crate::figures::ENQUEUE_CHUNK;
use crate::lock_watch::{self, Watched};
use crate::store_sizes::{mib, unavailable, Inspect};
use crate::BatchStore;
use leasehold_core::{
    shutdown_channel, Handler, HandlerError, Lease, NewJob, Policy, Pruner, StopSignal, StoreError,
    TokioRuntime, Worker, WorkerConfig,
};
use leasehold_postgres::PgStore;
use serde_json::json;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const QUEUE: &str = "fresh";
/// The feeder keeps at most this many fresh jobs waiting.
const FEED_AHEAD: u64 = 20_000;
/// The feeder's look interval.
const FEED_EVERY: Duration = Duration::from_millis(5);
/// The intervals, in order; the pruner runs in the second.
const PHASES: [&str; 3] = ["before: no prune", "during the prune", "after: no prune"];

/// Counts the fresh jobs run.
struct Count(Arc<AtomicU64>);

impl Handler for Count {
    fn handle(
        &self,
        _lease: Lease,
        _stop: StopSignal,
    ) -> impl Future<Output = Result<Vec<u8>, HandlerError>> + Send {
        self.0.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Ok(Vec::new()))
    }
}

/// What one interval measured.
#[derive(Default)]
struct Phase {
    secs: f64,
    completed: u64,
    /// Claim calls, then p50, p99 and max latency, µs.
    claims: (u64, u64, u64, u64),
    watched: Watched,
}

impl Phase {
    fn rate(&self) -> f64 {
        self.completed as f64 / self.secs.max(1e-9)
    }
}

/// Keeps the fresh queue [`FEED_AHEAD`] jobs ahead until `stop`; bounded
/// by `stop` (one look per [`FEED_EVERY`]).
async fn feed(
    store: Arc<PgStore>,
    done: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) -> Result<(), StoreError> {
    let mut enqueued = 0u64;
    while !stop.load(Ordering::SeqCst) {
        if enqueued.saturating_sub(done.load(Ordering::SeqCst)) < FEED_AHEAD {
            let jobs: Vec<NewJob> = (0..ENQUEUE_CHUNK)
                .map(|_| NewJob::new(QUEUE, Vec::new()))
                .collect();
            store.enqueue_batch(&jobs).await?;
            enqueued += ENQUEUE_CHUNK as u64;
        } else {
            tokio::time::sleep(FEED_EVERY).await;
        }
    }
    Ok(())
}

/// Looks at the lock views into the current phase's record until `stop`.
async fn watch(
    pool: sqlx::PgPool,
    pruner_pid: i32,
    phase: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<Watched>>>,
    stop: Arc<AtomicBool>,
) {
    while !stop.load(Ordering::SeqCst) {
        let p = phase.load(Ordering::SeqCst);
        if p < PHASES.len() {
            let mut w = seen.lock().map(|s| s[p].clone()).unwrap_or_default();
            lock_watch::look(&pool, pruner_pid, &mut w).await;
            if let Ok(mut s) = seen.lock() {
                s[p] = w;
            }
        }
        tokio::time::sleep(lock_watch::EVERY).await;
    }
}

/// What the prune of the second interval answered.
#[derive(Clone, Debug, Default)]
struct Pruned {
    /// Ids the Pruner answered.
    rows: u64,
    /// Seconds from its start to its last answer with ids.
    secs: f64,
    /// Calls that failed (a timed-out call may still have committed:
    /// the backlog count before and after is the figure that counts).
    failed: u64,
    last_error: Option<String>,
    /// `Store::prune` calls: count, then p50, p99 and max latency, µs.
    calls: (u64, u64, u64, u64),
}

/// The prune of the second interval: `prune_once` back to back until
/// `stop` or the backlog is gone. Bounded by `stop`.
async fn prune(pruner: Pruner<TimedPrune<PgStore>, TokioRuntime>, stop: Arc<AtomicBool>) -> Pruned {
    let t = Instant::now();
    let mut p = Pruned::default();
    while !stop.load(Ordering::SeqCst) {
        match pruner.prune_once().await {
            Ok(ids) if ids.is_empty() => break,
            Ok(ids) => {
                p.rows += ids.len() as u64;
                p.secs = t.elapsed().as_secs_f64();
            }
            Err(e) => {
                // The calls before the failing one committed.
                p.rows += e.pruned.len() as u64;
                p.failed += 1;
                p.last_error = Some(e.to_string());
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    p
}

/// Backlog rows still in the table (its own queue), counted by SQL.
async fn backlog_left(store: &PgStore) -> Result<u64, StoreError> {
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM leasehold_jobs WHERE queue = $1")
        .bind(crate::QUEUE)
        .fetch_one(store.pool())
        .await
        .map_err(unavailable)?;
    Ok(n as u64)
}

async fn run(s: &Settings, url: &str) -> Result<(), StoreError> {
    let cfg = s
        .pruner()
        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
    let load_before = crate::load::load_average();
    let schema = format!("lh_prune_claims_{}", std::process::id());
    let pool = (s.workers + 2).min(64) as u32;
    let store = Arc::new(crate::pg_schema::migrated(url, &schema, s, pool).await?);
    let result = measure(s, url, &schema, store.clone(), cfg, load_before).await;
    let _ = sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .execute(store.pool())
        .await;
    result
}

async fn measure(
    s: &Settings,
    url: &str,
    schema: &str,
    store: Arc<PgStore>,
    cfg: leasehold_core::PrunerConfig,
    load_before: Option<[f64; 3]>,
) -> Result<(), StoreError> {
    // The pruner's own store: one connection, whose pid the watcher
    // looks for.
    let pruner_store = PgStore::builder(url)
        .schema(schema.to_string())
        .policy(Policy::default())
        .audit(s.audit())
        .max_connections(1)
        .connect()
        .await?;
    let pruner_pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(pruner_store.pool())
        .await
        .map_err(unavailable)?;
    let watcher = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .map_err(unavailable)?;

    let backlog = crate::drain_batched(store.clone(), s).await?;
    let drained = Instant::now();
    let before = store.sizes().await?;
    let header = format!(
        "== postgres (prune-claims)\n   backlog: {} finished jobs (enqueued in {:.1} s, drained in {:.1} s by {} batched loops); jobs table {} MiB, indexes {} MiB, total {} MiB; audit rows {}\n   settings: {} default Workers on fresh jobs ({FEED_AHEAD} kept waiting), Pruner retention={} batch={} rounds={} calling prune_once back to back on its own connection (pid {pruner_pid}); intervals of {} s",
        s.jobs, backlog.enqueue.as_secs_f64(), backlog.drain.as_secs_f64(), s.workers,
        mib(before.table_bytes), mib(before.index_bytes), mib(Some(before.total_bytes)), before.audit_rows,
        s.workers, cfg.request.retention, cfg.request.limit, cfg.max_rounds, s.interval
    );
    crate::emit(
        s,
        &header,
        &json!({"mode": "prune-claims", "header": header}),
    );

    let done = Arc::new(AtomicU64::new(0));
    let clock = Arc::new(ClaimClock::new());
    let timed = Arc::new(Timed {
        inner: store.clone(),
        clock: clock.clone(),
    });
    let (stop_workers, shutdown) = shutdown_channel();
    let mut workers = Vec::new();
    for w in 0..s.workers() {
        let wc = WorkerConfig::builder(format!("fresh-{w}"), QUEUE)
            .build()
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        let worker = Worker::new(timed.clone(), Count(done.clone()), TokioRuntime::new(), wc);
        workers.push(tokio::spawn(worker.run(shutdown.clone())));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let feeder = tokio::spawn(feed(store.clone(), done.clone(), stop.clone()));
    let phase = Arc::new(AtomicUsize::new(PHASES.len()));
    let seen = Arc::new(Mutex::new(vec![Watched::default(); PHASES.len()]));
    let watching = tokio::spawn(watch(
        watcher,
        pruner_pid,
        phase.clone(),
        seen.clone(),
        stop.clone(),
    ));

    // Every backlog row past R (store clock), plus a second of margin.
    let wait = cfg.request.retention.to_std() + Duration::from_secs(1);
    tokio::time::sleep(wait.saturating_sub(drained.elapsed())).await;

    let prune_clock = Arc::new(ClaimClock::new());
    let timed_pruner = TimedPrune {
        inner: Arc::new(pruner_store),
        clock: prune_clock.clone(),
    };
    let pruner = Pruner::new(Arc::new(timed_pruner), TokioRuntime::new(), cfg);
    let mut phases: Vec<Phase> = Vec::new();
    let mut pruned = Pruned::default();
    let mut left = (0u64, 0u64);
    let mut pruner = Some(pruner);
    for (p, _) in PHASES.iter().enumerate() {
        let stop_prune = Arc::new(AtomicBool::new(false));
        if p == 1 {
            left.0 = backlog_left(&store).await?;
        }
        let pruning = if p == 1 {
            pruner
                .take()
                .map(|pr| tokio::spawn(prune(pr, stop_prune.clone())))
        } else {
            None
        };
        clock.take();
        phase.store(p, Ordering::SeqCst);
        let (t, c0) = (Instant::now(), done.load(Ordering::SeqCst));
        tokio::time::sleep(Duration::from_secs(s.interval)).await;
        let (secs, completed) = (t.elapsed().as_secs_f64(), done.load(Ordering::SeqCst) - c0);
        let claims = clock.take();
        stop_prune.store(true, Ordering::SeqCst);
        if let Some(h) = pruning {
            pruned = h.await.map_err(unavailable)?;
            pruned.calls = prune_clock.take();
            left.1 = backlog_left(&store).await?;
        }
        phases.push(Phase {
            secs,
            completed,
            claims,
            watched: Watched::default(),
        });
    }
    phase.store(PHASES.len(), Ordering::SeqCst);
    stop.store(true, Ordering::SeqCst);
    stop_workers.shutdown();
    for w in workers {
        w.await.map_err(unavailable)?;
    }
    feeder.await.map_err(unavailable)??;
    watching.await.map_err(unavailable)?;
    let after = store.sizes().await?;
    if let Ok(seen) = seen.lock() {
        for (p, w) in seen.iter().enumerate() {
            phases[p].watched = w.clone();
        }
    }
    report(s, &phases, &pruned, left, &after, load_before);
    Ok(())
}

fn report(
    s: &Settings,
    phases: &[Phase],
    pruned: &Pruned,
    left: (u64, u64),
    after: &crate::store_sizes::Sizes,
    load_before: Option<[f64; 3]>,
) {
    let ms = |us: u64| us as f64 / 1000.0;
    let mut text = String::new();
    for (name, p) in PHASES.iter().zip(phases) {
        let w = &p.watched;
        text.push_str(&format!(
            "   {name:<17}: {:.0} jobs/s ({} in {:.1} s); claim calls {}: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; lock views: {} looks, {} with a session waiting, {} waits on the pruner, {} on others\n",
            p.rate(), p.completed, p.secs, p.claims.0, ms(p.claims.1), ms(p.claims.2), ms(p.claims.3),
            w.looks, w.looks_with_waits, w.waits_on_pruner, w.other_waits
        ));
    }
    let without = (phases[0].rate() + phases[2].rate()) / 2.0;
    let ratio = phases[1].rate() / without.max(1e-9);
    let (rows, secs, failed) = (pruned.rows, pruned.secs, pruned.failed);
    let gone = left.0.saturating_sub(left.1);
    let interval = phases[1].secs;
    let w = &phases[1].watched;
    text.push_str(&format!(
        "   during / without (mean of before and after): {:.0} %\n   prune: backlog rows {} before, {} after: {gone} deleted in the {interval:.1} s interval = {:.0} rows/s; the Pruner answered {rows} ids, the last {secs:.1} s in{}; {failed} failed wake-ups{}; {} prune calls: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms\n   pruner's relation locks seen: {}\n   sessions that waited on the pruner ran: {}\n   after: jobs table {} MiB, indexes {} MiB, rows {}; load average before {}, after {}",
        ratio * 100.0,
        left.0,
        left.1,
        gone as f64 / interval.max(1e-9),
        if left.1 == 0 { " (the whole backlog)" } else { "" },
        pruned.last_error.as_deref().map(|e| format!(" (last: {e})")).unwrap_or_default(),
        pruned.calls.0,
        ms(pruned.calls.1),
        ms(pruned.calls.2),
        ms(pruned.calls.3),
        if w.pruner_locks.is_empty() { "none".into() } else { w.pruner_locks.iter().cloned().collect::<Vec<_>>().join(", ") },
        if w.waiting_on_pruner.is_empty() { "none".into() } else { w.waiting_on_pruner.iter().cloned().collect::<Vec<_>>().join(" | ") },
        mib(after.table_bytes), mib(after.index_bytes), after.jobs_rows,
        crate::load::load_text(load_before), crate::load::load_text(crate::load::load_average()),
    ));
    let value = json!({
        "mode": "prune-claims", "backlog": s.jobs, "interval_s": s.interval,
        "phases": PHASES.iter().zip(phases).map(|(n, p)| json!({
            "phase": n, "jobs_per_s": p.rate(), "completed": p.completed, "secs": p.secs,
            "claim_calls": p.claims.0, "claim_p50_us": p.claims.1, "claim_p99_us": p.claims.2,
            "claim_max_us": p.claims.3, "looks": p.watched.looks,
            "looks_with_waits": p.watched.looks_with_waits,
            "waits_on_pruner": p.watched.waits_on_pruner, "other_waits": p.watched.other_waits,
        })).collect::<Vec<_>>(),
        "during_over_without": ratio, "backlog_before": left.0, "backlog_after": left.1,
        "prune_rows_per_s": gone as f64 / interval.max(1e-9), "pruner_answered_ids": rows,
        "prune_secs": secs, "prune_failed_wake_ups": failed, "prune_last_error": pruned.last_error,
        "prune_calls": pruned.calls.0, "prune_call_p50_us": pruned.calls.1,
        "prune_call_p99_us": pruned.calls.2, "prune_call_max_us": pruned.calls.3,
    });
    crate::emit(s, &text, &value);
}

/// Runs the mode on PostgreSQL; answers whether it ran.
pub fn main(s: &Settings, rt: &tokio::runtime::Runtime) -> bool {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        println!(
            "== postgres: SKIPPED (DATABASE_URL is not set; run under scripts/with-postgres.sh)"
        );
        return true;
    };
    match rt.block_on(run(s, &url)) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("postgres: failed: {e}");
            false
        }
    }
}
