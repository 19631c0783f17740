//! `leasehold shrink SCENARIO --seed S [-o FILE]`: reduces a failing run
//! to a minimal scenario file that still breaks the same invariant on the
//! same seed (see [`leasehold_sim::shrink`]).

use super::args::ShrinkArgs;
use super::stores::open_scenario;
use super::ExitCode;
use leasehold_model::config::InvariantId;
use leasehold_model::scenario::to_toml;
use leasehold_sim::runner::{fault_schedule, PreparedConfig};
use leasehold_sim::shrink::{shrink, Budget};
use std::time::{Duration, Instant};

/// Runs the command.
pub fn run(args: &ShrinkArgs) -> ExitCode {
    let (scenario, stores, kind) = match open_scenario(&args.scenario, &args.stores) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let cfg = &scenario.config;
    let path = scenario.path.to_string_lossy().into_owned();
    let seed = args.seed;
    let first = match PreparedConfig::new(cfg.clone()).and_then(|v| stores.run(kind, &v, seed)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("leasehold: harness error: {e}");
            return ExitCode::Input;
        }
    };
    let found: Vec<InvariantId> = first.violations.iter().map(|v| v.invariant).collect();
    let target = match cfg.expect.violation {
        Some(inv) if found.contains(&inv) => inv,
        _ => match found.first() {
            Some(inv) => *inv,
            None => {
                eprintln!("leasehold: {path} seed {seed} breaks no invariant; nothing to shrink");
                return ExitCode::Input;
            }
        },
    };
    eprintln!(
        "shrinking {path} seed {seed}: keeping {target} ({}) broken",
        target.name()
    );
    let schedule = fault_schedule(cfg, seed);
    let started = Instant::now();
    let mut fails = |c: &PreparedConfig| {
        stores
            .run(kind, c, seed)
            .is_ok_and(|o| o.violations.iter().any(|v| v.invariant == target))
    };
    let budget = Budget {
        max_runs: args.max_runs,
        max_wall: Duration::from_secs(args.max_secs),
    };
    let mut out = shrink(cfg, Some(&schedule), &mut fails, budget);
    let still = PreparedConfig::new(out.config.clone()).is_ok_and(|c| fails(&c));
    if !still {
        eprintln!("leasehold: the shrunk scenario no longer fails on rerun; this is a determinism bug (I10)");
        return ExitCode::Input;
    }
    out.config.name = format!("{}_shrunk_seed_{seed}", cfg.name);
    out.config.description = format!(
        "Shrunk from {path} seed {seed}: {target} ({}) still breaks.",
        target.name()
    );
    let dest = args.output.as_ref().map_or_else(
        || "MINIMAL.toml".to_string(),
        |p| p.to_string_lossy().into_owned(),
    );
    let header = format!(
        "Written by `leasehold shrink {path} --seed {seed}`.\n\
         Before: {}\nAfter:  {}\n\
         Reproduce: leasehold replay {dest} --seed {seed}",
        out.before, out.after
    );
    let text = match to_toml(&out.config, &header) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("leasehold: cannot write the scenario: {e}");
            return ExitCode::Input;
        }
    };
    match &args.output {
        Some(file) => {
            if let Err(e) = std::fs::write(file, &text) {
                eprintln!("leasehold: cannot write {}: {e}", file.display());
                return ExitCode::Input;
            }
        }
        None => print!("{text}"),
    }
    eprintln!("before: {}", out.before);
    eprintln!("after:  {}", out.after);
    let (concretized, exhausted) = (out.concretized, out.budget_exhausted);
    eprintln!(
        "{} runs in {:.1}s{}{}",
        out.runs,
        started.elapsed().as_secs_f64(),
        if concretized {
            "; swarm faults replaced by the seed's schedule"
        } else {
            ""
        },
        if exhausted {
            "; budget exhausted (rerun with --max-runs/--max-secs to go further)"
        } else {
            ""
        },
    );
    eprintln!("reproduce: leasehold replay {dest} --seed {seed}");
    ExitCode::Ok
}
