//! The worker: claims leases up to its concurrency and runs each in its own
//! lease task.
//!
//! One loop talks to the store for the whole worker: each [`Store::batch`]
//! carries every release its lease tasks have queued and, after them, a
//! claim per queue for the free slots (those the releases just freed
//! included). A store that can answers it in one transaction; every
//! request is still fenced and answered on its own. A batch is sent as soon
//! as there is something to send, even while earlier batches are still in
//! flight, so a release never waits behind a batch the network holds
//! (renews are not batched at all: each lease task sends its own).
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
        // Batches sent and not yet answered. Several may be in flight, so a
        // release never waits behind a batch the network holds; bounded by
        // what can be outstanding: a release per lease task and a claim per
        // free slot.
        let max_in_flight = 3 * cap + 1;
        let mut in_flight: Vec<Pin<Box<dyn Future<Output = Sent> + Send + '_>>> = Vec::new();
        // The last claims came back short (or failed): wait for a wake-up
        // or the poll before claiming alone again.
        let mut idle = false;
        // While idle: the wake-ups subscribed before the claim that came
        // back short (one per queue).
        let mut idle_wake: Wakes<'_> = Vec::new();
        #[cfg(feature = "buggy-variants")]
        let wake_only = cfg.variant == Some(crate::variants::Variant::WaitsOnlyForWakeUps);
        #[cfg(not(feature = "buggy-variants"))]
        let wake_only = false;
        #[cfg(feature = "buggy-variants")]
        let fence_from_answer = cfg.variant == Some(crate::variants::Variant::FenceFromAnswer);
        #[cfg(not(feature = "buggy-variants"))]
        let fence_from_answer = false;
        // Batches with claims sent so far; each carries its number.
        let mut claims_sent: u64 = 0;
        let release_budget = Millis(
            cfg.request_timeout
                .0
                .saturating_add(cfg.renew_interval.0)
                .saturating_mul(u64::from(cfg.release_tries)),
        );
        let mut deadline: Option<Millis> = None;

        // One iteration per event (a batch answered, a release queued, a
        // lease ended, a wake-up, the poll); ends once shut down and every
        // lease task has ended, or at the drain deadline.
        loop {
            if deadline.is_none() && shutdown.is_requested() {
                // Drain: lease tasks see the shutdown and return their
                // leases within the grace time; their releases are bounded
                // by the retry budget and still go out in batches.
                deadline = Some(
                    rt.now()
                        .saturating_add(cfg.grace)
                        .saturating_add(release_budget),
                );
            }
            if let Some(d) = deadline {
                if (slots.alive() == 0 && in_flight.is_empty()) || rt.now() >= d {
                    break;
                }
            }
            if !queued.is_empty() {
                // Woken by a release: let the lease tasks that are already
                // runnable (those that finished with it) queue theirs too,
                // so they share this batch. No timer: nothing is held back.
                yield_once().await;
            }
            take_ready(&mut release_rx, &mut queued, &mut slots, cap);
            if in_flight.len() < max_in_flight {
                // Claims ride along with every batch; alone only when the
                // queues were not found empty.
                let asks = if deadline.is_none() && (!queued.is_empty() || !idle) {
                    slots.plan()
                } else {
                    Vec::new()
                };
                if !queued.is_empty() || !asks.is_empty() {
                    let releases: Vec<PendingRelease> = std::mem::take(&mut queued);
                    // Subscribed before the claim is sent, so work committed
                    // after the claim's snapshot still ends the idle wait
                    // that a short answer starts (`Store::work_available`).
                    // A subscription made when the answer arrives would miss
                    // whatever committed while the batch was in flight.
                    let wake = if asks.is_empty() {
                        Vec::new()
                    } else {
                        claims_sent += 1;
                        subscribe(&*ctx.store, &cfg)
                    };
                    let seq = claims_sent;
                    in_flight.push(Box::pin(send(&ctx, &cfg, &rt, releases, asks, wake, seq)));
                }
            }
            let next_answer = std::future::poll_fn(|cx| {
                for i in 0..in_flight.len() {
                    if let Poll::Ready(sent) = in_flight[i].as_mut().poll(cx) {
                        drop(in_flight.remove(i));
                        return Poll::Ready(sent);
                    }
                }
                Poll::Pending
            });
            let left = deadline.map_or(cfg.poll_interval, |d| d.saturating_sub(rt.now()));
            // Idle workers poll as well as wait for wake-ups (a wake-up may
            // be lost), unless the catalogue's `waits-only-for-wake-ups`.
            let polls_when_idle = !wake_only || idle_wake.is_empty();
            tokio::select! {
                biased;
                _ = shutdown.wait(), if deadline.is_none() => {}
                mut sent = next_answer => {
                    let wake = std::mem::take(&mut sent.wake);
                    let sent_seq = sent.seq;
                    let claimed = answered(sent, &mut slots, &mut stats, |lease, t_send| {
                        let t_send = if fence_from_answer { rt.now() } else { t_send };
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
                    });
                    let newest = sent_seq == claims_sent;
                    match claimed {
                        // Short, the newest claim: idle until the
                        // subscription made before it was sent resolves; it
                        // has seen every commit since the claim's snapshot.
                        Some(false) if newest => {
                            idle = true;
                            idle_wake = wake;
                        }
                        // Short, an older claim: idle too, but its wake-up
                        // is not needed. If the newest claim is still in
                        // flight, its answer decides; if it came back short
                        // already, its subscription (made later, before a
                        // later snapshot) is the one kept. Waking on every
                        // old subscription would turn each announcement
                        // into one claim per batch in flight.
                        Some(false) => idle = true,
                        // In full: there may be more; claim again.
                        Some(true) => {
                            idle = false;
                            idle_wake.clear();
                        }
                        None => {}
                    }
                }
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
                _ = any_ready(&mut idle_wake), if idle && deadline.is_none() => {
                    idle = false;
                    idle_wake.clear();
                }
                _ = rt.sleep(left.max(Millis(1))),
                    if (idle && polls_when_idle) || deadline.is_some() => idle = false,
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
        stats.undrained = slots.alive();
        tracing::info!(worker = %cfg.worker_id, ?stats, "worker stopped");
        stats
    }
}

/// One [`Store::work_available`] future per queue.
type Wakes<'a> = Vec<Pin<Box<dyn Future<Output = ()> + Send + 'a>>>;

/// Subscribes to the wake-ups of every queue of `cfg`, now.
fn subscribe<'a, S: Store>(store: &'a S, cfg: &'a WorkerConfig) -> Wakes<'a> {
    cfg.queues
        .iter()
        .map(|q| Box::pin(store.work_available(&q.name)) as Pin<Box<_>>)
        .collect()
}

/// Resolves once any of `wakes` has (never, for none).
async fn any_ready(wakes: &mut Wakes<'_>) {
    std::future::poll_fn(move |cx| {
        if wakes.iter_mut().any(|w| w.as_mut().poll(cx).is_ready()) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// A batch that was sent, with its answer.
struct Sent<'a> {
    /// Local time the batch was sent (the fence of its leases starts here).
    t_send: Millis,
    releases: Vec<PendingRelease>,
    /// (queue index, max) of each claim, in order.
    asks: Vec<(usize, u32)>,
    answer: Result<crate::store::BatchAnswer, StoreError>,
    /// Wake-ups subscribed before the batch was sent (empty without claims).
    wake: Wakes<'a>,
    /// How many batches with claims were sent up to this one.
    seq: u64,
}

/// Sends one batch: `releases`, then a claim per ask.
async fn send<'a, S: Store, H, R: Runtime>(
    ctx: &LeaseCtx<S, H, R>,
    cfg: &WorkerConfig,
    rt: &R,
    releases: Vec<PendingRelease>,
    asks: Vec<(usize, u32)>,
    wake: Wakes<'a>,
    seq: u64,
) -> Sent<'a> {
    let t_send = rt.now();
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
    let patience = crate::Patience::new(rt, cfg.request_timeout);
    let answer = ctx.store.batch_within(req, patience).await;
    Sent {
        t_send,
        releases,
        asks,
        answer,
        wake,
        seq,
    }
}

/// Hands a batch's answers out: each release to its lease task, each
/// granted lease to `start`. Answers `Some(any claim answered in full)`
/// when the batch carried claims.
fn answered(
    sent: Sent<'_>,
    slots: &mut Slots,
    stats: &mut WorkerStats,
    mut start: impl FnMut(crate::job::Lease, Millis),
) -> Option<bool> {
    let Sent {
        t_send,
        releases,
        asks,
        answer,
        ..
    } = sent;
    slots.unreserve(&asks);
    let mut any_full = false;
    match answer {
        Ok(answer) => {
            mark_answered(slots, &releases, &answer.releases);
            answer_all(releases, Ok(answer.releases));
            // A store may be the user's own, or deliberately broken in the
            // simulator's catalogue: its mistakes are logged and contained,
            // never a panic of the worker.
            if answer.claims.len() != asks.len() {
                tracing::error!(
                    asked = asks.len(),
                    answered = answer.claims.len(),
                    "the store answered a different number of claims than were sent"
                );
            }
            for (&(q, max), granted) in asks.iter().zip(answer.claims) {
                match granted {
                    Ok(leases) => {
                        if leases.len() > max as usize {
                            tracing::error!(
                                asked = max,
                                granted = leases.len(),
                                "the store granted more leases than asked; the extra ones are not run"
                            );
                        }
                        any_full |= leases.len() >= max as usize;
                        for lease in leases.into_iter().take(max as usize) {
                            if !slots.start(q, lease.job, lease.token) {
                                tracing::error!(
                                    job = %lease.job,
                                    token = ?lease.token,
                                    "the store granted a lease this worker already runs; not run twice"
                                );
                                continue;
                            }
                            stats.claimed += 1;
                            start(lease, t_send);
                        }
                    }
                    Err(e) => {
                        stats.claim_errors += 1;
                        claim_failed(&e);
                    }
                }
            }
        }
        Err(e) => {
            answer_all(releases, Err(e.clone()));
            if !asks.is_empty() {
                stats.claim_errors += asks.len() as u64;
                claim_failed(&e);
            }
        }
    }
    (!asks.is_empty()).then_some(any_full)
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

/// Frees the task slot of every release answered for sure (its task ends
/// without another call); an unknown outcome or a conflict keeps it for the
/// retry.
fn mark_answered(
    slots: &mut Slots,
    releases: &[PendingRelease],
    answers: &[Result<crate::job::Release, StoreError>],
) {
    for (p, a) in releases.iter().zip(answers) {
        if !a.as_ref().is_err_and(StoreError::is_transient) {
            slots.answered(p.req.job, p.req.token);
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Lease, Outcome, Release};
    use crate::store::{BatchAnswer, ReleaseRequest};
    use crate::time::StoreTime;
    use tokio::sync::oneshot;

    fn lease(job: u64) -> Lease {
        Lease {
            job: JobId(job),
            token: Token(1),
            queue: "q".into(),
            payload: Vec::new(),
            attempt: 1,
            expires_at: StoreTime(0),
        }
    }

    fn cfg() -> WorkerConfig {
        WorkerConfig::builder("w", "q")
            .concurrency(2)
            .build()
            .unwrap()
    }

    /// A batch carrying one claim for every free slot (2), answered with
    /// `granted` leases.
    fn claim_answered(slots: &mut Slots, granted: u64) -> Option<bool> {
        let asks = slots.plan();
        assert_eq!(asks, vec![(0, 2)]);
        let sent = Sent {
            t_send: Millis(0),
            releases: Vec::new(),
            asks,
            answer: Ok(BatchAnswer {
                releases: Vec::new(),
                claims: vec![Ok((1..=granted).map(lease).collect())],
            }),
            wake: Vec::new(),
            seq: 1,
        };
        let mut started = Vec::new();
        let full = answered(sent, slots, &mut WorkerStats::default(), |l, _| {
            started.push(l.job)
        });
        assert_eq!(started.len() as u64, granted);
        full
    }

    /// A claim answered in full may have left more work behind (claim
    /// again at once); a short one means the queue is drained (wait for a
    /// wake-up or the poll).
    #[test]
    fn a_claim_answered_in_full_says_so_and_a_short_one_does_not() {
        assert_eq!(claim_answered(&mut Slots::new(&cfg()), 2), Some(true));
        assert_eq!(claim_answered(&mut Slots::new(&cfg()), 1), Some(false));
        assert_eq!(claim_answered(&mut Slots::new(&cfg()), 0), Some(false));
    }

    /// A release answered for sure frees its task slot with the answer; one
    /// whose outcome is unknown keeps it, as its task will send it again.
    #[test]
    fn only_a_release_answered_for_sure_frees_its_task_slot() {
        let mut slots = Slots::new(&cfg());
        assert_eq!(claim_answered(&mut slots, 2), Some(true));
        let pending = |job: u64| {
            let (reply, _answer) = oneshot::channel();
            PendingRelease {
                req: ReleaseRequest {
                    job: JobId(job),
                    token: Token(1),
                    outcome: Outcome::Succeeded(Vec::new()),
                },
                reply,
            }
        };
        for job in [1, 2] {
            slots.handler_done(JobId(job), Token(1));
        }
        assert_eq!(slots.tasks(), 2);
        let answers = vec![
            Ok(Release::Committed),
            Err(StoreError::Unavailable("lost".into())),
        ];
        mark_answered(&mut slots, &[pending(1), pending(2)], &answers);
        assert_eq!(slots.tasks(), 1, "job 1's slot is free, job 2's kept");
        mark_answered(&mut slots, &[pending(2)], &[Ok(Release::Lost)]);
        assert_eq!(slots.tasks(), 0);
    }
}
