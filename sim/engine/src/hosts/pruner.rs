//! Pruner hosts (`[pruner]`): the real `leasehold_core::Pruner` on a
//! [`RemoteStore`](crate::net::RemoteStore), so every prune crosses the
//! same network, faults and store as every other request.
//!
//! A pruner host has its own clock (its period runs on it; the store alone
//! judges which jobs are old enough, on the store's clock), and crashes,
//! restarts, pauses and partitions like any host. Its audit retention is
//! the whole run and more (see `leasehold_model::config::pruner`).

use crate::machine::runtime::HostRuntime;
use leasehold_core::{shutdown_channel, Millis, Pruner, PrunerConfig};
use leasehold_model::config::pruner::PrunerSpec;
use leasehold_model::config::SimConfig;
use std::sync::Arc;

/// The longest wait after a failed prune before the next try: the core's
/// default, or the period when that is shorter (the core caps it there).
const MAX_ERROR_BACKOFF: Millis = Millis::from_secs(1);
/// Audit events are kept this long past the end of the run.
const AUDIT_MARGIN: Millis = Millis::from_secs(3600);

/// What a pruner host is given, for every incarnation.
#[derive(Clone, Debug)]
pub struct PrunerSettings {
    /// The scenario's `[pruner]` table.
    pub spec: PrunerSpec,
    /// Timeout of each store call.
    pub request_timeout: Millis,
    /// Audit retention: longer than the run (see the module docs).
    pub audit_retention: Millis,
}

impl PrunerSettings {
    /// The pruner settings of `cfg` (its `[pruner]` table; a world without
    /// one has no pruner host to give them to).
    pub fn of(cfg: &SimConfig) -> Self {
        let spec = cfg.pruner.clone().unwrap_or_default();
        let run = Millis(cfg.duration.as_ms().saturating_add(AUDIT_MARGIN.0));
        PrunerSettings {
            audit_retention: run.max(spec.retention.0),
            spec,
            request_timeout: cfg.protocol.request_timeout.0,
        }
    }

    fn config(&self) -> Result<PrunerConfig, String> {
        let s = &self.spec;
        PrunerConfig::builder()
            .retention(s.retention.0)
            .audit_retention(self.audit_retention)
            .batch(s.batch)
            .period(s.period.0)
            .error_backoff(s.period.0.min(MAX_ERROR_BACKOFF))
            .request_timeout(self.request_timeout)
            .build()
            .map_err(|e| e.to_string())
    }
}

/// The pruner host's software: one incarnation.
pub async fn run_pruner(rt: HostRuntime, settings: Arc<PrunerSettings>) -> Result<(), String> {
    rt.start();
    let cfg = settings
        .config()
        .map_err(|e| format!("{}: {e}", rt.host()))?;
    let store = Arc::new(crate::net::remote_store(rt.clone(), false));
    let pruner = Pruner::new(store, rt, cfg);
    let (_keep, shutdown) = shutdown_channel();
    pruner.run(shutdown).await;
    Ok(())
}
