//! `leasehold chaos …` / `leasehold-chaos …`: arguments, then one run and
//! its report. Exit status: 0 no violation; 1 a violation; 2 bad input or
//! a harness error; 130 interrupted.

use crate::config::{ChaosConfig, FaultKind, PgControl, StoreTarget};
use crate::error::ChaosError;
use crate::job::PlantedBug;
use crate::orchestrator::run_blocking;
use crate::shape::Shape;
use clap::{Parser, ValueEnum};
use leasehold_core::Millis;
use std::path::PathBuf;
use std::time::Duration;

/// The worker program's name, looked for next to the running program.
pub const WORKER_BIN: &str = "leasehold-chaos-worker";
/// Most violations printed in full (all are counted).
const MAX_PRINTED: usize = 50;

/// Exit status: every check held.
pub const EXIT_OK: i32 = 0;
/// Exit status: a violation.
pub const EXIT_VIOLATION: i32 = 1;
/// Exit status: bad input or a harness error.
pub const EXIT_INPUT: i32 = 2;
/// Exit status: interrupted (SIGINT/SIGTERM).
pub const EXIT_INTERRUPTED: i32 = 130;

/// Which store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StoreArg {
    /// PostgreSQL at --database-url (a fresh schema per run).
    Postgres,
    /// A SQLite file shared by the worker processes.
    Sqlite,
}

/// Real worker processes on a real store under real faults, then the
/// offline checks. The nemesis schedule replays from the seed; the
/// interleavings of real processes do not.
#[derive(Debug, Parser)]
#[command(
    name = "leasehold chaos",
    version,
    after_help = "Exit status: 0 no violation; 1 a violation (the report names each, with the \
                  seed and the command that reruns it); 2 bad input or a harness error; 130 \
                  interrupted."
)]
pub struct ChaosArgs {
    /// The store.
    #[arg(long, value_enum)]
    pub store: StoreArg,
    /// PostgreSQL URL (the run makes and drops its own schema).
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Seed of the fault schedule and the job mix: a number, or `random`.
    #[arg(long, value_name = "N|random", default_value = "random")]
    pub seed: String,
    /// Jobs to run.
    #[arg(long, default_value_t = crate::config::DEFAULT_JOBS)]
    pub jobs: u64,
    /// Length of the fault window (jobs are enqueued over it), e.g. `40s`, `10m`.
    #[arg(long, value_parser = parse_duration, default_value = "40s")]
    pub duration: Duration,
    /// Longest healing phase after the faults end.
    #[arg(long, value_parser = parse_duration, default_value = "120s")]
    pub heal_timeout: Duration,
    /// Worker processes.
    #[arg(long, default_value_t = crate::config::DEFAULT_WORKERS)]
    pub workers: u32,
    /// How each worker process is built: `production` (several Workers on
    /// one store, several queues with limits, the default concurrency and
    /// poll interval, LISTEN/NOTIFY, Coalescing on PostgreSQL) or `single`
    /// (one Worker at concurrency 8 on one queue, polling every 50 ms).
    #[arg(long, value_enum, default_value = "production")]
    pub shape: Shape,
    /// `Worker`s in each process, on one shared store (default: 4 in the
    /// production shape, 1 in the single shape).
    #[arg(long)]
    pub workers_per_process: Option<u32>,
    /// Jobs each Worker runs at once (default: 128, leasehold's default, in
    /// the production shape; 8 in the single shape).
    #[arg(long)]
    pub concurrency: Option<u32>,
    /// Shortest and longest work of a job in milliseconds, as `MIN-MAX`
    /// (default: 5-60 in the single shape, 20-1000 in the production shape).
    #[arg(long, value_name = "MIN-MAX", value_parser = parse_work_ms)]
    pub work_ms: Option<(u64, u64)>,
    /// Lease in milliseconds.
    #[arg(long, default_value_t = crate::config::DEFAULT_LEASE.0)]
    pub lease_ms: u64,
    /// Renew interval in milliseconds.
    #[arg(long, default_value_t = crate::config::DEFAULT_RENEW.0)]
    pub renew_ms: u64,
    /// Sweep interval in milliseconds (every worker process sweeps).
    #[arg(long, default_value_t = crate::config::DEFAULT_SWEEP.0)]
    pub sweep_ms: u64,
    /// Mean gap between faults, e.g. `2s`, `500ms`.
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    pub fault_every: Duration,
    /// Fault kinds (comma-separated; default: all that apply to the store
    /// and the shape, the PostgreSQL restart only with --pg-ctl and --pg-data).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub faults: Option<Vec<FaultKind>>,
    /// Plant a bug in the workers, to see the checks catch it.
    #[arg(long, value_enum)]
    pub planted_bug: Option<PlantedBug>,
    /// The worker program (default: `leasehold-chaos-worker` next to this program).
    #[arg(long, env = "LEASEHOLD_CHAOS_WORKER")]
    pub worker_bin: Option<PathBuf>,
    /// Keep logs, side-effect logs and the audit export here (default: a
    /// temporary directory, kept only when the run finds a violation).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// `pg_ctl`, for the restart fault (scripts/with-postgres.sh exports it).
    #[arg(long, env = "LEASEHOLD_PG_CTL")]
    pub pg_ctl: Option<PathBuf>,
    /// The PostgreSQL data directory, for the restart fault.
    #[arg(long, env = "LEASEHOLD_PG_DATA")]
    pub pg_data: Option<PathBuf>,
    /// The server log file for `pg_ctl -l`.
    #[arg(long, env = "LEASEHOLD_PG_LOG")]
    pub pg_log: Option<PathBuf>,
    /// The user the server runs as (`runuser -u USER pg_ctl …` when root).
    #[arg(long, env = "LEASEHOLD_PG_USER")]
    pub pg_user: Option<String>,
}

/// Parses `MIN-MAX` milliseconds (bounds are checked at build time).
fn parse_work_ms(s: &str) -> Result<(u64, u64), String> {
    let bad = || format!("{s:?} is not MIN-MAX in whole milliseconds, e.g. 200-1000");
    let (min, max) = s.split_once('-').ok_or_else(bad)?;
    Ok((
        min.trim().parse().map_err(|_| bad())?,
        max.trim().parse().map_err(|_| bad())?,
    ))
}

/// Parses `1h2m3s400ms`-style durations.
fn parse_duration(s: &str) -> Result<Duration, String> {
    leasehold_model::duration::parse_ms(s)
        .map(Duration::from_millis)
        .map_err(|e| e.to_string())
}

impl ChaosArgs {
    /// The validated configuration.
    pub fn config(&self) -> Result<ChaosConfig, ChaosError> {
        let store = match self.store {
            StoreArg::Sqlite => StoreTarget::Sqlite,
            StoreArg::Postgres => {
                let url = self.database_url.clone().filter(|u| !u.is_empty()).ok_or(
                    ChaosError::BadArg {
                        flag: "--database-url",
                        reason: "--store postgres needs a URL (or DATABASE_URL)".into(),
                    },
                )?;
                let control = match (&self.pg_ctl, &self.pg_data) {
                    (Some(pg_ctl), Some(data)) => Some(PgControl {
                        pg_ctl: pg_ctl.clone(),
                        data: data.clone(),
                        log: self.pg_log.clone(),
                        user: self.pg_user.clone().filter(|u| !u.is_empty()),
                    }),
                    _ => None,
                };
                StoreTarget::Postgres { url, control }
            }
        };
        let seed = match self.seed.as_str() {
            "random" => random_seed(),
            n => n.parse().map_err(|_| ChaosError::BadArg {
                flag: "--seed",
                reason: format!("{n:?} is neither a whole number nor `random`"),
            })?,
        };
        let worker_bin = match &self.worker_bin {
            Some(p) => p.clone(),
            None => default_worker_bin(),
        };
        let mut b = ChaosConfig::builder(store, seed, worker_bin)
            .jobs(self.jobs)
            .duration(self.duration)
            .heal_timeout(self.heal_timeout)
            .workers(self.workers)
            .shape(self.shape)
            .lease(Millis(self.lease_ms))
            .renew(Millis(self.renew_ms))
            .sweep(Millis(self.sweep_ms))
            .fault_every(self.fault_every)
            .planted_bug(self.planted_bug)
            .work_dir(self.work_dir.clone());
        if let Some(kinds) = &self.faults {
            b = b.faults(kinds.clone());
        }
        if let Some(n) = self.workers_per_process {
            b = b.workers_per_process(n);
        }
        if let Some(n) = self.concurrency {
            b = b.concurrency(n);
        }
        if let Some((min, max)) = self.work_ms {
            b = b.work_ms(min, max);
        }
        b.build()
    }
}

/// A seed from the clock and the process id (printed, so it can be rerun).
fn random_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    (nanos ^ u64::from(std::process::id()).rotate_left(32)) % 1_000_000_000
}

/// `leasehold-chaos-worker` next to the running program.
fn default_worker_bin() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(WORKER_BIN)))
        .unwrap_or_else(|| PathBuf::from(WORKER_BIN))
}

/// Parses `argv` (program name first) and runs; `program` names the tool
/// in the rerun command. Answers the exit status.
pub fn main_from(argv: impl IntoIterator<Item = std::ffi::OsString>, program: &str) -> i32 {
    let args = match ChaosArgs::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_INPUT } else { EXIT_OK };
        }
    };
    let cfg = match args.config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{program}: {e}");
            return EXIT_INPUT;
        }
    };
    let kinds: Vec<&str> = cfg.faults.iter().map(|k| k.as_str()).collect();
    eprintln!(
        "{program}: seed {} on {}: {} jobs over {:?}, {} shape, {} processes x {} Workers x {}, \
         faults {}; the schedule replays from the seed, the interleavings do not",
        cfg.seed,
        cfg.store.name(),
        cfg.jobs,
        cfg.duration,
        cfg.shape.as_str(),
        cfg.workers,
        cfg.workers_per_process,
        cfg.concurrency,
        kinds.join(",")
    );
    match run_blocking(&cfg, program) {
        Ok(outcome) => {
            for v in outcome.findings.violations.iter().take(MAX_PRINTED) {
                println!("{v}\n");
            }
            if outcome.findings.violations.len() > MAX_PRINTED {
                println!(
                    "… and {} more violations\n",
                    outcome.findings.violations.len() - MAX_PRINTED
                );
            }
            println!("{}", outcome.report);
            if outcome.passed() {
                EXIT_OK
            } else {
                EXIT_VIOLATION
            }
        }
        Err(ChaosError::Interrupted) => {
            eprintln!("{program}: interrupted; worker processes killed");
            EXIT_INTERRUPTED
        }
        Err(e) => {
            eprintln!("{program}: {e}");
            EXIT_INPUT
        }
    }
}
