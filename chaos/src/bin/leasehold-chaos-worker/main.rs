//! A leasehold worker process, written the way you would deploy one: this
//! is the production example the README points to, and the worker that
//! `leasehold chaos` starts, kills, stops and restarts.
//!
//! What a production worker needs, each shown below:
//! - a store from a URL, with its migrations applied (`PgStore`; `--sqlite
//!   PATH` runs the same worker on one SQLite file), shared by every
//!   `Worker` of the process: their batches merge into few transactions,
//!   and one LISTEN connection wakes them all (PostgreSQL); `--coalesce`
//!   also answers their single claims and releases in batches;
//! - `--workers N` `Worker`s, each running a typed handler (a serde
//!   payload, `handler.rs`) on every `--queue NAME[:LIMIT]`, each queue
//!   with its own limit within the Worker's concurrency;
//! - one `Sweeper`, so the leases of crashed workers come back;
//! - graceful shutdown on SIGTERM (and Ctrl-C) that lets handlers finish
//!   within the grace time and returns unfinished leases to the queue;
//! - tracing through `tracing-subscriber` (`RUST_LOG=info,leasehold_core=debug`);
//! - a fresh worker identity per process start: a restarted process must
//!   never be mistaken for the one that died (the catalogue's
//!   `restart-reuses-identity` bug).
//!
//! ```sh
//! DATABASE_URL=postgres://… leasehold-chaos-worker --workers 4 --queue chaos --queue chaos-b:8 --coalesce
//! ```

mod handler;
mod tracked;

use clap::Parser;
use handler::ChaosHandler;
use leasehold_chaos::effects::EffectLog;
use leasehold_chaos::inflight::InFlightBoard;
use leasehold_chaos::job::PlantedBug;
use leasehold_chaos::shape::MAX_WORKERS_PER_PROCESS;
use leasehold_core::worker::config as defaults;
use leasehold_core::worker::WorkerStats;
use leasehold_core::{
    shutdown_channel, Millis, Policy, Store, StoreError, Sweeper, SweeperConfig, TokioRuntime,
    Worker, WorkerConfig,
};
use leasehold_postgres::{Coalescing, PgStore, DEFAULT_COALESCE_BATCH, DEFAULT_FLUSHERS};
use leasehold_sqlite::SqliteStore;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};
use tracked::Tracked;

/// Tries to connect and migrate at start (the database may be restarting).
const CONNECT_TRIES: u32 = 30;
/// Wait between two connection tries.
const CONNECT_RETRY: Duration = Duration::from_secs(1);
/// Longest host name kept in the worker identity (PostgreSQL shows the
/// identity as `application_name`, at most 63 bytes).
const MAX_HOST_IN_ID: usize = 20;

/// A leasehold worker process: `--workers` Workers on one shared store
/// claim jobs from the `--queue`s and run them.
#[derive(Debug, Parser)]
#[command(name = "leasehold-chaos-worker", version)]
struct Args {
    /// PostgreSQL URL.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,
    /// PostgreSQL schema holding the tables (created by the migrations).
    #[arg(long)]
    schema: Option<String>,
    /// Use this SQLite file instead of PostgreSQL.
    #[arg(long)]
    sqlite: Option<PathBuf>,
    /// A queue to work, `NAME` or `NAME:LIMIT` (most of its jobs one Worker
    /// runs at once); repeat it for several. The first one without a limit
    /// may use the whole concurrency.
    #[arg(long = "queue", value_parser = parse_queue, default_value = leasehold_chaos::job::QUEUE)]
    queues: Vec<(String, Option<u32>)>,
    /// `Worker`s in this process, sharing one store.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_WORKERS_PER_PROCESS)))]
    workers: u32,
    /// PostgreSQL: answer single claims and releases in batches (`Coalescing`).
    #[arg(long)]
    coalesce: bool,
    /// PostgreSQL: the store vacuums `leasehold_jobs` itself, looking every
    /// this many ms (`PgStoreBuilder::vacuum_every`).
    #[arg(long, value_parser = clap::value_parser!(u64).range(50..=3_600_000))]
    vacuum_every_ms: Option<u64>,
    /// Jobs each Worker runs at once.
    #[arg(long, default_value_t = defaults::DEFAULT_CONCURRENCY)]
    concurrency: u32,
    /// Lease asked for, in ms.
    #[arg(long, default_value_t = defaults::DEFAULT_LEASE.0)]
    lease_ms: u64,
    /// Renew interval, in ms.
    #[arg(long, default_value_t = defaults::DEFAULT_RENEW_INTERVAL.0)]
    renew_ms: u64,
    /// Sweep interval, in ms.
    #[arg(long, default_value_t = defaults::DEFAULT_SWEEP_INTERVAL.0)]
    sweep_ms: u64,
    /// Time a store request may take before its outcome counts as unknown, in ms.
    #[arg(long, default_value_t = defaults::DEFAULT_REQUEST_TIMEOUT.0)]
    request_timeout_ms: u64,
    /// Wait between claims when the queue is empty, in ms.
    #[arg(long, default_value_t = defaults::DEFAULT_POLL_INTERVAL.0)]
    poll_ms: u64,
    /// Time running handlers get to finish after SIGTERM, in ms.
    #[arg(long, default_value_t = defaults::DEFAULT_GRACE.0)]
    grace_ms: u64,
    /// Prefix of this process's worker identity.
    #[arg(long, default_value = "worker-")]
    id_prefix: String,
    /// Chaos only: append every side effect to this log.
    #[arg(long)]
    effects_log: Option<PathBuf>,
    /// Chaos only: run with a deliberately planted bug.
    #[arg(long, value_enum)]
    planted_bug: Option<PlantedBug>,
    /// Chaos only: publish which Workers have store writes in flight here.
    #[arg(long)]
    inflight_file: Option<PathBuf>,
}

/// `NAME` or `NAME:LIMIT`.
fn parse_queue(s: &str) -> Result<(String, Option<u32>), String> {
    match s.rsplit_once(':') {
        Some((name, limit)) => {
            let limit = limit
                .parse::<u32>()
                .map_err(|_| format!("{limit:?} in {s:?} is not a queue limit (a whole number)"))?;
            Ok((name.to_string(), Some(limit)))
        }
        None => Ok((s.to_string(), None)),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    init_tracing();
    let args = Args::parse();
    let id = fresh_identity(&args.id_prefix);
    match run(args, &id).await {
        Ok(stats) => {
            tracing::info!(worker = %id, ?stats, "stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            tracing::error!(worker = %id, error = %e, "worker failed");
            ExitCode::from(2)
        }
    }
}

/// `RUST_LOG` as a list of targets and levels (default `info`).
fn init_tracing() {
    use tracing_subscriber::prelude::*;
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|s| s.parse::<tracing_subscriber::filter::Targets>().ok())
        .unwrap_or_else(|| {
            tracing_subscriber::filter::Targets::new().with_default(tracing::Level::INFO)
        });
    tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(filter)
        .init();
}

/// `PREFIX` + host + pid + a random nonce: unique to this process start.
fn fresh_identity(prefix: &str) -> String {
    let host: String = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_else(|_| "host".into())
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(MAX_HOST_IN_ID)
        .collect();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}{host}-{}-{nanos:08x}", std::process::id())
}

async fn run(args: Args, id: &str) -> Result<WorkerStats, Box<dyn std::error::Error>> {
    // First, before anything slow: a SIGTERM while connecting must end the
    // process cleanly, not by the signal's default action.
    let mut term = signal(SignalKind::terminate())?;
    // One identity per Worker, derived from the process's: in the audit log
    // each lease names the Worker that holds it.
    let workers: Vec<String> = if args.workers == 1 {
        vec![id.to_string()]
    } else {
        (0..args.workers).map(|k| format!("{id}.w{k}")).collect()
    };
    let configs = workers
        .iter()
        .map(|w| worker_config(&args, w))
        .collect::<Result<Vec<_>, _>>()?;
    let sweeper = SweeperConfig::new(Millis(args.sweep_ms), defaults::DEFAULT_SWEEP_BATCH)?
        .with_request_timeout(Millis(args.request_timeout_ms))?;
    let log = args
        .effects_log
        .as_deref()
        .map(|p| EffectLog::open(p, id, &workers).map(Arc::new))
        .transpose()?;
    let handlers = (0..workers.len())
        .map(|k| ChaosHandler::new(&workers, k, log.clone(), args.planted_bug))
        .collect();
    let board = InFlightBoard::open(args.inflight_file.as_deref(), workers.len())?;
    let process = Process {
        configs,
        handlers,
        sweeper,
        board,
    };
    if let Some(path) = &args.sqlite {
        let store = tokio::select! {
            store = SqliteStore::open(path, Policy::default()) => Arc::new(store?),
            _ = term.recv() => return Ok(WorkerStats::default()),
        };
        let stats = serve(store.clone(), process, term).await?;
        store.close().await;
        return Ok(stats);
    }
    let url = args
        .database_url
        .as_deref()
        .ok_or("set DATABASE_URL (or --database-url), or --sqlite PATH")?;
    let store = tokio::select! {
        store = connect_postgres(url, args.schema.as_deref(), id, args.vacuum_every_ms) => Arc::new(store?),
        _ = term.recv() => return Ok(WorkerStats::default()),
    };
    let stats = if args.coalesce {
        let coalescing = Arc::new(Coalescing::new(
            store.clone(),
            DEFAULT_COALESCE_BATCH,
            DEFAULT_FLUSHERS,
        ));
        serve(coalescing, process, term).await?
    } else {
        serve(store.clone(), process, term).await?
    };
    if let Some(v) = store.vacuum_stats() {
        tracing::info!(
            runs = v.runs,
            idle = v.idle,
            failed = v.failed,
            "the store's vacuums"
        );
    }
    store.close().await;
    Ok(stats)
}

/// The configuration of Worker `id`: every queue with its limit.
fn worker_config(args: &Args, id: &str) -> Result<WorkerConfig, leasehold_core::ConfigError> {
    let first = args
        .queues
        .first()
        .map_or(leasehold_chaos::job::QUEUE, |q| q.0.as_str());
    let mut b = WorkerConfig::builder(id, first)
        .concurrency(args.concurrency)
        .lease(Millis(args.lease_ms))
        .renew_interval(Millis(args.renew_ms))
        .request_timeout(Millis(args.request_timeout_ms))
        .poll_interval(Millis(args.poll_ms))
        .grace(Millis(args.grace_ms));
    for (name, limit) in &args.queues {
        b = match limit {
            Some(l) => b.queue(name.clone(), *l),
            // A queue without a limit may use the whole concurrency.
            None => b.queue(name.clone(), args.concurrency),
        };
    }
    b.build()
}

/// What one process runs on its store.
struct Process {
    configs: Vec<WorkerConfig>,
    handlers: Vec<ChaosHandler>,
    sweeper: SweeperConfig,
    board: Arc<InFlightBoard>,
}

/// Connects and applies the migrations, retrying while the server is
/// unreachable (it may be restarting), at most [`CONNECT_TRIES`] times.
async fn connect_postgres(
    url: &str,
    schema: Option<&str>,
    id: &str,
    vacuum_every_ms: Option<u64>,
) -> Result<PgStore, StoreError> {
    let mut last = StoreError::Unavailable("not tried".into());
    for attempt in 1..=CONNECT_TRIES {
        // The identity as application_name: operators (and the chaos
        // nemesis) can tell this process's connections apart.
        let mut builder = PgStore::builder(url).application_name(id);
        if let Some(schema) = schema {
            builder = builder.schema(schema);
        }
        if let Some(ms) = vacuum_every_ms {
            builder = builder.vacuum_every(Duration::from_millis(ms));
        }
        let connected = match builder.connect().await {
            Ok(store) => store.migrate().await.map(|()| store),
            Err(e) => Err(e),
        };
        match connected {
            Ok(store) => return Ok(store),
            Err(e @ StoreError::Unavailable(_)) => {
                tracing::warn!(attempt, error = %e, "database unavailable; retrying");
                last = e;
            }
            Err(e) => return Err(e),
        }
        tokio::time::sleep(CONNECT_RETRY).await;
    }
    Err(last)
}

/// Runs the Workers and the sweeper on the one `store` until SIGTERM or
/// Ctrl-C, then shuts down gracefully: handlers get the grace time,
/// unfinished leases are released as `Returned` (the job is due again at
/// once, the attempt refunded), and the sweeper stops.
async fn serve<S: Store>(
    store: Arc<S>,
    process: Process,
    mut term: tokio::signal::unix::Signal,
) -> Result<WorkerStats, Box<dyn std::error::Error>> {
    let (stop, shutdown) = shutdown_channel();
    let mut running = Vec::new();
    for (k, (config, handler)) in process
        .configs
        .into_iter()
        .zip(process.handlers)
        .enumerate()
    {
        tracing::info!(worker = %config.worker_id, queues = ?config.queues, "started");
        let view = Arc::new(Tracked::new(store.clone(), k, process.board.clone()));
        let worker = Worker::new(view, handler, TokioRuntime::new(), config);
        running.push(tokio::spawn(worker.run(shutdown.clone())));
    }
    let sweeper = Sweeper::new(store, TokioRuntime::new(), process.sweeper);
    let sweeper = tokio::spawn(sweeper.run(shutdown));
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: returning leases and stopping"),
        _ = tokio::signal::ctrl_c() => tracing::info!("Ctrl-C: returning leases and stopping"),
    }
    stop.shutdown();
    let mut all = WorkerStats::default();
    for worker in running {
        let s = worker.await?;
        all.claimed += s.claimed;
        all.committed += s.committed;
        all.release_lost += s.release_lost;
        all.release_unknown += s.release_unknown;
        all.abandoned += s.abandoned;
        all.claim_errors += s.claim_errors;
        all.undrained += s.undrained;
    }
    sweeper.await?;
    if all.undrained > 0 {
        return Err(format!(
            "{} leases still running after the grace time",
            all.undrained
        )
        .into());
    }
    Ok(all)
}
