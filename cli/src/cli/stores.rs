//! Which store a command runs on: `--store`, a scenario's `store = …`, or
//! memory; and the factories behind each, made once per command.

use super::timeout::{RunTimeout, DEFAULT_RUN_TIMEOUT};
use super::ExitCode;
use clap::Args;
use leasehold_model::catalogue::Variant;
use leasehold_model::config::SimConfig;
use leasehold_model::scenario::{load_file, Scenario};
use leasehold_model::store_kind::StoreKind;
use leasehold_sim::runner::{run_seed, HarnessError, PreparedConfig, RunOptions, SeedOutcome};
use leasehold_sim::stores::{MemoryFactory, PostgresFactory, SqliteFactory, StoreFactory};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The scenario of a one-seed command (`replay`, `shrink`), the stores it
/// runs on and the one it picks, that store checked usable; `Err` with the
/// exit code once the problem is printed.
pub fn open_scenario(
    path: &Path,
    args: &StoreArgs,
) -> Result<(Scenario, Stores, StoreKind), ExitCode> {
    let scenario = load_file(path).map_err(|e| {
        crate::diagnostic::eprint_load_errors(&e);
        ExitCode::Input
    })?;
    let stores = Stores::new(args);
    let kind = stores.kind_for(&scenario.config);
    if let Err(e) = stores.check(kind) {
        eprintln!("leasehold: {e}");
        return Err(ExitCode::Input);
    }
    Ok((scenario, stores, kind))
}

/// Store selection flags shared by `run`, `replay` and `shrink`, and the
/// wall-clock limit of each run they make.
#[derive(Clone, Debug, Args)]
pub struct StoreArgs {
    /// The store to simulate (default: each scenario's `store`, else memory).
    #[arg(long, value_enum)]
    pub store: Option<StoreKind>,
    /// PostgreSQL URL for `--store postgres` (a fresh schema per seed).
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Prefix of the per-seed PostgreSQL schemas (default: `leasehold_sim_<pid>`).
    #[arg(long, value_name = "PREFIX")]
    pub pg_schema_prefix: Option<String>,
    /// Directory for the per-seed SQLite files (default: the system's temp directory).
    #[arg(long, value_name = "DIR")]
    pub sqlite_dir: Option<PathBuf>,
    /// Wall-clock limit of one run (one seed); a run that hits it is stopped
    /// and reported as an error, not a pass.
    #[arg(long, value_name = "DURATION", default_value_t = DEFAULT_RUN_TIMEOUT)]
    pub run_timeout: RunTimeout,
    /// Interleave the SQL transactions of one instant at their statements,
    /// in an order drawn from the seed (every scenario; a scenario can ask
    /// for it with `interleave = true`; the memory store ignores it, and
    /// a run with --against turns it off, since its two sides must answer
    /// alike). What it covers and cannot: docs/ENGINE.md.
    #[arg(long)]
    pub interleave: bool,
    /// Draw only the inputs two different stores answer alike, as each
    /// side of `run --against` does: no batch part finishing out of order
    /// or conflicting alone, no `Conflict` on an enqueue. Replays one side
    /// of a differential finding exactly.
    #[arg(long)]
    pub compared: bool,
}

impl Default for StoreArgs {
    fn default() -> Self {
        StoreArgs {
            store: None,
            database_url: None,
            pg_schema_prefix: None,
            sqlite_dir: None,
            run_timeout: DEFAULT_RUN_TIMEOUT,
            interleave: false,
            compared: false,
        }
    }
}

/// The factories of one command.
pub struct Stores {
    flag: Option<StoreKind>,
    memory: Arc<MemoryFactory>,
    sqlite: Arc<SqliteFactory>,
    postgres: Option<Arc<PostgresFactory>>,
    postgres_error: Option<String>,
    run_timeout: std::time::Duration,
    /// Whether runs observe the built-in situations (on unless `--no-coverage`).
    coverage: bool,
    /// Whether SQL transactions run interleaved (`--interleave`).
    interleave: bool,
    /// Whether runs are one side of a comparison between two different
    /// stores (`RunOptions::differential`).
    differential: bool,
}

impl Stores {
    /// The stores the flags describe (nothing is connected yet).
    pub fn new(args: &StoreArgs) -> Stores {
        let (postgres, postgres_error) = match &args.database_url {
            None => (
                None,
                Some("the postgres store needs a database: give --database-url URL or set DATABASE_URL".to_string()),
            ),
            Some(url) => match PostgresFactory::new(url.clone(), args.pg_schema_prefix.clone()) {
                Ok(f) => (Some(Arc::new(f)), None),
                Err(e) => (None, Some(e.to_string())),
            },
        };
        Stores {
            flag: args.store,
            memory: Arc::new(MemoryFactory),
            sqlite: Arc::new(SqliteFactory::new(args.sqlite_dir.clone())),
            postgres,
            postgres_error,
            run_timeout: args.run_timeout.as_duration(),
            coverage: true,
            interleave: args.interleave,
            differential: args.compared,
        }
    }

    /// The same stores, running each seed as one side of a comparison
    /// between two different stores or not: both sides then draw only the
    /// inputs both stores answer alike (`RunOptions::differential`).
    pub fn comparing(mut self, on: bool) -> Stores {
        self.differential |= on;
        self
    }

    /// The same stores, observing the built-in situations of each run or
    /// not (the history is the same either way).
    pub fn observing_coverage(mut self, on: bool) -> Stores {
        self.coverage = on;
        self
    }

    /// The store a scenario runs on.
    pub fn kind_for(&self, cfg: &SimConfig) -> StoreKind {
        self.flag.or(cfg.store).unwrap_or(StoreKind::Memory)
    }

    /// Whether the `kind` store carries the catalogue's store-side bug `v`
    /// (asked of its factory, or of the PostgreSQL adapter before a URL
    /// is given).
    pub fn carries(&self, kind: StoreKind, v: Variant) -> bool {
        match kind {
            StoreKind::Memory => self.memory.carries_store_variant(v),
            StoreKind::Sqlite => self.sqlite.carries_store_variant(v),
            StoreKind::Postgres => PostgresFactory::carries(v),
        }
    }

    /// Checks up front that `kind` can be used (a URL is given and the
    /// server answers), so a bad setup is one clear error, not one per seed.
    pub fn check(&self, kind: StoreKind) -> Result<(), String> {
        match kind {
            StoreKind::Memory => Ok(()),
            StoreKind::Sqlite => match &self.sqlite_dir() {
                Some(d) if !d.is_dir() => Err(format!(
                    "sqlite: --sqlite-dir {} is not a directory",
                    d.display()
                )),
                _ => Ok(()),
            },
            StoreKind::Postgres => {
                let f = self.postgres()?;
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())?;
                rt.block_on(f.probe()).map_err(|e| e.to_string())
            }
        }
    }

    fn sqlite_dir(&self) -> Option<PathBuf> {
        self.sqlite.dir().map(PathBuf::from)
    }

    fn postgres(&self) -> Result<&Arc<PostgresFactory>, String> {
        self.postgres
            .as_ref()
            .ok_or_else(|| self.postgres_error.clone().unwrap_or_default())
    }

    /// Runs one seed on `kind`.
    pub fn run(
        &self,
        kind: StoreKind,
        cfg: &PreparedConfig,
        seed: u64,
    ) -> Result<SeedOutcome, HarnessError> {
        let opts = RunOptions {
            limit: Some(self.run_timeout),
            skip_coverage: !self.coverage,
            interleave: self.interleave,
            differential: self.differential,
            ..RunOptions::default()
        };
        match kind {
            StoreKind::Memory => run_seed(cfg, seed, &self.memory, opts),
            StoreKind::Sqlite => run_seed(cfg, seed, &self.sqlite, opts),
            StoreKind::Postgres => {
                let f = self.postgres().map_err(HarnessError::Store)?;
                run_seed(cfg, seed, f, opts)
            }
        }
    }
}
