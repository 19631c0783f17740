//! Command-line arguments (clap derive).

use super::plan::Shard;
use super::stores::StoreArgs;
use clap::{Args, Parser, Subcommand};
use leasehold_model::store_kind::StoreKind;
use std::path::PathBuf;

/// Deterministic simulation of the leasehold lease protocol: run scenarios
/// over many seeds, replay one exactly, shrink a failure, check a recorded
/// history; and real processes under real faults (`chaos`).
#[derive(Debug, Parser)]
#[command(name = "leasehold", version, about, long_about = None, after_help = EXIT_CODES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The exit codes, shown under every `--help`.
pub const EXIT_CODES: &str = "Exit status: 0 every expectation held; 1 an invariant broke, or an \
expected violation was not found; 2 bad input (arguments, scenario files, an unusable store) \
or a harness error; 3 no verdict (`check --format jepsen`: the linearizability search hit its \
bound).";

/// The exit codes of the operator's commands (`migrate`, `status`, `list`,
/// `show`, `retry`, `cancel`, `prune`).
pub const OPS_EXIT_CODES: &str = "Exit status: 0 done; 2 bad input (an unknown job, a wrong or \
unreachable store URL, a database without leasehold's schema or with a schema newer than this \
binary, a retry of a job that is not dead, a retention below the minimum), with nothing changed.";

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every scenario under PATHs over its seeds, in parallel.
    #[command(after_help = EXIT_CODES)]
    Run(RunArgs),
    /// Rerun one scenario and seed exactly.
    #[command(after_help = EXIT_CODES)]
    Replay(ReplayArgs),
    /// The verdict of one run from its shards' `run --json` outputs: fails
    /// when a shard is missing, duplicated or from another run.
    #[command(after_help = EXIT_CODES)]
    Merge(MergeArgs),
    /// Run random seeds (and fault mixes) until a time limit or Ctrl-C;
    /// shrink every failure into a regression scenario in a corpus folder.
    #[command(after_help = EXIT_CODES)]
    Explore(ExploreArgs),
    /// Reduce a failing scenario and seed to a minimal scenario file.
    #[command(after_help = EXIT_CODES)]
    Shrink(ShrinkArgs),
    /// Check a recorded history: store events (JSON lines), or a Jepsen
    /// history of lease operations (EDN, `--format jepsen`).
    ///
    /// JSON lines are store events (an adapter's audit log, from
    /// `leasehold-export`) or a `leasehold replay --trace` history, whose
    /// store events are checked; the first line tells which. An empty
    /// history is refused. Without the simulator's ground truth, store
    /// events show I1 single grant, I2 single winner, I4 no lost results, I7
    /// cancel, I8 retry budget, and I9 parallelism given `--parallelism`.
    /// They cannot show I3 exclusive belief (workers' beliefs), I5 no false
    /// crash reports (which faults happened), I6 liveness (when faults
    /// healed), I10 determinism (a rerun) or I11 answers (requests and
    /// answers).
    #[command(after_help = EXIT_CODES)]
    Check(CheckArgs),
    /// Write a run's history in another tool's format (Jepsen EDN).
    #[command(after_help = EXIT_CODES)]
    Export(ExportArgs),
    /// Every interleaving of a small world, breadth-first: the invariants
    /// hold at the scope (exit 0) or its shortest counterexample is printed
    /// and, with `--write-counterexample`, written as a scenario file.
    #[command(after_help = EXIT_CODES)]
    Exhaust(super::exhaustive::ExhaustArgs),
    /// Apply leasehold's migrations to a store (`--store-url`) and print
    /// the schema version; `--dry-run` prints the SQL instead.
    #[command(after_help = OPS_EXIT_CODES)]
    Migrate(super::ops::migrate::MigrateArgs),
    /// Per queue: jobs in each state, the oldest pending job's age, running
    /// leases and the nearest expiry, on a store (`--store-url`).
    #[command(after_help = OPS_EXIT_CODES)]
    Status(super::ops::status::StatusArgs),
    /// List a store's jobs, filtered by queue and state, bounded.
    #[command(after_help = OPS_EXIT_CODES)]
    List(super::ops::list::ListArgs),
    /// One job: its row, its result or error, and its audit trail.
    #[command(after_help = OPS_EXIT_CODES)]
    Show(super::ops::show::ShowArgs),
    /// Take a dead job back to pending with a fresh attempt budget.
    #[command(after_help = OPS_EXIT_CODES)]
    Retry(super::ops::job_arg::JobArgs),
    /// Cancel a job: pending is cancelled, running is asked to stop.
    #[command(after_help = OPS_EXIT_CODES)]
    Cancel(super::ops::job_arg::JobArgs),
    /// Delete finished jobs older than a retention period, with their
    /// audit events, in bounded rounds (docs/RETENTION.md).
    #[command(after_help = OPS_EXIT_CODES)]
    Prune(super::ops::prune::PruneArgs),
    /// Real worker processes on a real SQLite or PostgreSQL store under real
    /// faults (kills, pauses, restarts), checked offline; `leasehold chaos
    /// --help` lists its options.
    #[command(disable_help_flag = true)]
    Chaos(ChaosArgs),
}

/// `leasehold chaos`: every argument goes to the chaos runner
/// (`leasehold-chaos`), which parses its own options.
#[derive(Debug, Args)]
pub struct ChaosArgs {
    /// The chaos runner's options (see `leasehold chaos --help`).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "OPTIONS"
    )]
    pub args: Vec<std::ffi::OsString>,
}

/// `leasehold run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario files or directories (walked for *.toml, sorted).
    #[arg(default_value = "scenarios/")]
    pub paths: Vec<PathBuf>,
    /// Seeds per scenario, BASE..BASE+N (default: each scenario's `seeds`;
    /// env LEASEHOLD_SEEDS).
    #[arg(long, conflicts_with = "seed")]
    pub seeds: Option<u64>,
    /// Run exactly this seed of every scenario (env LEASEHOLD_SEED).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Each scenario's own `seeds` times K: the library's seed mix, K
    /// times deeper (heavy scenarios keep their small share).
    #[arg(long, value_name = "K", conflicts_with_all = ["seed", "seeds"])]
    pub seed_factor: Option<u64>,
    /// First seed: a number, or `random` to explore new seeds (the base is
    /// printed first and every replay command names its seed).
    #[arg(long, value_name = "N|random", conflicts_with = "seed")]
    pub seed_base: Option<SeedBase>,
    /// Threads (default: the number of cores; 2x on SQLite, 4x on PostgreSQL,
    /// whose seeds mostly wait for the database).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Machine output on stdout, streamed as JSON Lines: a `start` line, a
    /// `run` line as each seed finishes, a `scenario` line as a scenario's
    /// last seed finishes, then a `summary` line; human lines go to stderr.
    #[arg(long)]
    pub json: bool,
    /// Also write JUnit XML to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Run only shard I of N (1-based), for CI fan-out (env
    /// LEASEHOLD_SHARD=I/N, or Kubernetes' JOB_COMPLETION_INDEX, 0-based,
    /// with LEASEHOLD_SHARDS=N; the flag wins). Merge the shards' `--json`
    /// outputs with `leasehold merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Differential mode: also run every seed on this store and fail on the
    /// first answer in which the two stores differ.
    #[arg(long, value_enum, value_name = "STORE")]
    pub against: Option<StoreKind>,
    /// Observe no built-in situation (to measure what observing costs):
    /// coverage then shows only what simulated code marked, and declared
    /// situations fail. Histories are the same either way.
    #[arg(long)]
    pub no_coverage: bool,
    /// The store to run on.
    #[command(flatten)]
    pub stores: StoreArgs,
}

/// `leasehold merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' `leasehold run --json` outputs, one file per shard.
    #[arg(required = true, value_name = "SHARD.jsonl")]
    pub files: Vec<PathBuf>,
    /// Machine output: the merged `summary` line on stdout (human lines
    /// go to stderr).
    #[arg(long)]
    pub json: bool,
    /// Also write the merged JUnit XML to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

/// `leasehold explore`.
#[derive(Debug, Args)]
pub struct ExploreArgs {
    /// Scenario files or directories (walked for *.toml, sorted).
    #[arg(default_value = "scenarios/")]
    pub paths: Vec<PathBuf>,
    /// Stop after this long (`90s`, `10m`, `1h`; default: until Ctrl-C or
    /// SIGTERM).
    #[arg(long = "for", value_name = "DURATION")]
    pub for_: Option<leasehold_model::duration::Dur>,
    /// Stop after this many seeds.
    #[arg(long, value_name = "N")]
    pub max_seeds: Option<u64>,
    /// Stop after this many distinct failures (scenario and invariant).
    #[arg(long, value_name = "N")]
    pub max_failures: Option<usize>,
    /// Where shrunk failures are written as scenario files.
    #[arg(long, default_value = "corpus")]
    pub corpus: PathBuf,
    /// First seed (default: drawn at random, and printed).
    #[arg(long, value_name = "N")]
    pub seed_base: Option<u64>,
    /// Run every scenario as written; by default half the seeds of a
    /// scenario with swarm faults switch some fault kinds off (a swarm mix).
    #[arg(long)]
    pub no_swarm_mix: bool,
    /// Also explore catalogue scenarios, whose planted bug then counts as a
    /// failure (to try the explorer on a known bug).
    #[arg(long)]
    pub include_catalogue: bool,
    /// Guide the explorer by coverage: its first round runs every
    /// scenario once, those declaring situations few others declare
    /// first; then it turns the same seed wheel as the uniform explorer,
    /// but a scenario whose seeds all reached the same situations gives
    /// every other turn to a mutation of an input that reached a new or
    /// rare situation (or came nearest to an unreached one), or to the
    /// scenarios that reached rare situations, still seek one they
    /// declare, came near one, or whose seeds differ. Off by default
    /// (every run drawn uniformly off the wheel): measured over 480 runs
    /// on 5 seed bases, guided reached every situation the uniform
    /// explorer reached, first to 85 of the 100 rare (situation, base)
    /// pairs and later to 2, by one run (docs/PERFORMANCE.md, "Guided
    /// exploration").
    #[arg(long, conflicts_with = "compare")]
    pub guided: bool,
    /// Run the guided and the uniform explorer, a generation of runs each
    /// in turn, for the same budget (`--max-seeds` runs each, or `--for`
    /// in all), and print what each reached and when; writes no corpus.
    #[arg(long)]
    pub compare: bool,
    /// With `--compare`: also plant each bug of the catalogue scenarios
    /// under DIR into the explored (correct) scenarios, and count the runs
    /// each explorer takes to catch it.
    #[arg(long, value_name = "DIR", requires = "compare")]
    pub catalogue: Option<PathBuf>,
    /// With `--catalogue`: most runs each explorer spends on one bug.
    #[arg(long, value_name = "N", default_value_t = 200, requires = "catalogue")]
    pub catalogue_seeds: u64,
    /// Most wall seconds to spend shrinking one failure.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub shrink_secs: u64,
    /// Seconds between progress lines.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub progress_secs: u64,
    /// Threads (default: the number of cores).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// The store to run on.
    #[command(flatten)]
    pub stores: StoreArgs,
}

/// `leasehold replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// The seed.
    #[arg(long)]
    pub seed: u64,
    /// Write the full history as JSON lines to FILE.
    #[arg(long, value_name = "FILE.jsonl")]
    pub trace: Option<PathBuf>,
    /// Write a self-contained HTML timeline to FILE.
    #[arg(long, value_name = "FILE.html")]
    pub timeline: Option<PathBuf>,
    /// Print the history hash.
    #[arg(long)]
    pub hash: bool,
    /// The store to run on.
    #[command(flatten)]
    pub stores: StoreArgs,
}

/// `leasehold shrink`.
#[derive(Debug, Args)]
pub struct ShrinkArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// The failing seed.
    #[arg(long)]
    pub seed: u64,
    /// Where to write the minimal scenario (default: stdout).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Most simulation runs to spend.
    #[arg(long, default_value_t = leasehold_sim::shrink::DEFAULT_MAX_RUNS)]
    pub max_runs: u32,
    /// Most wall seconds to spend.
    #[arg(long, default_value_t = leasehold_sim::shrink::DEFAULT_MAX_WALL.as_secs())]
    pub max_secs: u64,
    /// The store to run on.
    #[command(flatten)]
    pub stores: StoreArgs,
}

/// `leasehold check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The history: one `leasehold_core::Event` JSON object per line, a
    /// `leasehold replay --trace` file, or with `--format jepsen` Jepsen
    /// operations in EDN (docs/JEPSEN.md).
    pub history: PathBuf,
    /// The queue's parallelism limit, to check I9 (store events only).
    #[arg(long)]
    pub parallelism: Option<u32>,
    /// What the history file holds.
    #[arg(long, value_enum, default_value_t = HistoryFormat::Events)]
    pub format: HistoryFormat,
    /// With `--format jepsen`: the model to check against (`auto`: a
    /// lease model when lease calls carry values, else a mutex).
    #[arg(long, value_enum, default_value_t = JepsenModel::Auto)]
    pub model: JepsenModel,
    /// With `--format jepsen`: the linearizability search gives up (exit
    /// 3, no verdict) after this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub search_timeout: u64,
    /// With `--format jepsen`: the most search configurations remembered
    /// (per job for leases; about 50-100 bytes each) before giving up.
    #[arg(long, value_name = "N", default_value_t = 2_000_000)]
    pub max_configs: usize,
}

/// The models `check --format jepsen` checks against (docs/JEPSEN.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum JepsenModel {
    /// Lease calls with `{:job J, :token T}` values: the lease model;
    /// `:acquire`/`:release` without values: the mutex.
    Auto,
    /// Knossos's mutex: `:acquire` and `:release` of one lock, no values.
    Mutex,
    /// Leases with fencing tokens and expiry: `:acquire`, `:renew`,
    /// `:release`, `:sweep` with `{:job J, :token T}` values.
    Lease,
}

/// The formats `leasehold check` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HistoryFormat {
    /// Store events, one JSON object per line (an audit log), or a
    /// `leasehold replay --trace` history (its store events).
    Events,
    /// Jepsen operations (`:invoke`/`:ok`/`:fail`/`:info`) in EDN, or
    /// elle-cli's JSON (an array of operation objects).
    Jepsen,
}

/// `leasehold export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A scenario file (run at `--seed`), or a history written by
    /// `leasehold replay --trace`.
    pub input: PathBuf,
    /// The seed to run, when INPUT is a scenario file.
    #[arg(long)]
    pub seed: Option<u64>,
    /// The output format.
    #[arg(long, value_enum, default_value_t = ExportFormat::Jepsen)]
    pub format: ExportFormat,
    /// Where to write (default: stdout).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The store to run on.
    #[command(flatten)]
    pub stores: StoreArgs,
}

/// The formats `leasehold export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// Jepsen operations in EDN, one map per line (docs/JEPSEN.md).
    Jepsen,
}

/// Where the seeds of a run start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedBase {
    /// This seed.
    At(u64),
    /// A base drawn when the run starts.
    Random,
}

impl std::str::FromStr for SeedBase {
    type Err = String;
    fn from_str(s: &str) -> Result<SeedBase, String> {
        match s {
            "random" => Ok(SeedBase::Random),
            n => n
                .parse()
                .map(SeedBase::At)
                .map_err(|_| format!("seed base {n:?} must be a whole number or `random`")),
        }
    }
}
