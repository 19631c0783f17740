//! The `leasehold` command line: `run`, `replay`, `shrink`, `check`.
//!
//! Exit codes: 0 when every expectation held, 1 when an invariant broke or
//! an expected violation was not found, 2 on bad input or a harness error.

pub mod args;
pub mod check;
pub mod check_input;
pub mod check_jepsen;
pub mod engine;
pub mod export;
pub mod jsonl;
pub mod parallel;
pub mod plan;
pub mod progress;
pub mod replay;
pub mod run;
pub mod shrink;
pub mod stores;
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
}

/// Parses the process arguments and runs the command.
pub fn main() -> ExitCode {
    let cli = args::Cli::parse();
    match &cli.command {
        args::Command::Run(a) => run::run(a),
        args::Command::Check(a) => check::run(a),
        args::Command::Replay(a) => replay::run(a),
        args::Command::Shrink(a) => shrink::run(a),
        args::Command::Export(a) => export::run(a),
    }
}
