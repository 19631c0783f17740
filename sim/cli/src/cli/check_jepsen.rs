//! `leasehold check --format jepsen HISTORY.edn`: the checks of
//! `crate::jepsen::check` on a Jepsen history of lease operations.

use super::args::CheckArgs;
use super::ExitCode;
use crate::jepsen::{check, edn};

/// Runs the command.
pub fn run(args: &CheckArgs) -> ExitCode {
    let file = &args.history;
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: cannot read: {e}", file.display());
            return ExitCode::Input;
        }
    };
    if args.parallelism.is_some() {
        eprintln!(
            "leasehold: --parallelism (I9) needs store events; a Jepsen history has no queue"
        );
        return ExitCode::Input;
    }
    let ops = match edn::read_history(&text, file) {
        Ok(ops) => ops,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::Input;
        }
    };
    let summary = match check::check(&ops, file) {
        Ok(s) => s,
        Err(errors) => {
            for e in errors.iter().take(20) {
                eprintln!("{e}");
            }
            return ExitCode::Input;
        }
    };
    for f in &summary.findings {
        println!("{}:{}: {}", file.display(), f.pos, f.message);
    }
    let calls: Vec<String> = summary
        .calls
        .iter()
        .map(|(f, n)| format!("{n} {f}"))
        .collect();
    println!(
        "checked {} Jepsen operations ({} calls: {}; {} other calls left out) for I1 single grant and I2 single winner: {} violations",
        summary.ops,
        summary.calls.values().sum::<usize>(),
        if calls.is_empty() { "none".to_string() } else { calls.join(", ") },
        summary.skipped,
        summary.findings.len()
    );
    if summary.findings.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Violation
    }
}
