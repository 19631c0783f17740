//! `leasehold check --format jepsen HISTORY`: a Jepsen history (EDN, or
//! elle-cli's JSON) checked against a model (docs/JEPSEN.md):
//! - lease calls with `{:job J, :token T}` values: the checks of
//!   `leasehold_check::jepsen::check` (I1, I2) and the lease model's linearizability
//!   search (`leasehold_check::jepsen::lease`), expiry judged on the store's clock
//!   when the history carries it;
//! - `:acquire`/`:release` without values: Knossos's mutex
//!   (`leasehold_check::jepsen::mutex`).
//!
//! Exit 0 valid, 1 a violation, 2 bad input or nothing the model can
//! judge, 3 no verdict (the search hit its bound).

use super::args::{CheckArgs, JepsenModel};
use super::ExitCode;
use leasehold_check::finding::{Finding, Printed};
use leasehold_check::jepsen::edn::ReadError;
use leasehold_check::jepsen::lease::{self, LeaseVerdict};
use leasehold_check::jepsen::linearize::Limits;
use leasehold_check::jepsen::mutex::{self, MutexVerdict, MutexViolation};
use leasehold_check::jepsen::{check, Op, Pos, Process, Value};
use std::path::Path;
use std::time::{Duration, Instant};

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
    let ops = match leasehold_check::jepsen::read_history(&text, file) {
        Ok(ops) => ops,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::Input;
        }
    };
    let limits = Limits {
        max_configs: args.max_configs,
        max_steps: u64::MAX,
        deadline: Some(Instant::now() + Duration::from_secs(args.search_timeout)),
    };
    let model = match args.model {
        JepsenModel::Auto => match detect(&ops) {
            Some(m) => m,
            None => {
                eprintln!(
                    "{}: none of its {} operations is a client :acquire, :renew, :release or :sweep \
                     call ({} other client calls): the lease model and the mutex cannot judge \
                     this history",
                    file.display(),
                    ops.len(),
                    client_calls(&ops)
                );
                return ExitCode::Input;
            }
        },
        m => m,
    };
    if model == JepsenModel::Mutex {
        run_mutex(&ops, file, &limits)
    } else {
        run_lease(&ops, file, &limits)
    }
}

/// The model a history's shape asks for: leases when a lease call carries
/// a value, the mutex when `:acquire`/`:release` calls carry none; `None`
/// when there is no such call.
fn detect(ops: &[(Pos, Op)]) -> Option<JepsenModel> {
    let lease_fs = ["acquire", "renew", "release", "sweep"];
    let calls: Vec<&Op> = ops
        .iter()
        .map(|(_, op)| op)
        .filter(|op| matches!(op.process, Process::Client(_)) && lease_fs.contains(&op.f.as_str()))
        .collect();
    if calls.is_empty() {
        None
    } else if calls.iter().any(|op| op.value != Value::Nil) {
        Some(JepsenModel::Lease)
    } else {
        Some(JepsenModel::Mutex)
    }
}

/// Client invocations.
fn client_calls(ops: &[(Pos, Op)]) -> usize {
    ops.iter()
        .filter(|(_, op)| {
            matches!(op.process, Process::Client(_))
                && op.kind == leasehold_check::jepsen::OpType::Invoke
        })
        .count()
}

fn run_mutex(ops: &[(Pos, Op)], file: &Path, limits: &Limits) -> ExitCode {
    let report = match mutex::check(ops, file, limits) {
        Ok(r) => r,
        Err(errors) => {
            report_errors(&errors);
            return ExitCode::Input;
        }
    };
    let c = &report.counts;
    let Some(verdict) = report.verdict else {
        eprintln!(
            "{}: no :acquire or :release call here took effect or may have ({} operations, {} \
             acquire and {} release calls, all :fail; {} other client calls): the mutex model \
             cannot judge this history",
            file.display(),
            c.ops,
            c.acquire,
            c.release,
            c.skipped
        );
        return ExitCode::Input;
    };
    let summary = format!(
        "checked {} Jepsen operations against a mutex (Knossos's model): {} acquire and {} release \
         calls ({} :fail left out, {} unknown), {} other client calls left out; {} configurations \
         searched",
        c.ops, c.acquire, c.release, c.failed, c.unknown, c.skipped, report.effort.configs
    );
    match verdict {
        MutexVerdict::Valid => {
            println!("{summary}: linearizable");
            ExitCode::Ok
        }
        MutexVerdict::Unknown(why) => {
            println!(
                "{summary}: unknown, no verdict: {why} (raise --search-timeout or --max-configs)"
            );
            ExitCode::Unknown
        }
        MutexVerdict::Invalid(v) => {
            println!("{}", at(Printed::new(&NotAMutex(&v)), file, v.pos));
            let from = if v.from_any_state {
                "whatever the lock's state before it"
            } else {
                "from a free lock at the start of the history"
            };
            println!(
                "  the smallest window that cannot be linearized, {from}: :index {} to {}, {} calls:",
                v.span.0,
                v.span.1,
                v.window.len()
            );
            for w in v.window.iter().take(WINDOW_SHOWN) {
                println!("    {w}");
            }
            if v.window.len() > WINDOW_SHOWN {
                println!("    ... and {} more", v.window.len() - WINDOW_SHOWN);
            }
            if !v.earlier_unknown.is_empty() {
                let shown: Vec<String> = v
                    .earlier_unknown
                    .iter()
                    .take(WINDOW_SHOWN)
                    .map(i64::to_string)
                    .collect();
                println!(
                    "    with {} calls invoked earlier and never completed, which may take effect in it (:index {}{})",
                    v.earlier_unknown.len(),
                    shown.join(", "),
                    if v.earlier_unknown.len() > WINDOW_SHOWN { ", ..." } else { "" }
                );
            }
            println!("{summary}: 1 violation");
            ExitCode::Violation
        }
    }
}

/// The mutex search's verdict on an invalid lock history, a finding
/// printed as every finding is (its window follows, one call a line).
struct NotAMutex<'a>(&'a MutexViolation);

impl Finding for NotAMutex<'_> {
    fn broken(&self) -> String {
        "linearizability (mutex model)".into()
    }
    fn message(&self) -> String {
        let v = self.0;
        let why = v.why.as_ref();
        format!(
            "no order of the calls reaches the completion of {}{}",
            v.call,
            why.map(|w| format!(" ({w} in every order that gets there)"))
                .unwrap_or_default()
        )
    }
    /// Nothing: a lock has no job or token, and the place is added by [`at`].
    fn context(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

/// A finding with its place in the history file.
fn at<'a>(p: Printed<'a>, file: &Path, pos: Pos) -> Printed<'a> {
    p.with("at", format!("{}:{pos}", file.display()))
}

/// Most calls of a window printed.
const WINDOW_SHOWN: usize = 20;

fn run_lease(ops: &[(Pos, Op)], file: &Path, limits: &Limits) -> ExitCode {
    let summary = match check::check(ops, file) {
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
    let report = match lease::check(ops, file, limits) {
        Ok(r) => r,
        Err(errors) => {
            report_errors(&errors);
            return ExitCode::Input;
        }
    };
    if report.calls == 0 && summary.findings.is_empty() {
        eprintln!(
            "{}: none of its {} lease calls took effect or may have (all :fail): the lease \
             model cannot judge this history",
            file.display(),
            summary.calls.values().sum::<usize>()
        );
        return ExitCode::Input;
    }
    for f in &summary.findings {
        println!("{}", at(Printed::new(f), file, f.pos));
    }
    let mut violations = summary.findings.len();
    let mut unknown = false;
    match &report.verdict {
        LeaseVerdict::Valid => {}
        LeaseVerdict::Invalid(vs) => {
            violations += vs.len();
            for v in vs {
                println!("{}", at(Printed::new(v), file, v.pos));
                println!("  its window, the job's calls concurrent with it:");
                for w in v.window.iter().take(WINDOW_SHOWN) {
                    println!("    {w}");
                }
            }
        }
        LeaseVerdict::Unknown(jobs) => {
            unknown = true;
            for (job, why) in jobs.iter().take(5) {
                println!("{}: job {job}: unknown, no verdict: {why}", file.display());
            }
            if jobs.len() > 5 {
                println!("... and {} more jobs without a verdict", jobs.len() - 5);
            }
        }
    }
    let calls = super::tally::joined(&summary.calls, |(f, n)| format!("{n} {f}"));
    println!(
        "checked {} Jepsen operations ({} calls: {}; {} other calls left out) for I1 single grant, I2 single winner \
         and linearizability against the lease model ({} jobs; expiry on the store's clock {}): {} violations",
        summary.ops,
        summary.calls.values().sum::<usize>(),
        calls,
        summary.skipped,
        report.jobs,
        if report.expiry_judged { "judged" } else { "not judged: the grants do not all carry :lease-ms and :expires-ms" },
        violations
    );
    if violations > 0 {
        ExitCode::Violation
    } else if unknown {
        println!("unknown: no verdict for some jobs (raise --search-timeout or --max-configs)");
        ExitCode::Unknown
    } else {
        ExitCode::Ok
    }
}

/// Most located errors printed; the rest are counted.
const MAX_ERRORS_SHOWN: usize = 5;

/// Prints the first few errors and a count of the rest, with a hint when
/// no lease operation carries a value (a lock history read as leases).
fn report_errors(errors: &[ReadError]) {
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
             history without values (Jepsen's mutex tests) is checked with --model mutex"
        );
    }
}
