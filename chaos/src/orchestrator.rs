//! One chaos run, phase by phase:
//!
//! 1. set up the store (a fresh PostgreSQL schema, or a fresh SQLite file)
//!    and draw the jobs and the nemesis schedule from the seed;
//! 2. start the worker processes (in the production shape each runs
//!    several `Worker`s on one store, serving several queues);
//! 3. the fault window: enqueue the jobs evenly over its first 90 % while
//!    the nemesis injects its schedule;
//! 4. healing: every fault ends (resume, restart), then wait (bounded) for
//!    every job to reach a terminal state;
//! 5. stop the workers with SIGTERM (graceful: leases are returned);
//! 6. export the audit log and the final rows, read the side-effect logs,
//!    run the checks.
//!
//! Every exit path kills the worker processes (the [`Fleet`] is dropped),
//! drops the PostgreSQL schema, and removes the temporary directory unless
//! the run found a violation (its logs are the evidence) or `--work-dir`
//! was given.

use crate::checks::{self, Evidence, Findings};
use crate::config::{request_timeout, ChaosConfig, StoreTarget, WORKER_GRACE};
use crate::error::ChaosError;
use crate::fleet::{read_logs, wall_ms, Fleet, WorkerSpec};
use crate::job::{ChaosJob, MAX_ATTEMPTS};
use crate::nemesis::Nemesis;
use crate::report::Report;
use crate::rng::Rng;
use crate::schedule::{plan, schedule_hash, PlanInputs};
use crate::store::RunStore;
use leasehold_core::{EventKind, JobId, NewJob, Outcome};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the orchestrator wakes during the fault window.
const TICK: Duration = Duration::from_millis(20);
/// How often healing checks for unfinished jobs.
const HEAL_POLL: Duration = Duration::from_millis(250);
/// Most jobs enqueued in one transaction.
const ENQUEUE_BATCH: usize = 500;
/// Share of the fault window over which jobs are enqueued (per mille).
const ENQUEUE_SPREAD_PERMILLE: u128 = 900;
/// How often a long run says how far it got (on stderr).
const PROGRESS_EVERY: Duration = Duration::from_secs(30);
/// Longest wait for the workers to exit after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// What a finished run hands back.
#[derive(Debug)]
pub struct ChaosOutcome {
    /// The report (printable).
    pub report: Report,
    /// What the checks found.
    pub findings: Findings,
    /// Where logs and the audit export are, if kept.
    pub kept_dir: Option<PathBuf>,
}

impl ChaosOutcome {
    /// Whether the run passed every check.
    pub fn passed(&self) -> bool {
        self.findings.violations.is_empty()
    }
}

/// Runs `cfg` on a fresh single-threaded tokio runtime (the fleet's
/// processes get a parent-death signal, tied to this thread).
pub fn run_blocking(cfg: &ChaosConfig, program: &str) -> Result<ChaosOutcome, ChaosError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ChaosError::io("start a tokio runtime", Path::new("-"), e))?;
    rt.block_on(run(cfg, program))
}

/// Runs `cfg`; `program` is how the rerun command names the tool.
pub async fn run(cfg: &ChaosConfig, program: &str) -> Result<ChaosOutcome, ChaosError> {
    if !cfg.worker_bin.is_file() {
        return Err(ChaosError::NoWorkerBinary {
            path: cfg.worker_bin.clone(),
        });
    }
    let (dir, temp) = match &cfg.work_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| ChaosError::io("create", dir, e))?;
            (dir.clone(), None)
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("leasehold-chaos.")
                .tempdir()
                .map_err(|e| {
                    ChaosError::io("create a temporary directory", &std::env::temp_dir(), e)
                })?;
            (t.path().to_path_buf(), Some(t))
        }
    };
    // Unique per run, so concurrent runs on one server never share a schema.
    let run_id = format!(
        "{:08x}",
        (cfg.seed ^ u64::from(std::process::id()) ^ (wall_ms() as u64).rotate_left(17)) as u32
    );
    let schema = format!("chaos_{run_id}");
    let sqlite_db = dir.join("chaos.db");
    let store = match &cfg.store {
        StoreTarget::Postgres { url, .. } => RunStore::postgres(url, &schema).await?,
        StoreTarget::Sqlite => RunStore::sqlite(&sqlite_db).await?,
    };
    let interrupted = watch_interrupts();
    let result = run_on(cfg, program, &store, &dir, &run_id, &schema, &interrupted).await;
    let drop_schema = matches!(cfg.store, StoreTarget::Postgres { .. }).then_some(schema.as_str());
    store.close(drop_schema).await;
    let mut outcome = result?;
    if !outcome.passed() || cfg.work_dir.is_some() {
        outcome.kept_dir = Some(dir.clone());
        if let Some(t) = temp {
            // The evidence of a failing run stays; its path is in the report.
            let _ = t.keep();
        }
    }
    outcome.report.kept_dir = outcome.kept_dir.clone();
    Ok(outcome)
}

/// SIGINT and SIGTERM set the flag; the phases check it every tick.
fn watch_interrupts() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    tokio::spawn(async move {
        let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        else {
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        f.store(true, Ordering::SeqCst);
    });
    flag
}

#[allow(clippy::too_many_arguments)]
async fn run_on(
    cfg: &ChaosConfig,
    program: &str,
    store: &RunStore,
    dir: &Path,
    run_id: &str,
    schema: &str,
    interrupted: &AtomicBool,
) -> Result<ChaosOutcome, ChaosError> {
    let started = Instant::now();
    let mut rng = Rng::new(cfg.seed, 2);
    let jobs: Vec<ChaosJob> = (0..cfg.jobs)
        .map(|n| ChaosJob::draw_in(&mut rng, n, cfg.work_ms))
        .collect();
    let queues = cfg.shape.job_queues(cfg.seed, cfg.jobs);
    let schedule = plan(
        cfg.seed,
        &PlanInputs {
            workers: cfg.workers,
            duration: cfg.duration,
            lease: cfg.lease,
            sweep: cfg.sweep,
            fault_every: cfg.fault_every,
            kinds: cfg.faults.clone(),
        },
    );
    let hash = schedule_hash(&schedule);
    write_lines(
        &dir.join("schedule.txt"),
        schedule
            .iter()
            .map(|p| format!("{:>8}ms  {}", p.at.as_millis(), p.fault)),
    )?;
    let spec = WorkerSpec {
        bin: cfg.worker_bin.clone(),
        args: worker_args(cfg, schema, &dir.join("chaos.db")),
        dir: dir.to_path_buf(),
        id_prefix: format!("c{run_id}-"),
    };
    let pg = match &cfg.store {
        StoreTarget::Postgres { control, .. } => control.clone(),
        StoreTarget::Sqlite => None,
    };
    let sqlite_db = matches!(cfg.store, StoreTarget::Sqlite).then(|| dir.join("chaos.db"));
    let mut nemesis = Nemesis::new(schedule.clone(), sqlite_db, pg);
    let mut fleet = Fleet::start(spec, cfg.workers)?;
    let mut problems = Vec::new();
    let mut ids: BTreeMap<JobId, ChaosJob> = BTreeMap::new();
    let mut enqueued = 0usize;

    // The fault window.
    let window_start = Instant::now();
    let window_start_ms = wall_ms();
    let mut next_progress = PROGRESS_EVERY;
    // Bounded by the window's length.
    while window_start.elapsed() < cfg.duration {
        if interrupted.load(Ordering::SeqCst) {
            return Err(ChaosError::Interrupted);
        }
        let elapsed = window_start.elapsed();
        let due = (jobs.len() as u128 * elapsed.as_millis() * 1000
            / (cfg.duration.as_millis() * ENQUEUE_SPREAD_PERMILLE).max(1))
        .min(jobs.len() as u128) as usize;
        if due > enqueued && !nemesis.restarting() {
            enqueued += enqueue(store, &jobs[enqueued..due], &queues, &mut ids).await;
        }
        nemesis.tick(elapsed, &mut fleet, store).await?;
        for (slot, what) in fleet.reap() {
            problems.push(what);
            fleet.restart(slot)?;
        }
        if elapsed >= next_progress {
            next_progress += PROGRESS_EVERY;
            eprintln!(
                "  progress: {}s of {}s of faults, {} of {} jobs enqueued, {} faults injected, \
                 {} worker processes started",
                elapsed.as_secs(),
                cfg.duration.as_secs(),
                enqueued,
                jobs.len(),
                nemesis.injected.len(),
                fleet.incarnations.len()
            );
        }
        tokio::time::sleep(TICK).await;
    }
    let window_end_ms = wall_ms();

    // Healing.
    nemesis.heal(&mut fleet)?;
    let heal_start = Instant::now();
    let mut healed = None;
    let mut next_progress = PROGRESS_EVERY;
    // Bounded by the heal timeout.
    while heal_start.elapsed() < cfg.heal_timeout {
        if interrupted.load(Ordering::SeqCst) {
            return Err(ChaosError::Interrupted);
        }
        if enqueued < jobs.len() {
            let end = (enqueued + ENQUEUE_BATCH).min(jobs.len());
            let n = enqueue(store, &jobs[enqueued..end], &queues, &mut ids).await;
            enqueued += n;
            if n == 0 {
                tokio::time::sleep(HEAL_POLL).await;
            }
            continue;
        }
        for (slot, what) in fleet.reap() {
            problems.push(what);
            fleet.restart(slot)?;
        }
        nemesis.watch_listeners(&fleet, store).await;
        let unfinished = store.unfinished().await;
        if let Ok(0) = unfinished {
            healed = Some(heal_start.elapsed());
            break;
        }
        if heal_start.elapsed() >= next_progress {
            next_progress += PROGRESS_EVERY;
            eprintln!(
                "  progress: healing for {}s (at most {}s), {} jobs unfinished",
                heal_start.elapsed().as_secs(),
                cfg.heal_timeout.as_secs(),
                unfinished.map_or("unknown".into(), |n| n.to_string())
            );
        }
        tokio::time::sleep(HEAL_POLL).await;
    }
    if healed.is_none() {
        problems.push(format!(
            "healing did not finish within {:?}: {} of {} jobs enqueued, {} unfinished",
            cfg.heal_timeout,
            enqueued,
            jobs.len(),
            store
                .unfinished()
                .await
                .map_or("unknown".into(), |n| n.to_string())
        ));
    }
    nemesis.finish_watches(&fleet, store).await;
    problems.append(&mut nemesis.problems);
    problems.extend(fleet.stop_all(STOP_TIMEOUT));

    // Export and check.
    let events = store.events().await?;
    write_lines(
        &dir.join("audit.jsonl"),
        events
            .iter()
            .map(|e| serde_json::to_string(e).unwrap_or_default()),
    )?;
    let rows = store.rows().await?;
    let logs = read_logs(&fleet.incarnations)?;
    write_lines(
        &dir.join("faults.txt"),
        nemesis.injected.iter().map(|f| {
            format!(
                "{}..{}  {}  pid {}  {}  {}",
                f.from_ms,
                f.to_ms,
                f.planned,
                f.pid.map_or("-".into(), |p| p.to_string()),
                f.worker.as_deref().unwrap_or("-"),
                f.note
            )
        }),
    )?;
    let findings = checks::run_all(&Evidence {
        store: &cfg.store,
        expected: &ids,
        rows: &rows,
        events: &events,
        logs: &logs,
        incarnations: &fleet.incarnations,
        faults: &nemesis.injected,
        process_problems: &problems,
        aftermath_ms: 2 * request_timeout(cfg.lease).0 as i64,
    });
    let succeeded_in_window = events
        .iter()
        .filter(|e| {
            matches!(
                &e.kind,
                EventKind::Released {
                    outcome: Outcome::Succeeded(_),
                    ..
                }
            ) && (window_start_ms..=window_end_ms).contains(&e.at.0)
        })
        .count() as u64;
    let report = Report {
        store: cfg.store.name(),
        seed: cfg.seed,
        workers: cfg.workers,
        shape: cfg.shape,
        workers_per_process: cfg.workers_per_process,
        queues: cfg.queues(),
        coalescing: coalesces(cfg),
        vacuum_every_ms: vacuums(cfg),
        concurrency: cfg.concurrency,
        lease_ms: cfg.lease.0,
        planted_bug: cfg.planted_bug,
        jobs: jobs.len() as u64,
        enqueued: ids.len() as u64,
        processes: fleet.incarnations.len() as u64,
        planned_faults: schedule.len() as u64,
        schedule_hash: hash,
        faults: nemesis.injected.clone(),
        window: Duration::from_millis((window_end_ms - window_start_ms).max(0) as u64),
        succeeded_in_window,
        healed,
        wall: started.elapsed(),
        stats: findings.stats.clone(),
        violations: findings.violations.len() as u64,
        rerun: crate::report::rerun_command(program, cfg),
        kept_dir: None,
    };
    Ok(ChaosOutcome {
        report,
        findings,
        kept_dir: None,
    })
}

/// Enqueues `batch` (idempotency keys make a retry after an unknown
/// outcome safe); answers how many were enqueued (all or none).
async fn enqueue(
    store: &RunStore,
    batch: &[ChaosJob],
    queues: &[&str],
    ids: &mut BTreeMap<JobId, ChaosJob>,
) -> usize {
    let batch = &batch[..batch.len().min(ENQUEUE_BATCH)];
    let specs: Vec<NewJob> = batch
        .iter()
        .map(|j| {
            NewJob::new(queues[j.n as usize], j.to_payload())
                .max_attempts(MAX_ATTEMPTS)
                .idempotency_key(format!("chaos-{}", j.n))
        })
        .collect();
    match store.enqueue_many(&specs).await {
        Ok(got) if got.len() == batch.len() => {
            for (id, job) in got.into_iter().zip(batch) {
                ids.insert(id, job.clone());
            }
            batch.len()
        }
        Ok(_) => 0,
        Err(e) => {
            tracing::debug!(error = %e, "enqueue failed; retrying next tick");
            0
        }
    }
}

fn worker_args(cfg: &ChaosConfig, schema: &str, sqlite_db: &Path) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    let mut push = |k: &str, v: String| {
        a.push(k.into());
        a.push(v.into());
    };
    match &cfg.store {
        StoreTarget::Postgres { url, .. } => {
            push("--database-url", url.clone());
            push("--schema", schema.to_string());
        }
        StoreTarget::Sqlite => push("--sqlite", sqlite_db.display().to_string()),
    }
    push("--workers", cfg.workers_per_process.to_string());
    for q in cfg.queues() {
        push("--queue", crate::shape::queue_arg(&q));
    }
    push("--concurrency", cfg.concurrency.to_string());
    push("--lease-ms", cfg.lease.0.to_string());
    push("--renew-ms", cfg.renew.0.to_string());
    push("--sweep-ms", cfg.sweep.0.to_string());
    push(
        "--request-timeout-ms",
        request_timeout(cfg.lease).0.to_string(),
    );
    push("--poll-ms", cfg.shape.poll().0.to_string());
    push("--grace-ms", WORKER_GRACE.0.to_string());
    if let Some(bug) = cfg.planted_bug {
        push("--planted-bug", bug.as_str().to_string());
    }
    if let Some(ms) = vacuums(cfg) {
        push("--vacuum-every-ms", ms.to_string());
    }
    if coalesces(cfg) {
        a.push("--coalesce".into());
    }
    a
}

/// The period of the workers' PostgreSQL store's own vacuums, if any.
fn vacuums(cfg: &ChaosConfig) -> Option<u64> {
    match cfg.store {
        StoreTarget::Postgres { .. } => cfg.shape.vacuum_every_ms(),
        StoreTarget::Sqlite => None,
    }
}

/// Whether the workers wrap their PostgreSQL store in `Coalescing`.
fn coalesces(cfg: &ChaosConfig) -> bool {
    cfg.shape.coalesces() && matches!(cfg.store, StoreTarget::Postgres { .. })
}

fn write_lines(path: &Path, lines: impl Iterator<Item = String>) -> Result<(), ChaosError> {
    let file = std::fs::File::create(path).map_err(|e| ChaosError::io("create", path, e))?;
    let mut w = std::io::BufWriter::new(file);
    for l in lines {
        writeln!(w, "{l}").map_err(|e| ChaosError::io("write", path, e))?;
    }
    w.flush().map_err(|e| ChaosError::io("write", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Shape;
    use leasehold_core::worker::config as defaults;

    fn args(store: StoreTarget, shape: Shape) -> Vec<String> {
        let cfg = ChaosConfig::builder(store, 1, "w".into())
            .shape(shape)
            .build()
            .unwrap();
        worker_args(&cfg, "s", Path::new("db"))
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    fn value<'a>(a: &'a [String], flag: &str) -> Vec<&'a str> {
        a.windows(2)
            .filter(|w| w[0] == flag)
            .map(|w| w[1].as_str())
            .collect()
    }

    #[test]
    fn production_processes_run_several_workers_on_several_queues_coalescing_on_postgres() {
        let pg = StoreTarget::Postgres {
            url: "postgres://x".into(),
            control: None,
        };
        let a = args(pg.clone(), Shape::Production);
        assert_eq!(value(&a, "--workers"), ["4"]);
        assert_eq!(
            value(&a, "--concurrency"),
            [defaults::DEFAULT_CONCURRENCY.to_string()]
        );
        assert_eq!(value(&a, "--queue"), ["chaos", "chaos-b:8", "chaos-c:2"]);
        assert_eq!(value(&a, "--poll-ms"), ["1000"]);
        assert!(a.iter().any(|x| x == "--coalesce"), "{a:?}");
        assert_eq!(value(&a, "--vacuum-every-ms"), ["500"]);
        let a = args(StoreTarget::Sqlite, Shape::Production);
        assert!(
            !a.iter().any(|x| x == "--coalesce"),
            "no Coalescing on SQLite"
        );
        assert!(value(&a, "--vacuum-every-ms").is_empty(), "PostgreSQL only");
        let a = args(pg, Shape::Single);
        assert_eq!(value(&a, "--workers"), ["1"]);
        assert_eq!(value(&a, "--queue"), ["chaos"]);
        assert!(!a.iter().any(|x| x == "--coalesce"), "{a:?}");
        assert!(value(&a, "--vacuum-every-ms").is_empty(), "{a:?}");
    }
}
