//! The pruner: deletes finished jobs past their retention, on a period.
//!
//! Off by default: nothing prunes unless an application builds a
//! [`Pruner`] and runs it (see `docs/RETENTION.md`). It decides nothing
//! itself: which jobs are old enough is judged by the store, at write time,
//! on the store's clock (the core's `prune` transition). It only calls
//! [`Store::prune`] and logs what came back.
//!
//! Bounds: each wake-up makes at most `max_rounds` calls of at most
//! `request.limit` jobs, and stops at the first call that prunes less than
//! a full batch. A failed call ends the wake-up, which still reports the
//! jobs its earlier calls pruned ([`PruneFailure`]); the next comes after
//! a backoff that doubles per failure in a row, capped at the period.

use super::pruner_config::PrunerConfig;
use super::pruner_failure::PruneFailure;
use super::shutdown::Shutdown;
use super::timeout::with_timeout;
use crate::clock::Runtime;
use crate::ids::JobId;
use crate::store::Store;
use std::sync::Arc;

/// Periodically prunes a store.
pub struct Pruner<S, R> {
    store: Arc<S>,
    rt: R,
    cfg: PrunerConfig,
}

impl<S: Store, R: Runtime> Pruner<S, R> {
    /// A pruner on `store`, waking on `rt`'s clock.
    pub fn new(store: Arc<S>, rt: R, cfg: PrunerConfig) -> Self {
        Pruner { store, rt, cfg }
    }

    /// One wake-up: prunes until a call returns less than a full batch, at
    /// most `max_rounds` calls. Returns every pruned job id; a call that
    /// fails ends the wake-up with a [`PruneFailure`] that still names the
    /// jobs the earlier calls pruned (each call commits on its own).
    pub async fn prune_once(&self) -> Result<Vec<JobId>, PruneFailure> {
        let mut all = Vec::new();
        let batch = self.cfg.request.limit as usize;
        for _ in 0..self.cfg.max_rounds {
            let call = with_timeout(
                &self.rt,
                self.cfg.request_timeout,
                self.store.prune(self.cfg.request),
            )
            .await;
            let pruned = match call {
                Ok(pruned) => pruned,
                Err(error) => return Err(PruneFailure { pruned: all, error }),
            };
            debug_assert!(pruned.len() <= batch, "a store pruned more than asked");
            let full = pruned.len() >= batch;
            all.extend(pruned);
            if !full {
                break;
            }
        }
        if !all.is_empty() {
            tracing::info!(
                jobs = all.len(),
                "pruned finished jobs past their retention"
            );
        }
        Ok(all)
    }

    /// Prunes every period until `shutdown`; after a failure, waits the
    /// configured backoff instead.
    pub async fn run(self, mut shutdown: Shutdown) {
        let mut failures: u32 = 0;
        while !shutdown.is_requested() {
            let wait = match self.prune_once().await {
                Ok(_) => {
                    failures = 0;
                    self.cfg.period
                }
                Err(e) => {
                    failures = failures.saturating_add(1);
                    let wait = self.cfg.backoff_after(failures);
                    tracing::warn!(
                        error = %e.error,
                        pruned = e.pruned.len(),
                        failures,
                        retry_in = %wait,
                        "prune failed; retrying"
                    );
                    wait
                }
            };
            tokio::select! {
                biased;
                _ = shutdown.wait() => {}
                _ = self.rt.sleep(wait) => {}
            }
        }
    }
}
