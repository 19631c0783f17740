//! The job handler: a typed payload in, result bytes out.
//!
//! CHAOS ONLY (a production handler has neither): every side effect is
//! appended to the process's side-effect log under the identity of the
//! `Worker` running the handler, and `--planted-bug` runs a deliberately
//! broken variant for the checks to catch.

use leasehold_chaos::effects::{EffectLog, Phase};
use leasehold_chaos::job::{ChaosJob, PlantedBug};
use leasehold_core::{Handler, HandlerError, Lease, StopReason, StopSignal};
use std::sync::Arc;
use std::time::Duration;

/// Runs [`ChaosJob`]s for one `Worker`.
pub struct ChaosHandler {
    log: Option<Arc<EffectLog>>,
    /// The Worker identity its side effects are recorded under.
    recorded_as: Arc<str>,
    bug: Option<PlantedBug>,
}

impl ChaosHandler {
    /// The handler of Worker `workers[index]`, logging side effects to
    /// `log` (the process's, shared by its Workers) if given.
    pub fn new(
        workers: &[String],
        index: usize,
        log: Option<Arc<EffectLog>>,
        bug: Option<PlantedBug>,
    ) -> Self {
        let recorded_as = match bug {
            // PLANTED BUG: effects recorded as the next Worker's (see
            // `PlantedBug::WrongWorker`).
            Some(PlantedBug::WrongWorker) => &workers[(index + 1) % workers.len()],
            _ => &workers[index],
        };
        ChaosHandler {
            log,
            recorded_as: recorded_as.as_str().into(),
            bug,
        }
    }
}

impl Handler for ChaosHandler {
    async fn handle(&self, lease: Lease, stop: StopSignal) -> Result<Vec<u8>, HandlerError> {
        // A payload that does not decode is poison: the job fails at once
        // (non-retryable) instead of coming back forever.
        let job = ChaosJob::from_payload(&lease.payload).map_err(HandlerError::poison)?;
        let effects = Effects {
            log: self.log.clone(),
            worker: self.recorded_as.clone(),
            job: lease.job.0,
            token: lease.token.0,
            attempt: lease.attempt,
        };
        match self.bug {
            None | Some(PlantedBug::WrongWorker) => work(job, effects, Some(stop)).await,
            // PLANTED BUG: the work runs in a detached task. When the lease
            // is lost or the worker self-fences, the runtime drops the
            // handler's future, but dropping a JoinHandle does not stop the
            // task: its side effects go on after the lease is gone.
            Some(PlantedBug::DetachedHandler) => tokio::spawn(work(job, effects, None))
                .await
                .map_err(|e| HandlerError::retryable(format!("work task failed: {e}")))?,
        }
    }
}

/// Where one lease's side effects go.
struct Effects {
    log: Option<Arc<EffectLog>>,
    worker: Arc<str>,
    job: u64,
    token: u64,
    attempt: u32,
}

impl Effects {
    fn record(&self, phase: Phase) -> Result<(), HandlerError> {
        match &self.log {
            Some(log) => log
                .record(&self.worker, self.job, self.token, self.attempt, phase)
                .map_err(|e| HandlerError::retryable(format!("side-effect log: {e}"))),
            None => Ok(()),
        }
    }
}

/// The work: `steps` side effects over `work_ms`; the first
/// `fail_attempts` attempts fail on purpose. A cooperative stop (shutdown,
/// cancel) between steps ends it early with an error, which returns the
/// job (shutdown) or acknowledges the cancel.
async fn work(
    job: ChaosJob,
    effects: Effects,
    mut stop: Option<StopSignal>,
) -> Result<Vec<u8>, HandlerError> {
    effects.record(Phase::Start)?;
    if effects.attempt <= job.fail_attempts {
        effects.record(Phase::Failed)?;
        return Err(HandlerError::retryable(format!(
            "planned failure of attempt {}",
            effects.attempt
        )));
    }
    let step = Duration::from_millis(u64::from(job.work_ms / job.steps.max(1)));
    for _ in 0..job.steps {
        match stop.as_mut() {
            Some(stop) => tokio::select! {
                reason = stop.stopped() => return Err(stopped(reason)),
                _ = tokio::time::sleep(step) => {}
            },
            None => tokio::time::sleep(step).await,
        }
        effects.record(Phase::Step)?;
    }
    effects.record(Phase::End)?;
    Ok(job.expected_result())
}

fn stopped(reason: StopReason) -> HandlerError {
    HandlerError::retryable(format!("stopped: {reason:?}"))
}
