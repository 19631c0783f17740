//! `leasehold export INPUT --format jepsen`: a run's history as Jepsen
//! operations in EDN (`leasehold_check::jepsen`), from a scenario file run at
//! `--seed`, or from a history written by `leasehold replay --trace`.

use super::args::ExportArgs;
use super::stores::Stores;
use super::ExitCode;
use leasehold_check::jepsen;
use leasehold_model::history::{History, Record};
use leasehold_model::scenario::load_file;
use leasehold_sim::runner::PreparedConfig;
use std::path::Path;

/// Runs the command.
pub fn run(args: &ExportArgs) -> ExitCode {
    let history = match load(args) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::Input;
        }
    };
    let text = jepsen::edn::write_history(&jepsen::export::from_history(&history));
    match &args.output {
        Some(file) => {
            if let Err(e) = std::fs::write(file, text) {
                eprintln!("leasehold: cannot write {}: {e}", file.display());
                return ExitCode::Input;
            }
        }
        None => print!("{text}"),
    }
    ExitCode::Ok
}

fn load(args: &ExportArgs) -> Result<History, String> {
    let is_scenario = args.input.extension().is_some_and(|e| e == "toml");
    if !is_scenario {
        if args.seed.is_some() {
            return Err(format!(
                "{}: --seed runs a scenario file (*.toml); this looks like a --trace history",
                args.input.display()
            ));
        }
        let text = std::fs::read_to_string(&args.input)
            .map_err(|e| format!("{}: cannot read: {e}", args.input.display()))?;
        return read_trace(&text, &args.input);
    }
    let Some(seed) = args.seed else {
        return Err(format!(
            "{}: a scenario file needs --seed S",
            args.input.display()
        ));
    };
    let scenario = load_file(&args.input).map_err(|e| crate::diagnostic::load_errors(&e, false))?;
    let stores = Stores::new(&args.stores);
    let kind = stores.kind_for(&scenario.config);
    stores.check(kind).map_err(|e| format!("leasehold: {e}"))?;
    let out = PreparedConfig::new(scenario.config.clone())
        .and_then(|cfg| stores.run(kind, &cfg.on_store(kind), seed))
        .map_err(|e| format!("leasehold: harness error: {e}"))?;
    Ok(out.history)
}

/// A `--trace` history, every bad line reported as `FILE:LINE:COL`.
pub fn read_trace(text: &str, file: &Path) -> Result<History, String> {
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: Record = serde_json::from_str(line).map_err(|e| {
            let what = e.to_string();
            let what = what.split(" at line ").next().unwrap_or(&what).to_string();
            format!("{}:{}:{}: {what}", file.display(), i + 1, e.column())
        })?;
        records.push(r);
    }
    Ok(History { records })
}
