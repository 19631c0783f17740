//! Faults: the swarm draw, the concrete schedule, and the plan the runner
//! applies.
//!
//! Each seed draws its own fault mix from the scenario's ranges
//! ([`draw_swarm`], swarm testing) and resolves it into concrete scripted
//! faults ([`fault_schedule`]), all inside `[0, faults.window)`; the
//! scenario's own `events` are added as written. The schedule is the ground
//! truth recorded in the history. Message and answer loss are per-message
//! probabilities (not schedulable events): each seed draws one rate for
//! each, applied by the store host inside the window; every drop it decides
//! is recorded.
//!
//! Conventions:
//! - `skew HOST ±X at 0s` sets the host's initial wall-clock offset; it is not
//!   a step. A skew at a later time is a step (and breaks the timing
//!   assumption when it hits the store).
//! - `shutdown worker-N at T` is a graceful stop, not a crash: the worker
//!   host raises its own shutdown handle at T (see [`FaultPlan::shutdown_after`]),
//!   returns its leases and its process ends. It stays down until a scripted
//!   `restart`; the runner restarts only crashed hosts.
//! - `conflict HOST FROM..TO` makes the store answer `Conflict`, applying
//!   nothing, to HOST's renews, releases and cancels arriving in the window
//!   ([`FaultPlan::conflict_at`]); it draws nothing, so the seed's other
//!   draws are unchanged. A merged batch carrying one of them fails as one
//!   transaction (every part answered `Conflict`), as a drawn batch
//!   conflict does; a batch applied part by part refuses only those parts.
//! - `hold A -> B FROM..TO` holds only the messages from A to B; `hold A B`
//!   holds both directions. The history's link record says a link is held
//!   when either direction is; the recorded schedule says which.
//! - Drift is within the assumption up to and including ρ: only
//!   `|ppm| > max_drift_ppm` breaks it.
//! - After the window everything heals: crashed hosts restart, links heal,
//!   pauses and hangs end. Clock offsets and drifts stay (a clock is not a
//!   fault that heals); steps happen only inside the window.

mod plan;
mod swarm;

pub use plan::{
    paused_until, ConflictWindows, FaultPlan, LinkView, Pauses, ProcessAction, Shutdowns,
};
pub use swarm::{draw_swarm, SwarmDraw};

use leasehold_model::config::{ScriptedFault, SimConfig};

/// The concrete faults of `seed`: the scenario's scripted events followed by
/// the swarm faults drawn for this seed, sorted by start time (stable).
pub fn fault_schedule(cfg: &SimConfig, seed: u64) -> Vec<ScriptedFault> {
    let mut all = cfg.events.clone();
    all.extend(swarm::swarm_faults(cfg, seed));
    all.sort_by_key(|f| f.start());
    all
}

/// Whether `schedule` breaks the timing assumption of spec §2: a drift
/// beyond ρ on any host, or a step of the store's wall clock.
pub fn timing_assumption_broken(cfg: &SimConfig, schedule: &[ScriptedFault]) -> bool {
    let rho = i64::from(cfg.protocol.max_drift_ppm);
    schedule.iter().any(|f| match f {
        ScriptedFault::Drift { ppm, .. } => ppm.abs() > rho,
        ScriptedFault::Skew { host, at, by } => host == "store" && at.as_ms() > 0 && by.0 != 0,
        _ => false,
    })
}

/// When every fault has healed: the end of the window, or later if a
/// scripted fault reaches beyond it.
pub fn heal_time(cfg: &SimConfig, schedule: &[ScriptedFault]) -> u64 {
    let mut heal = cfg.faults.window.as_ms();
    for f in schedule {
        let end = match f {
            ScriptedFault::Crash { at, .. }
            | ScriptedFault::Restart { at, .. }
            | ScriptedFault::Shutdown { at, .. } => at.as_ms(),
            ScriptedFault::Partition { to, .. }
            | ScriptedFault::Hold { to, .. }
            | ScriptedFault::Conflict { to, .. } => to.as_ms(),
            ScriptedFault::Pause { at, len, .. } => at.as_ms() + len.as_ms(),
            ScriptedFault::Skew { at, .. } | ScriptedFault::Drift { at, .. } => at.as_ms(),
        };
        heal = heal.max(end);
    }
    heal.min(cfg.duration.as_ms())
}
