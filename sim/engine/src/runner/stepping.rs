//! How turmoil steps a world: a speed choice that never changes a history.
//!
//! turmoil advances every host by one tick per step. A host with nothing to
//! do in a step (no task woken, nothing delivered to it, no timer due) only
//! advances its clock; [`Stepping::SkipIdleHosts`] does not poll it and
//! replays the skipped ticks' exact effect on its tokio runtime before it
//! next runs (the vendored turmoil's `Builder::skip_idle_hosts`, see
//! `vendor/turmoil/LEASEHOLD_PATCH.md`).
//!
//! ## Invariant
//! Both steppings give every scenario and seed the same history, byte for
//! byte (I10: same history hash). This holds because every timer of a
//! host's software is declared to turmoil (`hosts::runtime::sleep_until_true`
//! is the only way simulated code sleeps) and every cross-host wake-up goes
//! through turmoil's network; a wake-up from anywhere else while a host is
//! skipped makes turmoil panic (a harness error), never a different
//! history. `tests/engine_stepping.rs` compares the two steppings.

/// How turmoil steps the simulated hosts (speed only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stepping {
    /// Hosts with nothing to do in a step are not polled (the default).
    #[default]
    SkipIdleHosts,
    /// Every host's runtime is polled in every step (stock turmoil).
    EveryHost,
}

impl Stepping {
    /// Whether turmoil skips idle hosts.
    pub fn skips_idle_hosts(self) -> bool {
        self == Stepping::SkipIdleHosts
    }
}
