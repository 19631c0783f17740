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
            report_errors(&errors);
            return ExitCode::Input;
        }
    };
    if summary.calls.is_empty() {
        // Nothing judged is not a pass (a register or set history, say).
        eprintln!(
            "{}: none of its {} operations is an acquire, renew, release or sweep call \
             ({} other client calls): the lease checks (I1, I2) cannot judge this history",
            file.display(),
            summary.ops,
            summary.skipped
        );
        return ExitCode::Input;
    }
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

/// Most located errors printed; the rest are counted.
const MAX_ERRORS_SHOWN: usize = 5;

/// Prints the first few errors and a count of the rest, with a hint when
/// no lease operation carries a value (a lock history from Jepsen's mutex
/// tests: `:acquire` and `:release` with no `:value`).
fn report_errors(errors: &[crate::jepsen::edn::ReadError]) {
    for e in errors.iter().take(MAX_ERRORS_SHOWN) {
        eprintln!("{e}");
    }
    if errors.len() > MAX_ERRORS_SHOWN {
        eprintln!(
            "... and {} more errors ({} in all)",
            errors.len() - MAX_ERRORS_SHOWN,
            errors.len()
        );
    }
    if errors.len() > 1
        && errors
            .iter()
            .all(|e| e.message.starts_with("the value must be a map"))
    {
        eprintln!(
            "leasehold: no lease operation here carries a {{:job J, :token T}} value; a lock \
             history without values (Jepsen's mutex tests) needs a mutex model, which \
             `leasehold check` does not have yet"
        );
    }
}
