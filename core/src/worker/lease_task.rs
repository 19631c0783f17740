//! Runs one lease: the handler, its heartbeat, self-fencing, and the release.
//!
//! Invariants:
//! - the handler's future is polled only while the worker believes it holds
//!   the lease: the fence deadline is checked before every poll, and a lost
//!   or fenced lease drops the future;
//! - the belief deadline moves only on a successful renew, computed from
//!   that renew's send time;
//! - a heartbeat failure whose outcome is unknown never stops the heartbeat:
//!   only `Lost`, a definite rejection or the fence deadline end it. The
//!   retry comes after half the renew interval, but no later than halfway
//!   to the belief deadline and no sooner than [`MIN_RENEW_RETRY`]
//!   ([`renew_retry_at`]): a store that comes back before the deadline gets
//!   a renew in time, instead of one sent a moment before the fence (a
//!   false crash report found by the simulator after a store restart);
//! - a release is retried only while its outcome is unknown, with the same
//!   outcome (so a repeat is idempotent), at most `release_tries` times;
//! - releases go through the worker's release queue
//!   ([`super::release_queue`]), answered per lease (renews are never
//!   batched);
//! - the heartbeat goes on while the release is retried, until the release
//!   has an answer or gives up: a release slowed by store errors (requests
//!   cancelled, answers lost) must not let the lease lapse and be reported
//!   as a crash (I5; a simulator finding with cancelled batches). Renews
//!   sent then only keep the lease; they never extend the worker's belief
//!   (it ended with the handler), stop at the fence deadline as the lease's
//!   loop would, and are bounded by the same `MAX_RENEWS_PER_LEASE`.

use super::config::{WorkerConfig, MAX_RENEWS_PER_LEASE};
use super::fence::Fence;
use super::handler::{Handler, HandlerError, StopReason, StopSignal};
use super::metrics;
use super::observer::{BeliefEnd, Observer, RuntimeEvent};
use super::release_queue::{submit, ReleaseSender};
use super::shutdown::Shutdown;
use super::timeout::with_timeout;
use crate::clock::{BoxFuture, Runtime};
use crate::error::StoreError;
use crate::job::{Lease, Outcome, Release, Renewal};
use crate::store::{ReleaseRequest, RenewRequest, Store};
use crate::time::Millis;
use std::sync::Arc;

/// What a worker needs to run leases; shared by all its lease tasks.
pub(crate) struct LeaseCtx<S, H, R> {
    pub store: Arc<S>,
    pub handler: Arc<H>,
    pub rt: R,
    pub cfg: Arc<WorkerConfig>,
    pub observer: Arc<dyn Observer>,
}

/// How a lease task ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LeaseEnd {
    /// Released; `None` when every try's outcome was unknown.
    Released(Option<Release>),
    /// Stopped without a release (lost or fenced).
    Abandoned(BeliefEnd),
}

type RenewFuture = BoxFuture<Result<Renewal, StoreError>>;

/// Longest single wait, so a "never" deadline does not overflow a timer.
const MAX_NAP: Millis = Millis(3_600_000);
/// Shortest wait before retrying a renew whose outcome was unknown: a store
/// that refuses at once is not hammered as the deadline nears (the renew
/// count is bounded by `MAX_RENEWS_PER_LEASE` as well).
pub const MIN_RENEW_RETRY: Millis = Millis(100);

/// When to retry a renew whose outcome was unknown at local time `now`,
/// with belief deadline `deadline`: after half the renew `interval`, or
/// halfway to the deadline if that is sooner, but never sooner than
/// [`MIN_RENEW_RETRY`].
pub fn renew_retry_at(now: Millis, deadline: Millis, interval: Millis) -> Millis {
    let half_left = deadline.saturating_sub(now).0 / 2;
    let wait = (interval.0 / 2).min(half_left).max(MIN_RENEW_RETRY.0);
    now.saturating_add(Millis(wait))
}

/// How this worker deviates from the protocol: all `false`/`true` defaults
/// except under the catalogue's buggy variants (simulator builds only).
#[derive(Clone, Copy, Debug)]
struct Quirks {
    fence: bool,
    heartbeat: bool,
    heartbeat_survives_errors: bool,
    stop_on_loss: bool,
    wall_deadline: bool,
    retry_conflicts: bool,
    renew_while_releasing: bool,
}

impl Quirks {
    fn of(cfg: &WorkerConfig) -> Quirks {
        #[allow(unused_mut)]
        let mut q = Quirks {
            fence: true,
            heartbeat: true,
            heartbeat_survives_errors: true,
            stop_on_loss: true,
            wall_deadline: false,
            retry_conflicts: true,
            renew_while_releasing: true,
        };
        #[cfg(feature = "buggy-variants")]
        {
            use crate::variants::Variant;
            match cfg.variant {
                Some(Variant::FixedLockNoHeartbeat) => {
                    q.heartbeat = false;
                    q.fence = false;
                }
                Some(Variant::HeartbeatStopsOnError) => {
                    q.heartbeat_survives_errors = false;
                    q.fence = false;
                }
                Some(Variant::ExpiryDoesNotStopHandler) => {
                    q.fence = false;
                    q.stop_on_loss = false;
                }
                Some(Variant::WorkerWallClockDeadline) => q.wall_deadline = true,
                Some(Variant::ConflictAbandonsLease) => q.retry_conflicts = false,
                Some(Variant::HeartbeatStopsAtRelease) => q.renew_while_releasing = false,
                _ => {}
            }
        }
        #[cfg(not(feature = "buggy-variants"))]
        let _ = cfg;
        q
    }
}

/// The belief deadline under the wall-clock bug: the store's expiry read
/// against this host's own wall clock.
fn wall_fence<R: Runtime>(rt: &R, expires_at: crate::time::StoreTime) -> Fence {
    Fence::new(rt.now(), expires_at.since(rt.wall()))
}

fn outcome_of(result: Result<Vec<u8>, HandlerError>, soft: Option<StopReason>) -> Outcome {
    match (result, soft) {
        (Ok(r), _) => Outcome::Succeeded(r),
        (Err(_), Some(StopReason::Cancel)) => Outcome::Cancelled,
        (Err(_), Some(StopReason::Shutdown)) => Outcome::Returned,
        (Err(e), _) => Outcome::Failed {
            error: e.message,
            retryable: e.retryable,
        },
    }
}

pub(crate) async fn run_lease<S: Store, H: Handler, R: Runtime>(
    ctx: Arc<LeaseCtx<S, H, R>>,
    lease: Lease,
    t_send: Millis,
    mut shutdown: Shutdown,
    releases: ReleaseSender,
) -> LeaseEnd {
    let cfg = &ctx.cfg;
    let rt = &ctx.rt;
    let worker = cfg.worker_id.clone();
    let (job, token) = (lease.job, lease.token);
    let observe = |e: RuntimeEvent| {
        metrics::record_event(&e);
        ctx.observer.on_event(&e);
    };
    let end_belief = |why: BeliefEnd| {
        tracing::debug!(%worker, %job, %token, ?why, "belief ended");
        observe(RuntimeEvent::BeliefEnded {
            worker: worker.clone(),
            job,
            token,
            at: rt.now(),
            why,
        });
    };

    let quirks = Quirks::of(cfg);
    let mut fence = if quirks.wall_deadline {
        wall_fence(rt, lease.expires_at)
    } else if quirks.fence {
        Fence::new(t_send, cfg.safe_lease)
    } else {
        Fence::new(Millis(u64::MAX), Millis::ZERO)
    };
    tracing::info!(%worker, %job, %token, attempt = lease.attempt, "claimed");
    observe(RuntimeEvent::Claimed {
        worker: worker.clone(),
        job,
        token,
        at: rt.now(),
        believe_until: fence.poll_deadline(),
    });

    let (stop_tx, stop) = StopSignal::new();
    let handler = ctx.handler.clone();
    let mut work = Box::pin(async move { handler.handle(lease, stop).await });
    let mut next_renew = if quirks.heartbeat {
        t_send.saturating_add(cfg.renew_interval)
    } else {
        Millis(u64::MAX)
    };
    let mut in_flight: Option<(Millis, RenewFuture)> = None;
    let mut soft: Option<(StopReason, Millis)> = None;
    let mut shutdown_seen = shutdown.is_requested();
    let mut renews = 0u64;

    let finished = loop {
        let now = rt.now();
        if fence.is_expired(now) {
            let _ = stop_tx.send(Some(StopReason::Fenced));
            tracing::warn!(%worker, %job, %token, "self-fenced: no renew succeeded in time");
            break Err(BeliefEnd::Fenced);
        }
        if shutdown_seen && soft.is_none() {
            let _ = stop_tx.send(Some(StopReason::Shutdown));
            soft = Some((StopReason::Shutdown, now.saturating_add(cfg.grace)));
        }
        if let Some((reason, until)) = soft {
            if now >= until {
                break Ok(match reason {
                    StopReason::Cancel => (Outcome::Cancelled, BeliefEnd::CancelTimeout),
                    _ => (Outcome::Returned, BeliefEnd::ShutdownTimeout),
                });
            }
        }
        if in_flight.is_none() && now >= next_renew {
            if renews >= MAX_RENEWS_PER_LEASE {
                tracing::error!(%worker, %job, %token, "renew bound reached; letting the lease go");
                let _ = stop_tx.send(Some(StopReason::Fenced));
                break Err(BeliefEnd::Fenced);
            }
            renews += 1;
            in_flight = Some((now, send_renew(&ctx, job, token)));
        }
        let mut wake = fence.poll_deadline();
        if in_flight.is_none() {
            wake = wake.min(next_renew);
        }
        if let Some((_, until)) = soft {
            wake = wake.min(until);
        }
        let nap = rt.sleep(wake.saturating_sub(now).clamp(Millis(1), MAX_NAP));
        tokio::select! {
            biased;
            _ = nap => {}
            answer = async { in_flight.as_mut().map(|(_, f)| f.as_mut()).expect("guarded").await },
                if in_flight.is_some() =>
            {
                let sent = in_flight.take().map(|(t, _)| t).unwrap_or(now);
                if answer.is_ok() {
                    metrics::record_renew_rtt(rt.now().saturating_sub(sent));
                }
                match answer {
                    Ok(Renewal::Renewed { cancel_requested, expires_at }) => {
                        if quirks.wall_deadline {
                            fence = wall_fence(rt, expires_at);
                        } else if quirks.fence {
                            fence.handle_renewed(sent);
                        }
                        next_renew = sent.saturating_add(cfg.renew_interval);
                        tracing::debug!(%worker, %job, %token, "renewed");
                        observe(RuntimeEvent::Renewed {
                            worker: worker.clone(),
                            job,
                            token,
                            at: rt.now(),
                            believe_until: fence.poll_deadline(),
                        });
                        if cancel_requested && soft.is_none() {
                            let _ = stop_tx.send(Some(StopReason::Cancel));
                            soft = Some((StopReason::Cancel, rt.now().saturating_add(cfg.grace)));
                        }
                    }
                    Ok(Renewal::Lost) if !quirks.stop_on_loss => {
                        tracing::warn!(%worker, %job, %token, "lease lost; handler keeps running (buggy variant)");
                        next_renew = Millis(u64::MAX);
                    }
                    Ok(Renewal::Lost) => {
                        let _ = stop_tx.send(Some(StopReason::Lost));
                        tracing::warn!(%worker, %job, %token, "lease lost");
                        break Err(BeliefEnd::Lost);
                    }
                    Err(e) if worth_retrying(&e, quirks.retry_conflicts) => {
                        // Unknown outcome, or a conflict (nothing applied):
                        // keep heartbeating; the fence decides.
                        tracing::debug!(%worker, %job, %token, error = %e, "renew not applied or outcome unknown");
                        observe(RuntimeEvent::RenewUnavailable { worker: worker.clone(), job, token, at: rt.now() });
                        next_renew = if quirks.heartbeat_survives_errors {
                            renew_retry_at(rt.now(), fence.poll_deadline(), cfg.renew_interval)
                        } else {
                            Millis(u64::MAX)
                        };
                    }
                    Err(e) => {
                        let _ = stop_tx.send(Some(StopReason::Lost));
                        tracing::error!(%worker, %job, %token, error = %e, "renew rejected");
                        break Err(BeliefEnd::Lost);
                    }
                }
            }
            _ = shutdown.wait(), if !shutdown_seen => shutdown_seen = true,
            // The fence is checked again before every poll of the handler,
            // not only at the top of the loop: after the process is paused
            // past the deadline, the handler's own wake-up may be polled
            // before the nap's timer has fired (nothing orders two timers
            // that expired together, and on a multi-threaded runtime the
            // task can run while the timer driver is still firing them).
            // A handler step then would run on a lease the worker no longer
            // holds (a chaos finding: one more side effect after a pause).
            result = std::future::poll_fn(|cx| {
                if fence.is_expired(rt.now()) {
                    return std::task::Poll::Ready(None);
                }
                std::future::Future::poll(work.as_mut(), cx).map(Some)
            }) => {
                // `None`: the deadline passed; the loop's check fences.
                if let Some(result) = result {
                    break Ok((outcome_of(result, soft.map(|s| s.0)), BeliefEnd::HandlerDone));
                }
            }
        }
    };
    drop(work);

    let (outcome, why) = match finished {
        Ok(done) => done,
        Err(why) => {
            end_belief(why);
            return LeaseEnd::Abandoned(why);
        }
    };
    end_belief(why);
    let release = release_with_retries(
        &ctx,
        &releases,
        job,
        token,
        outcome.clone(),
        quirks.retry_conflicts,
    );
    let heartbeat = Heartbeat {
        next_renew: if quirks.renew_while_releasing {
            next_renew
        } else {
            Millis(u64::MAX)
        },
        in_flight: in_flight.filter(|_| quirks.renew_while_releasing),
        renews,
        fence,
        survives_errors: quirks.heartbeat_survives_errors,
        retry_conflicts: quirks.retry_conflicts,
    }
    .run(&ctx, job, token);
    let mut release = std::pin::pin!(release);
    let answer = tokio::select! {
        biased;
        answer = &mut release => answer,
        // The heartbeat stopped (lost, rejected, bounded): the release
        // goes on alone.
        () = heartbeat => release.await,
    };
    tracing::info!(%worker, %job, %token, outcome = outcome.kind(), ?answer, "released");
    observe(RuntimeEvent::Released {
        worker: worker.clone(),
        job,
        token,
        at: rt.now(),
        outcome: outcome.kind(),
        answer,
    });
    LeaseEnd::Released(answer)
}

/// Sends one renew of the lease, bounded by the request timeout.
fn send_renew<S: Store, H, R: Runtime>(
    ctx: &LeaseCtx<S, H, R>,
    job: crate::ids::JobId,
    token: crate::ids::Token,
) -> RenewFuture {
    let (store, rt, limit) = (ctx.store.clone(), ctx.rt.clone(), ctx.cfg.request_timeout);
    let req = RenewRequest {
        job,
        token,
        lease: ctx.cfg.lease,
    };
    Box::pin(async move { with_timeout(&rt, limit, store.renew(req)).await })
}

/// Whether a renew or release that failed with `e` is sent again: its
/// outcome is unknown, or it was a conflict (nothing applied) and
/// conflicts are retried (all but one catalogue variant).
fn worth_retrying(e: &StoreError, retry_conflicts: bool) -> bool {
    e.is_unknown_outcome() || (e.is_transient() && retry_conflicts)
}

/// The heartbeat of a lease whose handler is done, while its release is
/// retried (see the module docs). It picks up where the lease's loop left
/// off: its next renew time, the renew in flight, the renew count.
struct Heartbeat {
    next_renew: Millis,
    in_flight: Option<(Millis, RenewFuture)>,
    renews: u64,
    fence: Fence,
    survives_errors: bool,
    retry_conflicts: bool,
}

impl Heartbeat {
    /// Renews until a renew is answered `Lost` or rejected, an error stops
    /// a heartbeat that does not survive errors, the fence deadline passes
    /// with no renew through, or the renew bound is reached; the caller
    /// drops it once the release is answered.
    async fn run<S: Store, H, R: Runtime>(
        mut self,
        ctx: &LeaseCtx<S, H, R>,
        job: crate::ids::JobId,
        token: crate::ids::Token,
    ) {
        let (cfg, rt) = (&ctx.cfg, &ctx.rt);
        // Bounded: every pass sends or awaits one renew, at most
        // MAX_RENEWS_PER_LEASE in all.
        loop {
            let (sent, renew) = match self.in_flight.take() {
                Some(r) => r,
                None => {
                    let now = rt.now();
                    // Past the fence no renew got through in time: the
                    // store may have let the lease go, as the lease's own
                    // loop would have concluded.
                    if self.next_renew == Millis(u64::MAX)
                        || self.renews >= MAX_RENEWS_PER_LEASE
                        || self.fence.is_expired(now)
                    {
                        return;
                    }
                    if now < self.next_renew {
                        rt.sleep(self.next_renew.saturating_sub(now).min(MAX_NAP))
                            .await;
                        continue;
                    }
                    self.renews += 1;
                    (now, send_renew(ctx, job, token))
                }
            };
            match renew.await {
                Ok(Renewal::Renewed { .. }) => {
                    self.fence.handle_renewed(sent);
                    self.next_renew = sent.saturating_add(cfg.renew_interval);
                    tracing::debug!(%job, %token, "renewed while releasing");
                }
                Err(e) if self.survives_errors && worth_retrying(&e, self.retry_conflicts) => {
                    self.next_renew =
                        renew_retry_at(rt.now(), self.fence.poll_deadline(), cfg.renew_interval);
                }
                Ok(Renewal::Lost) | Err(_) => return,
            }
        }
    }
}

async fn release_with_retries<S: Store, H, R: Runtime>(
    ctx: &LeaseCtx<S, H, R>,
    releases: &ReleaseSender,
    job: crate::ids::JobId,
    token: crate::ids::Token,
    outcome: Outcome,
    retry_conflicts: bool,
) -> Option<Release> {
    let cfg = &ctx.cfg;
    let mut delay = cfg.release_retry_delay;
    for attempt in 1..=cfg.release_tries {
        let req = ReleaseRequest {
            job,
            token,
            outcome: outcome.clone(),
        };
        let try_once = async {
            match submit(releases, req.clone()).await {
                Some(answer) => answer,
                // The worker's loop has stopped taking releases.
                None => ctx.store.release(req).await,
            }
        };
        match with_timeout(&ctx.rt, cfg.request_timeout, try_once).await {
            Ok(answer) => return Some(answer),
            // A conflict applied nothing and an unknown outcome may have:
            // the release is idempotent, so both are sent again.
            Err(e) if worth_retrying(&e, retry_conflicts) => {
                tracing::debug!(%job, %token, attempt, error = %e, "release not applied or outcome unknown; retrying");
            }
            Err(e) => {
                tracing::error!(%job, %token, error = %e, "release rejected");
                return None;
            }
        }
        if attempt < cfg.release_tries {
            ctx.rt.sleep(delay).await;
            delay = Millis(delay.0.saturating_mul(2)).min(cfg.renew_interval);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_far_deadline_retries_after_half_the_interval() {
        assert_eq!(
            renew_retry_at(Millis(1_000), Millis(20_000), Millis(3_000)),
            Millis(2_500)
        );
    }

    #[test]
    fn a_near_deadline_retries_halfway_to_it_but_not_sooner_than_the_floor() {
        // The simulator's case: 1.5 s left, interval 3 s: retry at 0.75 s,
        // not at 1.5 s (a moment before the fence).
        assert_eq!(
            renew_retry_at(Millis(80_630), Millis(82_125), Millis(3_000)),
            Millis(80_630 + 747)
        );
        assert_eq!(
            renew_retry_at(Millis(10_000), Millis(10_050), Millis(3_000)),
            Millis(10_000).saturating_add(MIN_RENEW_RETRY)
        );
        assert_eq!(
            renew_retry_at(Millis(10_000), Millis(9_000), Millis(3_000)),
            Millis(10_000).saturating_add(MIN_RENEW_RETRY)
        );
    }
}
