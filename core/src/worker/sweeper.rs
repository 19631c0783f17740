//! The sweeper: reclaims expired leases and reports each as a crash.
//!
//! The sweeper decides nothing itself: expiry is judged by the store, at
//! write time, on the store's clock (the core's `sweep` transition). It only
//! calls `sweep` on a schedule and reports what came back. Each wake-up makes
//! at most `max_rounds` calls of `batch` reclaims.

use super::config::SweeperConfig;
use super::metrics;
use super::observer::{NoObserver, Observer, RuntimeEvent};
use super::shutdown::Shutdown;
use super::timeout::with_timeout;
use crate::clock::Runtime;
use crate::error::StoreError;
use crate::history::CrashReport;
use crate::store::{Store, SweepRequest};
use std::sync::Arc;

/// Periodically sweeps a store.
pub struct Sweeper<S, R> {
    store: Arc<S>,
    rt: R,
    cfg: SweeperConfig,
    observer: Arc<dyn Observer>,
    /// The catalogue's `sweeper-stops-on-conflict` is in force.
    #[cfg(feature = "buggy-variants")]
    stops_on_conflict: bool,
}

impl<S: Store, R: Runtime> Sweeper<S, R> {
    /// A sweeper on `store`.
    pub fn new(store: Arc<S>, rt: R, cfg: SweeperConfig) -> Self {
        Sweeper {
            store,
            rt,
            cfg,
            observer: Arc::new(NoObserver),
            #[cfg(feature = "buggy-variants")]
            stops_on_conflict: false,
        }
    }

    /// Runs the catalogue's sweeper-side bug `v`, if it is one.
    #[cfg(feature = "buggy-variants")]
    pub fn with_variant(mut self, v: Option<crate::variants::Variant>) -> Self {
        self.stops_on_conflict = v == Some(crate::variants::Variant::SweeperStopsOnConflict);
        self
    }

    /// Reports crash reports to `observer`.
    pub fn with_observer(mut self, observer: impl Observer) -> Self {
        self.observer = Arc::new(observer);
        self
    }

    /// One wake-up: sweeps until a call returns less than a full batch, at
    /// most `max_rounds` calls. Returns every crash report.
    pub async fn sweep_once(&self) -> Result<Vec<CrashReport>, StoreError> {
        let mut all = Vec::new();
        for _ in 0..self.cfg.max_rounds {
            let req = SweepRequest {
                limit: self.cfg.batch,
            };
            let reports =
                with_timeout(&self.rt, self.cfg.request_timeout, self.store.sweep(req)).await?;
            metrics::record_sweep();
            let full = reports.len() >= self.cfg.batch as usize;
            for report in reports {
                tracing::warn!(
                    job = %report.job, token = %report.token, holder = %report.holder,
                    expired_at = %report.expired_at, to = %report.to,
                    "lease expired: holder presumed crashed"
                );
                let event = RuntimeEvent::CrashReported {
                    report: report.clone(),
                    at: self.rt.now(),
                };
                metrics::record_event(&event);
                self.observer.on_event(&event);
                all.push(report);
            }
            if !full {
                break;
            }
        }
        Ok(all)
    }

    /// Sweeps every interval until `shutdown`.
    pub async fn run(self, mut shutdown: Shutdown) {
        while !shutdown.is_requested() {
            if let Err(e) = self.sweep_once().await {
                #[cfg(feature = "buggy-variants")]
                if self.stops_on_conflict && matches!(e, StoreError::Conflict(_)) {
                    return;
                }
                tracing::debug!(error = %e, "sweep failed; retrying next interval");
            }
            tokio::select! {
                biased;
                _ = shutdown.wait() => {}
                _ = self.rt.sleep(self.cfg.interval) => {}
            }
        }
    }
}
