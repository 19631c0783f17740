//! The `leasehold` command line: `run`, `merge` (shards), `explore`,
//! `replay`, `shrink`, `check`, `export`, and `chaos` (handed whole to `leasehold-chaos`);
//! and the operator's commands on a real store ([`ops`]: `migrate`,
//! `status`, `list`, `show`, `retry`, `cancel`, `prune`).
//!
//! Exit codes: 0 when every expectation held, 1 when an invariant broke or
//! an expected violation was not found, 2 on bad input or a harness error.

pub mod args;
pub mod check;
pub mod check_input;
pub mod check_jepsen;
pub mod coverage;
pub mod engine;
pub mod exhaustive;
pub mod explore;
mod explore_compare;
mod explore_guided;
mod explore_mutate;
mod explore_rarity;
mod explore_runs;
pub mod export;
pub mod jsonl;
pub mod merge;
pub mod ops;
pub mod parallel;
pub mod plan;
pub mod progress;
pub mod replay;
pub mod run;
pub mod shard;
pub mod shrink;
pub mod stores;
pub mod swarm_mix;
pub mod tally;
pub mod timeout;
pub mod verdict;

use clap::Parser;

/// How the process ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    /// Every expectation held.
    Ok = 0,
    /// An invariant broke, or an expected violation was not found.
    Violation = 1,
    /// Bad input (scenario file, arguments) or a harness error.
    Input = 2,
    /// No verdict: a bounded search (`check --format jepsen`) hit its
    /// bound before deciding.
    Unknown = 3,
}

impl ExitCode {
    /// A run's exit: any harness error is bad input, else any failed run
    /// is a violation.
    pub fn of_runs(errors: usize, failed: usize) -> ExitCode {
        if errors > 0 {
            ExitCode::Input
        } else if failed > 0 {
            ExitCode::Violation
        } else {
            ExitCode::Ok
        }
    }
}

/// Parses the process arguments, runs the command and answers the process's
/// exit status (the simulator's [`ExitCode`], or the chaos runner's own).
pub fn main() -> i32 {
    let cli = args::Cli::parse();
    let code = match &cli.command {
        args::Command::Run(a) => run::run(a),
        args::Command::Check(a) => check::run(a),
        args::Command::Replay(a) => replay::run(a),
        args::Command::Shrink(a) => shrink::run(a),
        args::Command::Merge(a) => merge::run(a),
        args::Command::Explore(a) if a.compare => explore_compare::run(a),
        args::Command::Explore(a) => explore::run(a),
        args::Command::Export(a) => export::run(a),
        args::Command::Exhaust(a) => exhaustive::run(a),
        args::Command::Migrate(a) => ops::migrate::run(a),
        args::Command::Status(a) => ops::status::run(a),
        args::Command::List(a) => ops::list::run(a),
        args::Command::Show(a) => ops::show::run(a),
        args::Command::Retry(a) => ops::job_change::run(a, ops::job_change::JobChange::Retry),
        args::Command::Cancel(a) => ops::job_change::run(a, ops::job_change::JobChange::Cancel),
        args::Command::Prune(a) => ops::prune::run(a),
        args::Command::Chaos(a) => {
            let argv = std::iter::once("leasehold chaos".into()).chain(a.args.iter().cloned());
            return leasehold_chaos::cli::main_from(argv, "leasehold chaos");
        }
    };
    code as i32
}
