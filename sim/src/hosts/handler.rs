//! The simulated job handler, driven by the workload, recording the ground
//! truth of its own execution in true time.

use super::runtime::{sleep_until_true, true_now_ms, HostRuntime};
use super::workload::{AttemptKind, WorkloadPlan};
use crate::history::{HandlerPhase, Record};
use leasehold_core::{
    Handler, HandlerError, JobId, Lease, Millis, Runtime, StopSignal, Token, WorkerId,
};
use std::future::Future;

/// Runs jobs as the workload says, on one worker host.
#[derive(Clone)]
pub struct SimHandler {
    rt: HostRuntime,
    worker: WorkerId,
}

/// Records the end of an execution; if dropped first, records the drop (a
/// hard stop), except when the host is being killed (its crash is the
/// ground truth then).
struct Execution {
    rt: HostRuntime,
    worker: WorkerId,
    job: JobId,
    token: Token,
    done: bool,
}

impl Execution {
    fn record(&self, phase: HandlerPhase) {
        self.rt.shared().record(Record::Handler {
            t: true_now_ms(),
            host: self.rt.host().to_string(),
            worker: self.worker.clone(),
            job: self.job,
            token: self.token,
            phase,
        });
    }

    fn finish(mut self, ok: bool) {
        self.done = true;
        self.record(HandlerPhase::Done { ok });
    }
}

impl Drop for Execution {
    fn drop(&mut self) {
        if !self.done && !self.rt.shared().is_crashing() {
            self.record(HandlerPhase::Dropped);
        }
    }
}

impl SimHandler {
    /// A handler for `worker` on the host of `rt`.
    pub fn new(rt: HostRuntime, worker: WorkerId) -> Self {
        SimHandler { rt, worker }
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
            let exec = Execution {
                rt: this.rt.clone(),
                worker: this.worker.clone(),
                job: lease.job,
                token: lease.token,
                done: false,
            };
            exec.record(HandlerPhase::Start);
            let shared = this.rt.shared().clone();
            let Some(index) = WorkloadPlan::decode(&lease.payload) else {
                exec.finish(false);
                return Err(HandlerError::poison(format!(
                    "cannot decode {} bytes",
                    lease.payload.len()
                )));
            };
            let plan = shared.workload.attempt(index, lease.token.0);
            let hang = plan.kind == AttemptKind::Hang && true_now_ms() < shared.window_ms;
            let outcome = if hang {
                // A hang is a fault: it lasts until the handler is stopped or
                // until the faults heal, whichever comes first.
                tokio::select! {
                    biased;
                    why = stop.stopped() => Err(HandlerError::retryable(format!("hung, stopped: {why:?}"))),
                    _ = sleep_until_true(shared.heal_ms) => Err(HandlerError::retryable("hung until the faults healed")),
                }
            } else {
                let run = this.rt.sleep(Millis(plan.run_ms));
                tokio::select! {
                    biased;
                    why = stop.stopped() => Err(HandlerError::retryable(format!("stopped: {why:?}"))),
                    _ = run => match plan.kind {
                        AttemptKind::Fail { retryable: true } => Err(HandlerError::retryable("simulated failure")),
                        AttemptKind::Fail { retryable: false } => Err(HandlerError::permanent("simulated permanent failure")),
                        _ => Ok(WorkloadPlan::result_of(lease.job.0, lease.token.0)),
                    },
                }
            };
            exec.finish(outcome.is_ok());
            outcome
        }
    }
}
