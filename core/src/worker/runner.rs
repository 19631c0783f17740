//! The worker: claims leases up to its concurrency and runs each in its own
//! lease task.
//!
//! Invariants:
//! - at most `concurrency` lease tasks run at once (claims ask for no more
//!   than the free slots);
//! - after shutdown no new claim is sent, and `run` returns only once every
//!   lease task has ended or the bounded drain time has passed.

use super::config::WorkerConfig;
use super::handler::Handler;
use super::lease_task::{run_lease, LeaseCtx, LeaseEnd};
use super::observer::{NoObserver, Observer};
use super::shutdown::Shutdown;
use super::timeout::with_timeout;
use crate::clock::Runtime;
use crate::error::StoreError;
use crate::store::{ClaimRequest, Store};
use crate::time::Millis;
use std::sync::Arc;
use tokio::sync::mpsc;

/// What a worker did, returned by [`Worker::run`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkerStats {
    /// Leases granted.
    pub claimed: u64,
    /// Releases answered `Committed`.
    pub committed: u64,
    /// Releases answered `Lost`.
    pub release_lost: u64,
    /// Releases that gave up with an unknown outcome.
    pub release_unknown: u64,
    /// Leases abandoned (lost or self-fenced) without a release.
    pub abandoned: u64,
    /// Claims whose outcome was unknown or rejected.
    pub claim_errors: u64,
    /// Lease tasks still running when the drain time ran out.
    pub undrained: u32,
}

/// Claims jobs from one queue and runs them with a [`Handler`].
pub struct Worker<S, H, R> {
    ctx: Arc<LeaseCtx<S, H, R>>,
}

impl<S: Store, H: Handler, R: Runtime> Worker<S, H, R> {
    /// A worker on `store` running `handler` on runtime `rt`.
    pub fn new(store: Arc<S>, handler: H, rt: R, cfg: WorkerConfig) -> Self {
        Worker {
            ctx: Arc::new(LeaseCtx {
                store,
                handler: Arc::new(handler),
                rt,
                cfg: Arc::new(cfg),
                observer: Arc::new(NoObserver),
            }),
        }
    }

    /// Reports runtime events to `observer`.
    pub fn with_observer(self, observer: impl Observer) -> Self {
        let ctx =
            Arc::try_unwrap(self.ctx).unwrap_or_else(|_| unreachable!("not shared before run"));
        Worker {
            ctx: Arc::new(LeaseCtx {
                observer: Arc::new(observer),
                ..ctx
            }),
        }
    }

    /// The worker's configuration.
    pub fn config(&self) -> &WorkerConfig {
        &self.ctx.cfg
    }

    /// Runs until `shutdown`, then returns running leases within the grace
    /// time and reports what it did.
    pub async fn run(self, mut shutdown: Shutdown) -> WorkerStats {
        let ctx = self.ctx;
        let cfg = ctx.cfg.clone();
        let rt = ctx.rt.clone();
        let mut stats = WorkerStats::default();
        let (done_tx, mut done_rx) = mpsc::channel::<LeaseEnd>(cfg.concurrency as usize);
        let mut running: u32 = 0;

        // One iteration per claim or wake-up; ends on shutdown.
        while !shutdown.is_requested() {
            // Made before the claim, so work committed after the claim's
            // snapshot still ends the idle wait below (`Store::work_available`).
            let wake = ctx.store.work_available(&cfg.queue);
            tokio::pin!(wake);
            let free = cfg.concurrency - running;
            let mut idle = false;
            if free > 0 {
                let t_send = rt.now();
                let req = ClaimRequest {
                    worker: cfg.worker_id.clone(),
                    queue: cfg.queue.clone(),
                    lease: cfg.lease,
                    max: free,
                };
                match with_timeout(&rt, cfg.request_timeout, ctx.store.claim(req)).await {
                    Ok(leases) => {
                        debug_assert!(
                            leases.len() <= free as usize,
                            "store granted more than asked"
                        );
                        idle = leases.len() < free as usize;
                        for lease in leases {
                            running += 1;
                            stats.claimed += 1;
                            let (ctx2, tx, sd) = (ctx.clone(), done_tx.clone(), shutdown.clone());
                            rt.spawn(Box::pin(async move {
                                let end = run_lease(ctx2, lease, t_send, sd).await;
                                let _ = tx.send(end).await;
                            }));
                        }
                    }
                    Err(e) => {
                        stats.claim_errors += 1;
                        idle = true;
                        match e {
                            StoreError::Unavailable(_) => {
                                tracing::debug!(error = %e, "claim outcome unknown")
                            }
                            _ => tracing::warn!(error = %e, "claim rejected"),
                        }
                    }
                }
            }
            tokio::select! {
                biased;
                _ = shutdown.wait() => {}
                Some(end) = done_rx.recv() => { running -= 1; count(&mut stats, end); }
                // One wake per burst: any number of announcements resolve
                // it once, and the loop then claims once.
                _ = &mut wake, if idle => {}
                _ = rt.sleep(cfg.poll_interval), if idle => {}
            }
            // Collect every lease that already ended, so the next claim asks
            // for all free slots in one request instead of one at a time.
            // Bounded: at most `concurrency` leases can be waiting here.
            for _ in 0..cfg.concurrency {
                let Ok(end) = done_rx.try_recv() else { break };
                running -= 1;
                count(&mut stats, end);
            }
        }

        // Drain: lease tasks see the shutdown and return their leases within
        // the grace time; their releases are bounded by the retry budget.
        let release_budget = Millis(
            cfg.request_timeout
                .0
                .saturating_add(cfg.renew_interval.0)
                .saturating_mul(u64::from(cfg.release_tries)),
        );
        let deadline = rt
            .now()
            .saturating_add(cfg.grace)
            .saturating_add(release_budget);
        while running > 0 {
            let left = deadline.saturating_sub(rt.now());
            if left == Millis::ZERO {
                break;
            }
            tokio::select! {
                biased;
                Some(end) = done_rx.recv() => { running -= 1; count(&mut stats, end); }
                _ = rt.sleep(left) => {}
            }
        }
        stats.undrained = running;
        tracing::info!(worker = %cfg.worker_id, ?stats, "worker stopped");
        stats
    }
}

fn count(stats: &mut WorkerStats, end: LeaseEnd) {
    match end {
        LeaseEnd::Released(Some(crate::job::Release::Committed)) => stats.committed += 1,
        LeaseEnd::Released(Some(crate::job::Release::Lost)) => stats.release_lost += 1,
        LeaseEnd::Released(None) => stats.release_unknown += 1,
        LeaseEnd::Abandoned(_) => stats.abandoned += 1,
    }
}
