//! Runs one lease: drives its [`LeaseMachine`] with this host's clock and
//! the store, polls the handler, and sends the release.
//!
//! Every decision (when to renew, when an answer moves the fence, when to
//! stop the handler, when to retry a release) is the machine's
//! ([`super::lease_machine`], [`super::release_retries`]); this task only
//! reads the clock, sleeps, sends and polls, in that order. Invariants:
//! - the handler's future is polled only while the worker believes it holds
//!   the lease: the fence deadline is checked before every poll, and a lost
//!   or fenced lease drops the future;
//! - releases go through the worker's release queue
//!   ([`super::release_queue`]), answered per lease (renews are never
//!   batched);
//! - the heartbeat goes on while the release is retried, until the release
//!   has an answer or gives up: a release slowed by store errors (requests
//!   cancelled, answers lost) must not let the lease lapse and be reported
//!   as a crash (I5; a simulator finding with cancelled batches);
//! - the release is not given up on a transient answer while that
//!   heartbeat runs (the task tells the retry machine whether it does): ten
//!   conflicts in a row once gave up a renewed lease, which was swept and
//!   its job run again (a false-alarm sweep finding).

use super::config::WorkerConfig;
use super::handler::{Handler, StopSignal};
use super::lease_machine::{Ended, HeartbeatPoll, LeaseMachine, Renewed};
use super::metrics;
use super::observer::{BeliefEnd, Observer, RuntimeEvent};
use super::release_queue::{submit, ReleaseSender};
use super::release_retries::{ReleaseRetries, ReleaseStep};
use super::shutdown::Shutdown;
use super::timeout::with_timeout;
use crate::clock::{BoxFuture, Runtime};
use crate::error::StoreError;
use crate::job::{Lease, Outcome, Release, Renewal};
use crate::store::{ReleaseRequest, RenewRequest, Store};
use crate::time::Millis;
use std::sync::atomic::{AtomicBool, Ordering};
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

    let mut m = LeaseMachine::new(cfg, t_send, rt.now(), rt.wall(), lease.expires_at);
    tracing::info!(%worker, %job, %token, attempt = lease.attempt, "claimed");
    observe(RuntimeEvent::Claimed {
        worker: worker.clone(),
        job,
        token,
        at: rt.now(),
        believe_until: m.believe_until(),
    });

    let (stop_tx, stop) = StopSignal::new();
    let handler = ctx.handler.clone();
    let mut work = Box::pin(async move { handler.handle(lease, stop).await });
    // The renew the machine has in flight (`m.renew_sent()` is its send
    // time).
    let mut in_flight: Option<RenewFuture> = None;
    if shutdown.is_requested() {
        m.on_shutdown();
    }

    // Ok: the outcome to release; Err: nothing is released.
    let finished: Result<(Outcome, BeliefEnd), Ended> = loop {
        let now = rt.now();
        let step = m.poll(now);
        if let Some(reason) = step.signal {
            let _ = stop_tx.send(Some(reason));
        }
        if let Some(end) = step.end {
            if let Some(reason) = end.stop_reason() {
                let _ = stop_tx.send(Some(reason));
            }
            match end {
                Ended::RenewBound => {
                    tracing::error!(%worker, %job, %token, "renew bound reached; letting the lease go")
                }
                Ended::Abandoned(_) => {
                    tracing::warn!(%worker, %job, %token, "self-fenced: no renew succeeded in time")
                }
                Ended::GraceOut(_) => {}
            }
            break match end.released() {
                Some(outcome) => Ok((outcome, end.belief_end())),
                None => Err(end),
            };
        }
        if step.send_renew {
            in_flight = Some(send_renew(&ctx, job, token));
        }
        // A deadline on the clock, not a wait from `now`: see
        // `Runtime::sleep_until` (a renew owed at `wake` is sent then).
        let wake = step
            .wake
            .clamp(now.saturating_add(Millis(1)), now.saturating_add(MAX_NAP));
        let nap = rt.sleep_until(wake);
        tokio::select! {
            biased;
            _ = nap => {}
            answer = async { in_flight.as_mut().expect("guarded").await },
                if in_flight.is_some() =>
            {
                in_flight = None;
                let sent = m.renew_sent().unwrap_or(now);
                if answer.is_ok() {
                    metrics::record_renew_rtt(rt.now().saturating_sub(sent));
                }
                match m.on_renew_answer(rt.now(), rt.wall(), &answer) {
                    Renewed::Extended { believe_until, cancel } => {
                        tracing::debug!(%worker, %job, %token, "renewed");
                        observe(RuntimeEvent::Renewed {
                            worker: worker.clone(),
                            job,
                            token,
                            at: rt.now(),
                            believe_until,
                        });
                        if cancel {
                            let _ = stop_tx.send(Some(super::handler::StopReason::Cancel));
                        }
                    }
                    Renewed::LostIgnored => {
                        tracing::warn!(%worker, %job, %token, "lease lost; handler keeps running (buggy variant)");
                    }
                    Renewed::Unavailable => {
                        // Unknown outcome, or a conflict (nothing applied):
                        // keep heartbeating; the fence decides.
                        tracing::debug!(%worker, %job, %token, ?answer, "renew not applied or outcome unknown");
                        observe(RuntimeEvent::RenewUnavailable { worker: worker.clone(), job, token, at: rt.now() });
                    }
                    Renewed::Ended(end) => {
                        if let Some(reason) = end.stop_reason() {
                            let _ = stop_tx.send(Some(reason));
                        }
                        tracing::warn!(%worker, %job, %token, ?answer, "lease lost or renew rejected");
                        break Err(end);
                    }
                }
            }
            _ = shutdown.wait(), if !m.shutdown_seen() => m.on_shutdown(),
            // The fence is checked again before every poll of the handler,
            // not only at the top of the loop: after the process is paused
            // past the deadline, the handler's own wake-up may be polled
            // before the nap's timer has fired (nothing orders two timers
            // that expired together, and on a multi-threaded runtime the
            // task can run while the timer driver is still firing them).
            // A handler step then would run on a lease the worker no longer
            // holds (a chaos finding: one more side effect after a pause).
            result = std::future::poll_fn(|cx| {
                if m.is_fenced(rt.now()) {
                    return std::task::Poll::Ready(None);
                }
                std::future::Future::poll(work.as_mut(), cx).map(Some)
            }) => {
                // `None`: the deadline passed; the machine's poll fences.
                if let Some(result) = result {
                    break Ok((m.on_handler_done(result), BeliefEnd::HandlerDone));
                }
            }
        }
    };
    drop(work);

    let (outcome, why) = match finished {
        Ok(done) => done,
        Err(end) => {
            let why = end.belief_end();
            end_belief(why);
            return LeaseEnd::Abandoned(why);
        }
    };
    end_belief(why);
    // Whether the heartbeat still keeps the lease; both futures run in this
    // task, so the order of its writes and reads is the select's.
    let kept = AtomicBool::new(true);
    let release = release_with_retries(&ctx, &releases, job, token, outcome.clone(), &kept);
    if !m.start_releasing() {
        in_flight = None;
    }
    let heartbeat = async {
        heartbeat_while_releasing(&ctx, &mut m, in_flight, job, token).await;
        kept.store(false, Ordering::Relaxed);
    };
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

/// The heartbeat of a lease whose handler is done, while its release is
/// retried (see the module docs): the machine's releasing phase, from the
/// renew in flight (if any). Returns when the machine stops it; the caller
/// drops it once the release is answered.
async fn heartbeat_while_releasing<S: Store, H, R: Runtime>(
    ctx: &LeaseCtx<S, H, R>,
    m: &mut LeaseMachine,
    mut in_flight: Option<RenewFuture>,
    job: crate::ids::JobId,
    token: crate::ids::Token,
) {
    let rt = &ctx.rt;
    // Bounded: every pass sends or awaits one renew, at most
    // MAX_RENEWS_PER_LEASE in all (the machine counts them).
    loop {
        let renew = match in_flight.take() {
            Some(r) => r,
            None => {
                let now = rt.now();
                match m.heartbeat_poll(now) {
                    HeartbeatPoll::Stop => return,
                    HeartbeatPoll::SleepUntil(at) => {
                        rt.sleep_until(at.min(now.saturating_add(MAX_NAP))).await;
                        continue;
                    }
                    HeartbeatPoll::SendRenew => send_renew(ctx, job, token),
                }
            }
        };
        let answer = renew.await;
        if !m.heartbeat_answer(rt.now(), &answer) {
            return;
        }
        tracing::debug!(%job, %token, ?answer, "renew while releasing");
    }
}

async fn release_with_retries<S: Store, H, R: Runtime>(
    ctx: &LeaseCtx<S, H, R>,
    releases: &ReleaseSender,
    job: crate::ids::JobId,
    token: crate::ids::Token,
    outcome: Outcome,
    kept: &AtomicBool,
) -> Option<Release> {
    let cfg = &ctx.cfg;
    let mut tries = ReleaseRetries::new(cfg);
    // Bounded: the machine gives up after `release_tries` tries once the
    // heartbeat has stopped, and the heartbeat is bounded by its renews.
    loop {
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
        let answer = with_timeout(&ctx.rt, cfg.request_timeout, try_once).await;
        let attempt = tries.attempt();
        match tries.on_answer(&answer, kept.load(Ordering::Relaxed)) {
            ReleaseStep::Answered(a) => return Some(a),
            // A conflict applied nothing and an unknown outcome may have:
            // the release is idempotent, so both are sent again.
            ReleaseStep::RetryAfter(wait) => {
                tracing::debug!(%job, %token, attempt, ?answer, "release not applied or outcome unknown; retrying");
                ctx.rt.sleep(wait).await;
            }
            ReleaseStep::GiveUp => {
                tracing::debug!(%job, %token, attempt, ?answer, "release outcome unknown and the lease no longer kept; giving up");
                return None;
            }
            ReleaseStep::Rejected => {
                tracing::error!(%job, %token, ?answer, "release rejected");
                return None;
            }
        }
    }
}
