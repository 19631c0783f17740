//! `leasehold check HISTORY.jsonl`: the invariants that need no ground
//! truth (I1, I2, I4, I7, I8, I9) on a recorded history of store events,
//! such as a database adapter's audit log exported as JSON lines.

use super::args::CheckArgs;
use super::engine;
use super::ExitCode;
use leasehold_core::Event;
use std::path::Path;

/// Most bad lines reported before giving up on a file.
const MAX_REPORTED: usize = 20;

/// Reads one [`Event`] per non-blank line; every bad line is reported as
/// `FILE:LINE:COL: what is wrong`.
pub fn parse_history(text: &str, file: &Path) -> Result<Vec<Event>, Vec<String>> {
    let mut events = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Event>(line) {
            Ok(e) => events.push(e),
            Err(e) => {
                if errors.len() < MAX_REPORTED {
                    let text = e.to_string();
                    let what = text.split(" at line ").next().unwrap_or(&text);
                    errors.push(format!(
                        "{}:{}:{}: {what}",
                        file.display(),
                        i + 1,
                        e.column()
                    ));
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(events)
    } else {
        Err(errors)
    }
}

/// Runs the command.
pub fn run(args: &CheckArgs) -> ExitCode {
    let text = match std::fs::read_to_string(&args.history) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: cannot read: {e}", args.history.display());
            return ExitCode::Input;
        }
    };
    let events = match parse_history(&text, &args.history) {
        Ok(ev) => ev,
        Err(errors) => {
            for e in errors {
                eprintln!("{e}");
            }
            return ExitCode::Input;
        }
    };
    let found = engine::check_events(&events, args.parallelism);
    for f in &found {
        println!("{}\n", f.report);
    }
    let jobs: std::collections::BTreeSet<_> = events.iter().map(|e| e.job).collect();
    println!(
        "checked {} events of {} jobs for I1, I2, I4, I7, I8{}: {} violations",
        events.len(),
        jobs.len(),
        if args.parallelism.is_some() {
            ", I9"
        } else {
            ""
        },
        found.len()
    );
    if found.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Violation
    }
}
