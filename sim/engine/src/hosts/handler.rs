//! The simulated job handler, driven by the workload, recording the ground
//! truth of its own execution in true time.
//!
//! ## Graceful shutdown in a deterministic order
//! A worker's graceful shutdown raises the core's `Shutdown`, a tokio
//! `watch` channel that every lease task of the worker waits on. tokio parks
//! each waiter of a `watch` on one of 8 notifiers chosen by its thread-local
//! generator, which the simulator cannot seed (see [`crate::machine::runtime`]), so
//! the lease tasks wake in an order that differs from process to process.
//! Waking does nothing observable by itself (the lease task only forwards
//! the stop to its handler); what is observable is the handler returning and
//! the release that follows. So a handler stopped for a shutdown does not
//! return at once: it registers, and one task, which runs once every task
//! ready at that instant has run (each lease task is then idle), lets the
//! registered handlers return in `(job, token)` order, each through its own
//! one-waiter channel, in the same instant. Stops for
//! any other reason (lost, fenced, cancel) are unchanged: each comes from a
//! lease task's own event, at a deterministic point.

use crate::machine::runtime::{sleep_until_true, true_now_ms, HostRuntime};
use leasehold_core::{
    Handler, HandlerError, JobId, Lease, Millis, Runtime, StopReason, StopSignal, Token, WorkerId,
};
use leasehold_model::history::{Execution, HandlerSink, Record};
use leasehold_model::workload::{AttemptKind, WorkloadPlan};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// Handlers stopped for a graceful shutdown, waiting for their turn to
/// return, by `(job, token)`; `armed` while a task that lets them go is
/// scheduled.
#[derive(Default)]
struct ShutdownTurns {
    waiting: BTreeMap<(JobId, Token), oneshot::Sender<()>>,
    armed: bool,
}

/// What a handler reads of the run: the workload it plays, and when the
/// faults end (a hang is a fault).
#[derive(Clone, Debug)]
pub struct HandlerSettings {
    /// The workload (each attempt's kind, run time, result and error).
    pub workload: Arc<WorkloadPlan>,
    /// Attempts hang only before this true time (the fault window).
    pub window_ms: u64,
    /// A hung attempt ends by this true time (every fault has healed).
    pub heal_ms: u64,
    /// How long a schedule's job runs: the workload's shortest run time.
    pub schedule_run_ms: u64,
}

/// Runs jobs as the workload says, on one worker host.
#[derive(Clone)]
pub struct SimHandler {
    rt: HostRuntime,
    settings: Arc<HandlerSettings>,
    worker: WorkerId,
    turns: Arc<Mutex<ShutdownTurns>>,
}

/// A worker host's handler records: true time, and no hard stop recorded
/// while the host is being killed (its crash is the ground truth then).
impl HandlerSink for HostRuntime {
    fn now(&self) -> u64 {
        true_now_ms()
    }
    fn host(&self) -> String {
        HostRuntime::host(self).to_string()
    }
    fn record(&self, r: Record) {
        self.recorder().record(r);
    }
    fn crashing(&self) -> bool {
        self.recorder().is_crashing()
    }
}

impl SimHandler {
    /// A handler for `worker` on the host of `rt`.
    pub fn new(rt: HostRuntime, settings: Arc<HandlerSettings>, worker: WorkerId) -> Self {
        SimHandler {
            rt,
            settings,
            worker,
            turns: Arc::default(),
        }
    }

    /// A handler for another worker of the same process: it shares this
    /// one's shutdown turns, so the handlers of every worker of the process
    /// return in one `(job, token)` order after a graceful shutdown.
    pub fn for_worker(&self, worker: WorkerId) -> Self {
        SimHandler {
            rt: self.rt.clone(),
            settings: self.settings.clone(),
            worker,
            turns: self.turns.clone(),
        }
    }

    /// Waits until this handler, stopped for a shutdown, may return: after
    /// every handler of a smaller `(job, token)` stopped at the same instant.
    async fn shutdown_turn(&self, job: JobId, token: Token) {
        let (tx, rx) = oneshot::channel();
        let spawn = {
            let mut t = self.turns.lock().unwrap_or_else(|p| p.into_inner());
            t.waiting.insert((job, token), tx);
            !std::mem::replace(&mut t.armed, true)
        };
        if spawn {
            // Spawned behind every lease task the shutdown woke at this
            // instant, so each has registered when it runs; it then yields
            // until the scheduler has run out of ready tasks (each lease
            // task woke itself again forwarding the stop), so every
            // registered task is idle, and wakes them in key order.
            let turns = self.turns.clone();
            self.rt.spawn(Box::pin(async move {
                tokio::task::yield_now().await;
                let due = {
                    let mut t = turns.lock().unwrap_or_else(|p| p.into_inner());
                    t.armed = false;
                    std::mem::take(&mut t.waiting)
                };
                for (_, tx) in due {
                    let _ = tx.send(());
                }
            }));
        }
        let _ = rx.await;
    }

    /// The error of a handler stopped for `why`, after its turn if the stop
    /// is a shutdown.
    async fn stopped(&self, lease: &Lease, why: StopReason, hung: bool) -> HandlerError {
        if why == StopReason::Shutdown {
            self.shutdown_turn(lease.job, lease.token).await;
        }
        if hung {
            HandlerError::retryable(format!("hung, stopped: {why:?}"))
        } else {
            HandlerError::retryable(format!("stopped: {why:?}"))
        }
    }
}

impl Handler for SimHandler {
    fn handle(
        &self,
        lease: Lease,
        mut stop: StopSignal,
    ) -> impl Future<Output = Result<Vec<u8>, HandlerError>> + Send {
        let this = self.clone();
        async move {
            let exec =
                Execution::start(this.rt.clone(), this.worker.clone(), lease.job, lease.token);
            let s = this.settings.clone();
            // A schedule's job (`sched:<name>`) runs for the shortest run
            // time and succeeds: I12 judges that it exists, not what it does.
            if lease
                .payload
                .starts_with(leasehold_model::schedules::PAYLOAD_PREFIX.as_bytes())
            {
                let run = this.rt.sleep(Millis(s.schedule_run_ms));
                let outcome = tokio::select! {
                    biased;
                    why = stop.stopped() => Err(this.stopped(&lease, why, false).await),
                    _ = run => Ok(s.workload.result(lease.job.0, lease.token.0)),
                };
                exec.finish(outcome.is_ok());
                return outcome;
            }
            let Some(index) = WorkloadPlan::decode(&lease.payload) else {
                exec.finish(false);
                return Err(HandlerError::poison(format!(
                    "cannot decode {} bytes",
                    lease.payload.len()
                )));
            };
            let plan = s.workload.attempt(index, lease.token.0);
            let hang = plan.kind == AttemptKind::Hang && true_now_ms() < s.window_ms;
            let outcome = if hang {
                // A hang is a fault: it lasts until the handler is stopped or
                // until the faults heal, whichever comes first.
                tokio::select! {
                    biased;
                    why = stop.stopped() => Err(this.stopped(&lease, why, true).await),
                    _ = sleep_until_true(s.heal_ms) => Err(HandlerError::retryable("hung until the faults healed")),
                }
            } else {
                let run = this.rt.sleep(Millis(plan.run_ms));
                tokio::select! {
                    biased;
                    why = stop.stopped() => Err(this.stopped(&lease, why, false).await),
                    _ = run => match plan.kind {
                        AttemptKind::Fail { retryable } => Err(HandlerError {
                            message: s.workload.error_of(index, lease.token.0, retryable),
                            retryable,
                        }),
                        _ => Ok(s.workload.result(lease.job.0, lease.token.0)),
                    },
                }
            };
            exec.finish(outcome.is_ok());
            outcome
        }
    }
}
