//! Command-line settings (clap derive).

use clap::{Parser, ValueEnum};
use leasehold_core::{ConfigError, Millis, PrunerConfig};
use leasehold_sqlite::Durability;

/// How the drain runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Each worker loops: claim up to `--batch`, start each (no-op),
    /// release them all with one batch release.
    Batch,
    /// The store's batched ceiling (a `batch` drain), then W instances of
    /// the real `leasehold_core::Worker` runtime with its default
    /// configuration, on the same store in the same run; reports both and
    /// their ratio.
    Worker,
    /// Pickup latency: jobs arrive at `--rate` per second on an idle queue
    /// for `--duration` seconds; one default `Worker` drains them
    /// (`latency.rs`).
    Latency,
    /// A long run with retention on: `--jobs` jobs arrive at `--rate` per
    /// second, `--workers` default `Worker`s drain them and the core's
    /// `Pruner` prunes with `--retention`; prints sizes every
    /// `--report-every` seconds, then checks nothing was lost, run twice
    /// or pruned early (`soak.rs`).
    Soak,
    /// PostgreSQL: `--jobs` finished jobs older than `--retention`, then
    /// default `Worker`s' throughput on fresh jobs for `--interval`
    /// seconds without pruning and the same with a `Pruner` deleting the
    /// backlog; watches `pg_locks` for claims waiting on it
    /// (`prune_claims.rs`).
    PruneClaims,
}

/// Which stores to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// PostgreSQL at `DATABASE_URL` (skipped when unset).
    Postgres,
    /// SQLite in a temporary file.
    Sqlite,
    /// Both, PostgreSQL first.
    Both,
}

/// SQLite's `synchronous` setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SqliteSync {
    /// `synchronous=FULL`.
    Full,
    /// `synchronous=NORMAL`.
    Normal,
}

/// Throughput and latency of the leasehold SQL adapters: enqueue N no-op
/// jobs, drain them with W concurrent workers.
#[derive(Clone, Debug, Parser)]
#[command(name = "leasehold-bench", version, about)]
pub struct Settings {
    /// Jobs to enqueue and drain.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub jobs: u64,
    /// Concurrent workers.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub workers: u64,
    /// Leases per claim and releases per batch (`--mode batch`).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub batch: u32,
    /// Leases each `Worker` runs at once (`--mode worker`); unset, the
    /// `Worker`'s default (`leasehold_core::worker::config::DEFAULT_CONCURRENCY`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub concurrency: Option<u32>,
    /// How the drain runs.
    #[arg(long, value_enum, default_value_t = Mode::Batch)]
    pub mode: Mode,
    /// Do not write the audit log.
    #[arg(long)]
    pub no_audit: bool,
    /// Do not bring the store's statistics up to date after the enqueue
    /// (`ANALYZE`): the drain then plans with whatever autovacuum left, as a
    /// queue filled in bulk and drained at once does.
    #[arg(long)]
    pub no_analyze: bool,
    /// Which stores to measure.
    #[arg(long, value_enum, default_value_t = Backend::Both)]
    pub backend: Backend,
    /// SQLite's `synchronous` setting.
    #[arg(long, value_enum, default_value_t = SqliteSync::Full)]
    pub sqlite_sync: SqliteSync,
    /// Coalesce one process's claims and releases on PostgreSQL.
    #[arg(long)]
    pub coalesce: bool,
    /// Merged batches in flight at once on PostgreSQL (`PgStoreBuilder::
    /// batch_flushers`); unset, the store's default.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub flushers: Option<u32>,
    /// On PostgreSQL, the store vacuums `leasehold_jobs` itself, looking
    /// every this many milliseconds (`PgStoreBuilder::vacuum_every`);
    /// unset, only the server's autovacuum runs.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(50..=3_600_000))]
    pub vacuum_every: Option<u64>,
    /// Arrivals per second (`--mode latency`, `--mode soak`).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub rate: u32,
    /// Seconds of recorded arrivals (`--mode latency`).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=3_600))]
    pub duration: u64,
    /// Retention `R` in seconds (`--mode soak`, `--mode prune-claims`); at
    /// least `leasehold_core::MIN_RETENTION`.
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(60..=86_400))]
    pub retention: u64,
    /// Seconds between two report lines (`--mode soak`).
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3_600))]
    pub report_every: u64,
    /// Seconds between two Pruner wake-ups; unset, `PrunerConfig`'s default.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=3_600))]
    pub prune_period: Option<u64>,
    /// Jobs per prune call; unset, `PrunerConfig`'s default.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub prune_batch: Option<u32>,
    /// Calls per Pruner wake-up; unset, `PrunerConfig`'s default.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub prune_rounds: Option<u32>,
    /// Seconds of each measured interval (`--mode prune-claims`).
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3_600))]
    pub interval: u64,
    /// Measure N times on the same store (each round enqueues and drains
    /// `--jobs` anew); prints each round, then the range of each figure.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub rounds: u64,
    /// Machine output: one JSON object per store and round on stdout
    /// (JSON Lines; `round` numbers them), then, with `--rounds` above 1,
    /// a `summary` object per store with each figure's range; the human
    /// report moves to stderr.
    #[arg(long)]
    pub json: bool,
}

impl Settings {
    /// Jobs as a count.
    pub fn jobs(&self) -> usize {
        usize::try_from(self.jobs).unwrap_or(usize::MAX)
    }
    /// Workers as a count.
    pub fn workers(&self) -> usize {
        usize::try_from(self.workers).unwrap_or(usize::MAX)
    }
    /// Whether the audit log is written.
    pub fn audit(&self) -> bool {
        !self.no_audit
    }
    /// Whether the store's statistics are brought up to date after the
    /// enqueue.
    pub fn analyze(&self) -> bool {
        !self.no_analyze
    }
    /// The stores to measure, in order.
    pub fn backends(&self) -> Vec<&'static str> {
        match self.backend {
            Backend::Postgres => vec!["postgres"],
            Backend::Sqlite => vec!["sqlite"],
            Backend::Both => vec!["postgres", "sqlite"],
        }
    }
    /// Runs `run` on each selected store by name, printing a store's
    /// error; answers whether every store ran and passed.
    pub fn each_backend(
        &self,
        mut run: impl FnMut(&'static str) -> Result<bool, leasehold_core::StoreError>,
    ) -> bool {
        let mut ok = true;
        for b in self.backends() {
            match run(b) {
                Ok(passed) => ok &= passed,
                Err(e) => {
                    eprintln!("{b}: failed: {e}");
                    ok = false;
                }
            }
        }
        ok
    }
    /// Rounds as a count.
    pub fn rounds(&self) -> usize {
        usize::try_from(self.rounds).unwrap_or(1)
    }
    /// Recorded arrival time (`--mode latency`).
    pub fn duration(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.duration)
    }
    /// The Pruner's configuration: `PrunerConfig`'s defaults but what
    /// `--retention`, `--prune-period`, `--prune-batch` and
    /// `--prune-rounds` give.
    pub fn pruner(&self) -> Result<PrunerConfig, ConfigError> {
        let mut b = PrunerConfig::builder().retention(Millis::from_secs(self.retention));
        if let Some(p) = self.prune_period {
            b = b.period(Millis::from_secs(p));
        }
        if let Some(n) = self.prune_batch {
            b = b.batch(n);
        }
        if let Some(n) = self.prune_rounds {
            b = b.max_rounds(n);
        }
        b.build()
    }
    /// SQLite's durability.
    pub fn sqlite_durability(&self) -> Durability {
        match self.sqlite_sync {
            SqliteSync::Full => Durability::Full,
            SqliteSync::Normal => Durability::Normal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Settings;
    use clap::Parser;

    /// `--vacuum-every` takes what `PgStoreBuilder::vacuum_every` accepts.
    #[test]
    fn the_vacuum_period_is_checked_when_parsed() {
        let ok = Settings::try_parse_from(["leasehold-bench", "--vacuum-every", "500"]);
        assert_eq!(ok.expect("500 ms is a period").vacuum_every, Some(500));
        for bad in ["49", "0", "3600001", "soon"] {
            let e = Settings::try_parse_from(["leasehold-bench", "--vacuum-every", bad]);
            assert!(e.is_err(), "--vacuum-every {bad} must be refused");
        }
        let unset = Settings::try_parse_from(["leasehold-bench"]).expect("defaults");
        assert_eq!(unset.vacuum_every, None, "no vacuum unless asked");
        assert_eq!(leasehold_postgres::MIN_VACUUM_PERIOD.as_millis(), 50);
        assert_eq!(leasehold_postgres::MAX_VACUUM_PERIOD.as_millis(), 3_600_000);
    }

    /// The soak's Pruner takes the defaults unless a flag gives a value,
    /// and a retention below the core's minimum is refused when parsed.
    #[test]
    fn the_pruner_takes_its_defaults_unless_given() {
        use leasehold_core::worker::pruner_config::{DEFAULT_PRUNE_BATCH, DEFAULT_PRUNE_PERIOD};
        let d = Settings::try_parse_from(["leasehold-bench", "--mode", "soak"]).expect("defaults");
        let c = d.pruner().expect("defaults build");
        assert_eq!(c.request.retention, leasehold_core::MIN_RETENTION);
        assert_eq!(
            (c.period, c.request.limit),
            (DEFAULT_PRUNE_PERIOD, DEFAULT_PRUNE_BATCH)
        );
        let g = Settings::try_parse_from([
            "leasehold-bench",
            "--prune-period",
            "5",
            "--prune-batch",
            "10000",
            "--prune-rounds",
            "20",
        ])
        .expect("given");
        let c = g.pruner().expect("given values build");
        assert_eq!(
            (c.period.0, c.request.limit, c.max_rounds),
            (5_000, 10_000, 20)
        );
        assert!(Settings::try_parse_from(["leasehold-bench", "--retention", "59"]).is_err());
        assert!(Settings::try_parse_from(["leasehold-bench", "--prune-batch", "10001"]).is_err());
    }
}
