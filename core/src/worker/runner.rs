//! The worker: claims leases up to its concurrency and runs each in its own
//! lease task.
//!
//! One loop talks to the store for the whole worker: each [`Store::batch`]
//! carries every release its lease tasks have queued and, after them, a
//! claim per queue for the free slots (those the releases just freed
//! included). A store that can answers it in one transaction; every
//! request is still fenced and answered on its own.
//!
//! Invariants:
//! - at most `concurrency` handlers run at once, and at most a queue's limit
//!   of that queue (claims ask for no more than the free slots, see
//!   [`super::slots`]); at most `concurrency` more lease tasks wait on
//!   their release;
//! - after shutdown no new claim is sent, and `run` returns only once every
//!   lease task has ended or the bounded drain time has passed.

use super::config::WorkerConfig;
use super::handler::Handler;
use super::lease_task::{run_lease, LeaseCtx, LeaseEnd};
use super::observer::{NoObserver, Observer};
use super::release_queue::{answer_all, PendingRelease};
use super::shutdown::Shutdown;
use super::slots::Slots;
use super::timeout::with_timeout;
use crate::clock::Runtime;
use crate::error::StoreError;
use crate::ids::{JobId, Token};
use crate::store::{BatchRequest, ClaimRequest, Store};
use crate::time::Millis;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
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

/// Claims jobs from its queues and runs them with a [`Handler`].
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
        let cap = cfg.concurrency as usize;
        // Lease tasks alive: at most `concurrency` running handlers plus at
        // most `concurrency` waiting on their release (see `Slots`).
        let (done_tx, mut done_rx) = mpsc::channel::<(JobId, Token, LeaseEnd)>(2 * cap);
        let (release_tx, mut release_rx) = mpsc::channel::<PendingRelease>(2 * cap);
        let mut slots = Slots::new(&cfg);
        let mut queued: Vec<PendingRelease> = Vec::new();

        // One iteration per batch or wake-up; ends on shutdown.
        while !shutdown.is_requested() {
            // Made before the claim, so work committed after the claim's
            // snapshot still ends the idle wait below (`Store::work_available`).
            let mut wakes: Vec<Pin<Box<dyn Future<Output = ()> + Send + '_>>> = cfg
                .queues
                .iter()
                .map(|q| Box::pin(ctx.store.work_available(&q.name)) as Pin<Box<_>>)
                .collect();
            let wake = std::future::poll_fn(|cx| {
                if wakes.iter_mut().any(|w| w.as_mut().poll(cx).is_ready()) {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            });
            tokio::pin!(wake);
            if !queued.is_empty() {
                // Woken by a release: let the lease tasks that are already
                // runnable (those that finished with it) queue theirs too,
                // so they share this batch. No timer: nothing is held back.
                yield_once().await;
            }
            take_ready(&mut release_rx, &mut queued, &mut slots, cap);
            let asks = slots.plan();
            // Idle when no claim was answered in full: every queue asked is
            // empty for now, so the loop waits for a wake-up or the poll.
            let mut idle = false;
            let mut any_full = false;
            if !queued.is_empty() || !asks.is_empty() {
                let t_send = rt.now();
                let releases: Vec<PendingRelease> = std::mem::take(&mut queued);
                let req = BatchRequest {
                    releases: releases.iter().map(|p| p.req.clone()).collect(),
                    claims: asks
                        .iter()
                        .map(|&(q, max)| ClaimRequest {
                            worker: cfg.worker_id.clone(),
                            queue: cfg.queues[q].name.clone(),
                            lease: cfg.lease,
                            max,
                        })
                        .collect(),
                };
                match with_timeout(&rt, cfg.request_timeout, ctx.store.batch(req)).await {
                    Ok(answer) => {
                        answer_all(releases, Ok(answer.releases));
                        debug_assert_eq!(answer.claims.len(), asks.len(), "one answer per claim");
                        for (&(q, max), granted) in asks.iter().zip(answer.claims) {
                            match granted {
                                Ok(leases) => {
                                    debug_assert!(
                                        leases.len() <= max as usize,
                                        "store granted more than asked"
                                    );
                                    any_full |= leases.len() >= max as usize;
                                    for lease in leases.into_iter().take(max as usize) {
                                        stats.claimed += 1;
                                        slots.start(q, lease.job, lease.token);
                                        let (ctx2, tx, sd, rel) = (
                                            ctx.clone(),
                                            done_tx.clone(),
                                            shutdown.clone(),
                                            release_tx.clone(),
                                        );
                                        let (job, token) = (lease.job, lease.token);
                                        rt.spawn(Box::pin(async move {
                                            let end = run_lease(ctx2, lease, t_send, sd, rel).await;
                                            let _ = tx.send((job, token, end)).await;
                                        }));
                                    }
                                }
                                Err(e) => {
                                    stats.claim_errors += 1;
                                    claim_failed(&e);
                                }
                            }
                        }
                        idle = !asks.is_empty() && !any_full;
                    }
                    Err(e) => {
                        answer_all(releases, Err(e.clone()));
                        if !asks.is_empty() {
                            stats.claim_errors += asks.len() as u64;
                            idle = true;
                            claim_failed(&e);
                        }
                    }
                }
            }
            tokio::select! {
                biased;
                _ = shutdown.wait() => {}
                Some((job, token, end)) = done_rx.recv() => {
                    slots.end(job, token);
                    count(&mut stats, end);
                }
                // A release is sent as soon as it is queued.
                Some(p) = release_rx.recv() => {
                    slots.handler_done(p.req.job, p.req.token);
                    queued.push(p);
                }
                // One wake per burst: any number of announcements resolve
                // it once, and the loop then claims once.
                _ = &mut wake, if idle => {}
                _ = rt.sleep(cfg.poll_interval), if idle => {}
            }
            // Collect every lease that already ended, so the next claim asks
            // for all free slots in one request instead of one at a time.
            // Bounded: at most `2 * concurrency` lease tasks exist.
            for _ in 0..2 * cap {
                let Ok((job, token, end)) = done_rx.try_recv() else {
                    break;
                };
                slots.end(job, token);
                count(&mut stats, end);
            }
        }

        // Drain: lease tasks see the shutdown and return their leases within
        // the grace time; their releases are bounded by the retry budget and
        // still go out in batches (with no claims).
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
        while slots.tasks() > 0 {
            take_ready(&mut release_rx, &mut queued, &mut slots, cap);
            if !queued.is_empty() {
                let releases: Vec<PendingRelease> = std::mem::take(&mut queued);
                let req = BatchRequest {
                    releases: releases.iter().map(|p| p.req.clone()).collect(),
                    claims: Vec::new(),
                };
                let answer = with_timeout(&rt, cfg.request_timeout, ctx.store.batch(req)).await;
                answer_all(releases, answer.map(|a| a.releases));
            }
            let left = deadline.saturating_sub(rt.now());
            if left == Millis::ZERO {
                break;
            }
            tokio::select! {
                biased;
                Some((job, token, end)) = done_rx.recv() => {
                    slots.end(job, token);
                    count(&mut stats, end);
                }
                Some(p) = release_rx.recv() => {
                    slots.handler_done(p.req.job, p.req.token);
                    queued.push(p);
                }
                _ = rt.sleep(left) => {}
            }
        }
        stats.undrained = slots.tasks();
        tracing::info!(worker = %cfg.worker_id, ?stats, "worker stopped");
        stats
    }
}

/// Moves every release already queued (at most `2 * cap`: one per lease
/// task, plus retries) into `queued`.
fn take_ready(
    rx: &mut mpsc::Receiver<PendingRelease>,
    queued: &mut Vec<PendingRelease>,
    slots: &mut Slots,
    cap: usize,
) {
    for _ in 0..2 * cap {
        let Ok(p) = rx.try_recv() else { break };
        slots.handler_done(p.req.job, p.req.token);
        queued.push(p);
    }
}

/// Returns after one trip through the executor's queue of runnable tasks.
async fn yield_once() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}

fn claim_failed(e: &StoreError) {
    match e {
        StoreError::Unavailable(_) => tracing::debug!(error = %e, "claim outcome unknown"),
        _ => tracing::warn!(error = %e, "claim rejected"),
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
