//! `leasehold replay SCENARIO --seed S`: reruns one seed exactly and shows
//! what happened; optionally writes the history, a timeline page, and
//! prints the history hash.
//!
//! Exit status: 0 when the run broke no invariant, 1 when it did (so a
//! replay of a failure fails), 2 on bad input or a harness error.

use super::args::ReplayArgs;
use super::stores::open_scenario;
use super::ExitCode;
use crate::timeline::{self, MarkAt};
use leasehold_sim::report::violation_report;
use leasehold_sim::runner::PreparedConfig;

/// Runs the command.
pub fn run(args: &ReplayArgs) -> ExitCode {
    let (scenario, stores, kind) = match open_scenario(&args.scenario, &args.stores) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let path = scenario.path.to_string_lossy().into_owned();
    let valid = PreparedConfig::new(scenario.config.clone()).map(|v| v.on_store(kind));
    let (out, cfg) = match valid.and_then(|cfg| Ok((stores.run(kind, &cfg, args.seed)?, cfg))) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("leasehold: harness error: {e}");
            return ExitCode::Input;
        }
    };
    println!(
        "{} seed {} on {kind}{}: {} simulated, {} history records, {} violations{}",
        cfg.name,
        args.seed,
        cfg.variant
            .as_deref()
            .map(|v| format!(" (variant {v})"))
            .unwrap_or_default(),
        leasehold_model::duration::format_ms(out.sim_time_ms),
        out.history.records.len(),
        out.violations.len(),
        if out.timing_assumption_broken {
            "; timing assumption broken (drift beyond ρ or a store clock step): I3 not asserted"
        } else {
            ""
        }
    );
    for v in &out.violations {
        println!("\n{}", violation_report(v, &cfg, args.seed, Some(&path)));
    }
    if let Some(file) = &args.trace {
        if let Err(e) = std::fs::write(file, out.history.to_jsonl()) {
            eprintln!("leasehold: cannot write {}: {e}", file.display());
            return ExitCode::Input;
        }
        println!("history written to {}", file.display());
        if !out.statement_orders.is_empty() {
            // Interleaved SQL transactions: which statement ran when, one
            // line per group, beside the history.
            let side = file.with_extension("statements");
            if let Err(e) = std::fs::write(&side, out.statement_orders.join("\n") + "\n") {
                eprintln!("leasehold: cannot write {}: {e}", side.display());
                return ExitCode::Input;
            }
            println!(
                "statement order of {} interleaved group(s) written to {}",
                out.statement_orders.len(),
                side.display()
            );
        }
    }
    if let Some(file) = &args.timeline {
        let marks = out
            .violations
            .iter()
            .map(|v| MarkAt {
                at_ms: v.true_ms,
                label: format!(
                    "{}: {}",
                    v.invariant,
                    leasehold_sim::report::times::Origin::SIM.humanize(&v.message)
                ),
                job: v.job,
            })
            .collect();
        let notes = vec![
            format!("scenario {path}, seed {}", args.seed),
            cfg.description.trim().to_string(),
            format!(
                "variant: {}",
                cfg.variant.as_deref().unwrap_or("none (correct core)")
            ),
            format!("violations: {}", out.violations.len()),
            format!(
                "replay: {}",
                leasehold_sim::report::replay_command_on(&path, args.seed, Some(kind))
            ),
        ];
        let tl = timeline::from_history(
            &out.history,
            &format!("{} seed {}", cfg.name, args.seed),
            notes,
            marks,
        );
        if let Err(e) = std::fs::write(file, timeline::render(&tl)) {
            eprintln!("leasehold: cannot write {}: {e}", file.display());
            return ExitCode::Input;
        }
        println!("timeline written to {}", file.display());
    }
    if args.hash {
        println!(
            "history hash: {:016x} (format {})",
            out.history_hash,
            leasehold_model::history::HASH_FORMAT
        );
    }
    if out.violations.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Violation
    }
}
