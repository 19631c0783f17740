//! `leasehold check HISTORY`: the invariants that need no ground truth on
//! a recorded history of store events: an adapter's audit log exported as
//! JSON lines, or the store events of a `leasehold replay --trace` history
//! ([`super::check_input`] reads both and refuses an empty one).
//!
//! Without the simulator's ground truth it checks I1 (single grant), I2
//! (single winner), I4 (no lost results), I7 (cancel), I8 (retry budget)
//! and, given the queue's limit, I9 (parallelism). It cannot check I3
//! (exclusive belief: the workers' beliefs are not in the store), I5 (no
//! false crash reports: which faults happened), I6 (liveness: when faults
//! healed), I10 (determinism: a rerun) or I11 (answers: the requests and
//! the answers the store gave).

use super::args::CheckArgs;
use super::check_input::read_history;
use super::engine;
use super::ExitCode;

/// The invariants `check` cannot judge on store events alone, and why.
pub const NOT_CHECKED: &str = "I3, I5, I6, I10 and I11 need the simulator's ground truth \
(beliefs, faults, healing time, a rerun, requests and answers) and are not checked";

/// Runs the command.
pub fn run(args: &CheckArgs) -> ExitCode {
    if args.format == super::args::HistoryFormat::Jepsen {
        return super::check_jepsen::run(args);
    }
    let input = match read_history(&args.history) {
        Ok(h) => h,
        Err(errors) => {
            for e in errors {
                eprintln!("{e}");
            }
            return ExitCode::Input;
        }
    };
    let events = &input.events;
    let found = engine::check_events(events, args.parallelism);
    for f in &found {
        println!("{}\n", f.report);
    }
    let jobs: std::collections::BTreeSet<_> = events.iter().map(|e| e.job).collect();
    println!(
        "checked {} events of {} jobs ({}) for I1, I2, I4, I7, I8{}: {} violations",
        events.len(),
        jobs.len(),
        input.format,
        if args.parallelism.is_some() {
            ", I9"
        } else {
            " (I9 needs --parallelism)"
        },
        found.len()
    );
    println!("{NOT_CHECKED}");
    if found.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Violation
    }
}
