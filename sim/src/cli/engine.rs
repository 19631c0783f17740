//! The one place the CLI calls the simulator engine (`runner`, `checker`,
//! `report`), reduced to what the commands print and judge.

use crate::checker::{check_store_events, Violation};
use crate::config::{InvariantId, ScriptedFault, SimConfig};
use crate::report::violation_report;
use crate::runner::{fault_schedule, run_seed};

/// One violation as the CLI shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The invariant broken.
    pub invariant: InvariantId,
    /// One line: invariant, job, message.
    pub summary: String,
    /// The full report, ending with the replay command.
    pub report: String,
}

/// One seed's run, reduced (the history is dropped).
#[derive(Clone, Debug)]
pub struct SeedRun {
    /// Every violation, in the checker's order.
    pub violations: Vec<Found>,
    /// The history hash (I10).
    pub hash: u64,
    /// Simulated time covered.
    pub sim_ms: u64,
    /// Whether a drift beyond ρ or a store clock step switched I3 off.
    pub timing_broken: bool,
}

/// The replay command line for a scenario file and seed.
pub fn replay_command(path: &str, seed: u64) -> String {
    crate::report::replay_command(path, seed)
}

fn found(v: &Violation, cfg: &SimConfig, seed: u64, path: Option<&str>) -> Found {
    let job = v.job.map(|j| format!(" job {}", j.0)).unwrap_or_default();
    Found {
        invariant: v.invariant,
        summary: format!(
            "{} ({}){job}: {}",
            v.invariant,
            v.invariant.name(),
            v.message
        ),
        report: violation_report(v, cfg, seed, path),
    }
}

/// Runs one seed and checks it.
pub fn run(cfg: &SimConfig, seed: u64, path: &str) -> Result<SeedRun, String> {
    let out = run_seed(cfg, seed).map_err(|e| e.to_string())?;
    Ok(SeedRun {
        violations: out
            .violations
            .iter()
            .map(|v| found(v, cfg, seed, Some(path)))
            .collect(),
        hash: out.history_hash,
        sim_ms: out.sim_time_ms,
        timing_broken: out.timing_assumption_broken,
    })
}

/// The seed's concrete fault schedule.
pub fn schedule(cfg: &SimConfig, seed: u64) -> Vec<ScriptedFault> {
    fault_schedule(cfg, seed)
}

/// The ground-truth-free checks on recorded store events.
/// Reports name the invariant, job, tokens, workers and store time (a
/// recorded history has no scenario, seed or true time to show).
pub fn check_events(events: &[leasehold_core::Event], parallelism: Option<u32>) -> Vec<Found> {
    check_store_events(events, parallelism)
        .iter()
        .map(|v| {
            let mut report = format!(
                "{} {} violated: {}",
                v.invariant,
                v.invariant.name(),
                v.message
            );
            if let Some(j) = v.job {
                report += &format!("\n  job:    {j}");
            }
            if !v.tokens.is_empty() {
                let toks: Vec<String> = v.tokens.iter().map(ToString::to_string).collect();
                report += &format!("\n  tokens: {}", toks.join(", "));
            }
            if !v.hosts.is_empty() {
                report += &format!("\n  hosts:  {}", v.hosts.join(", "));
            }
            if let Some(st) = v.store_time {
                report += &format!("\n  store time: {st}");
            }
            Found {
                invariant: v.invariant,
                summary: format!("{}: {}", v.invariant, v.message),
                report,
            }
        })
        .collect()
}
