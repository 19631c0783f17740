//! The `[pruner]` table: pruner hosts running the core's real `Pruner`
//! (spec §3 "Retention"), off unless the table is present.
//!
//! Each pruner host (`pruner-1` …) runs `leasehold_core::Pruner` on its own
//! store client, so every prune goes through the same wire, faults and
//! store as every other request, and its clock, crashes, pauses and
//! partitions are drawn and scripted like any host's. The store decides
//! which jobs are old enough, on its own clock.
//!
//! The simulator's pruners keep audit events for the whole run: the
//! event-based checks read the store's whole audit log at the end, and an
//! event pruned under them would look like a transition that never
//! happened. Pruning the audit log itself is covered by the conformance
//! suite.

use crate::duration::Dur;
use serde::{Deserialize, Serialize};

/// Default retention `R`: the core's minimum, so a short run prunes.
pub const DEFAULT_PRUNE_RETENTION: Dur = Dur::secs(60);
/// Default period between a pruner's wake-ups.
pub const DEFAULT_PRUNE_PERIOD: Dur = Dur::secs(10);
/// Default jobs per prune call.
pub const DEFAULT_PRUNE_BATCH: u32 = 100;
/// Most pruner hosts.
pub const MAX_PRUNERS: u32 = 8;

/// Pruner hosts and their settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PrunerSpec {
    /// Pruner hosts (`pruner-1` …), at least one.
    pub hosts: u32,
    /// Retention `R` (store time): at least the core's `MIN_RETENTION`.
    pub retention: Dur,
    /// Between wake-ups (the pruner's own clock).
    pub period: Dur,
    /// Jobs per prune call: 1 to the core's `MAX_PRUNE_LIMIT`.
    pub batch: u32,
}

impl Default for PrunerSpec {
    fn default() -> Self {
        PrunerSpec {
            hosts: 1,
            retention: DEFAULT_PRUNE_RETENTION,
            period: DEFAULT_PRUNE_PERIOD,
            batch: DEFAULT_PRUNE_BATCH,
        }
    }
}
