//! The simulation configuration: what one scenario file describes.
//!
//! Everything here is plain data with serde derives and `deny_unknown_fields`
//! so a scenario file maps onto it directly (`scenarios/README.md` documents
//! the TOML form). Defaults are named constants. [`SimConfig::validate`]
//! rejects impossible settings (min > max, renew ≥ lease, a host that does
//! not exist) naming the field path, which the scenario loader turns into a
//! file:line:column.
//!
//! One file per part, each name reachable as `config::Name`: this file
//! holds the scenario ([`SimConfig`]) and its problems; `settings` the
//! `[topology]`, `[protocol]`, `[workload]` and `[network]` tables;
//! `pruner` the `[pruner]` table; `coverage` the `[coverage]` table;
//! `hosts` the one typed list of the world's hosts the topology makes;
//! `swarm` the `[faults]` ranges; `store_paths` the store paths a
//! scenario opts into; `scripted` the grammar of
//! `events = [...]`; `invariant` the invariant ids; `range` the `[min, max]`
//! form; `validate` the checks, one function per section. The parts
//! import this file, never the other way: the types never reach the checks
//! (which call into `bounds`, `schedules`, `feasible`, `wire` and
//! `workload`, which read the types).

mod coverage;
mod hosts;
mod invariant;
pub mod pruner;
mod range;
mod scripted;
mod settings;
mod store_paths;
mod swarm;
mod validate;

pub use coverage::CoverageSpec;
pub use hosts::{Host, HostKind, Hosts};
pub use invariant::InvariantId;
pub use range::Range;
pub use scripted::ScriptedFault;
pub use settings::{
    Network, Protocol, Topology, Workload, DEFAULT_BACKOFF_BASE, DEFAULT_BACKOFF_CAP,
    DEFAULT_FENCE_MARGIN, DEFAULT_JOBS, DEFAULT_LEASE, DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_DRIFT_PPM,
    DEFAULT_POLL, DEFAULT_QUEUE, DEFAULT_RENEW, DEFAULT_REQUEST_TIMEOUT, DEFAULT_SWEEP,
    MAX_VALUE_BYTES,
};
pub use store_paths::{BatchParts, ConflictOn};
pub use swarm::Faults;

use crate::duration::Dur;
use serde::{Deserialize, Serialize};
use std::ops::Deref;

/// Default simulated time of one run (fault window, then healing and liveness).
pub const DEFAULT_DURATION: Dur = Dur::secs(600);
/// Default seeds per scenario for `leasehold run`.
pub const DEFAULT_SEEDS: u64 = 20;
/// Default delivery quantum (`tick`): 1 ms, the simulator's resolution, so
/// every message arrives at the exact millisecond its latency says. Time
/// is event-driven; a scenario that sets a coarser `tick` (files written
/// for the stepped engine set 10 ms) has its arrivals rounded up to it.
pub const DEFAULT_TICK: Dur = Dur::ms(1);

/// What a run must show.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Expect {
    /// A violation of this invariant must be found within the seed budget
    /// (for buggy variants). When unset, every invariant must hold on every seed.
    pub violation: Option<InvariantId>,
}

/// One scenario: the world, the workload, the faults and the expectation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimConfig {
    /// Name (defaults to the file name).
    pub name: String,
    /// What the scenario tells.
    pub description: String,
    /// Default number of seeds for `leasehold run`.
    pub seeds: u64,
    /// The first of those seeds: `leasehold run` runs
    /// `first_seed..first_seed+seeds` (default 0). A regression case that
    /// `leasehold explore` wrote pins its failing seed here.
    pub first_seed: u64,
    /// Simulated time of one run.
    pub duration: Dur,
    /// Delivery quantum: message arrivals are rounded up to a multiple of
    /// it (default 1 ms: exact).
    pub tick: Dur,
    /// A deliberately buggy protocol variant (bug catalogue), by name.
    pub variant: Option<String>,
    /// The store this scenario runs on unless `--store` says otherwise
    /// (default: memory).
    pub store: Option<crate::store_kind::StoreKind>,
    /// SQL transactions of one instant run interleaved at their
    /// statements, in an order drawn from the seed (`leasehold run
    /// --interleave` turns it on for every scenario; the memory store
    /// ignores it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interleave: bool,
    /// Hosts.
    pub topology: Topology,
    /// Protocol settings.
    pub protocol: Protocol,
    /// Workload.
    pub workload: Workload,
    /// Network.
    pub network: Network,
    /// Swarm fault ranges.
    pub faults: Faults,
    /// Scripted faults.
    pub events: Vec<ScriptedFault>,
    /// Expectation.
    pub expect: Expect,
    /// Schedules (periodic jobs), put by every scheduler host at its start.
    pub schedules: Vec<crate::schedules::ScheduleSpec>,
    /// Pruner hosts (`[pruner]`); none when absent (pruning is off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pruner: Option<pruner::PrunerSpec>,
    /// The situations the scenario exists to reach (`[coverage]`); left
    /// out when empty, so scenarios without it serialize as before.
    #[serde(skip_serializing_if = "CoverageSpec::is_empty")]
    pub coverage: CoverageSpec,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            name: String::new(),
            description: String::new(),
            seeds: DEFAULT_SEEDS,
            first_seed: 0,
            duration: DEFAULT_DURATION,
            tick: DEFAULT_TICK,
            variant: None,
            store: None,
            interleave: false,
            topology: Topology::default(),
            protocol: Protocol::default(),
            workload: Workload::default(),
            network: Network::default(),
            faults: Faults::default(),
            events: Vec::new(),
            expect: Expect::default(),
            schedules: Vec::new(),
            pruner: None,
            coverage: CoverageSpec::default(),
        }
    }
}

/// A setting that cannot work, with the dotted path of the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ConfigProblem {
    /// Dotted field path, like `protocol.renew_interval` or `events[2]`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}
impl SimConfig {
    /// Every host of the world, typed (the one list: see [`Hosts`]).
    pub fn hosts(&self) -> Hosts {
        Hosts::of(&self.topology).with_pruners(self.pruner.as_ref().map_or(0, |p| p.hosts))
    }

    /// The plain probabilities of the workload and the faults (single
    /// numbers, not ranges), each with its path in the config file, in
    /// the order they are checked and reported.
    pub fn plain_probabilities(&self) -> [(&'static str, f64); 6] {
        let w = &self.workload;
        [
            ("workload.fail_rate", w.fail_rate),
            ("workload.permanent_share", w.permanent_share),
            ("workload.poison_rate", w.poison_rate),
            ("workload.hang_rate", w.hang_rate),
            ("workload.cancel_rate", w.cancel_rate),
            ("faults.oneway_share", self.faults.oneway_share),
        ]
    }
}

/// A [`SimConfig`] that [`SimConfig::validate`] accepted, made only by
/// [`SimConfig::into_valid`]: whoever runs many seeds of one scenario takes
/// this and validates once, not once per seed. It reads as the config it
/// holds.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidConfig(SimConfig);

impl ValidConfig {
    /// The accepted config.
    pub fn config(&self) -> &SimConfig {
        &self.0
    }

    /// The same config pinned to the store it runs on. Validation never
    /// reads the store field (the engine's tests hold it to that), so the
    /// proof still stands.
    pub fn on_store(mut self, kind: crate::store_kind::StoreKind) -> Self {
        self.0.store = Some(kind);
        self
    }

    /// The accepted config, to change (it must then be validated again).
    pub fn into_inner(self) -> SimConfig {
        self.0
    }
}

impl Deref for ValidConfig {
    type Target = SimConfig;
    fn deref(&self) -> &SimConfig {
        &self.0
    }
}
