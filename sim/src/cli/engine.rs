//! The one place the CLI calls the simulator engine (`runner`, `checker`,
//! `report`), reduced to what the commands print and judge.

use crate::config::{InvariantId, ScriptedFault, SimConfig};

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

/// One seed's run, reduced (the history is dropped unless asked for).
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
    format!("leasehold replay {path} --seed {seed}")
}

/// Runs one seed and checks it.
pub fn run(cfg: &SimConfig, seed: u64, path: &str) -> Result<SeedRun, String> {
    let _ = (cfg, seed, path);
    Err("the simulator engine is not built yet".into())
}

/// The seed's concrete fault schedule.
pub fn schedule(cfg: &SimConfig, seed: u64) -> Vec<ScriptedFault> {
    let _ = (cfg, seed);
    Vec::new()
}

/// The ground-truth-free checks on recorded store events.
pub fn check_events(events: &[leasehold_core::Event], parallelism: Option<u32>) -> Vec<Found> {
    let _ = (events, parallelism);
    Vec::new()
}
