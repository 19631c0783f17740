//! One handler execution's phases as history records: `Start`, then `Done`
//! when it finished, or `Dropped` when the worker dropped it first (a hard
//! stop), the same in every simulator that runs the real `Worker`.

use super::{HandlerPhase, Record};
use leasehold_core::{JobId, Token, WorkerId};

/// Where a host's handler records go.
pub trait HandlerSink {
    /// The true time now.
    fn now(&self) -> u64;
    /// The host's name.
    fn host(&self) -> String;
    /// Appends `r` to the history.
    fn record(&self, r: Record);
    /// Whether the host is being killed: a drop then is the crash, which is
    /// the ground truth already, and is not recorded as a hard stop.
    fn crashing(&self) -> bool {
        false
    }
}

/// A running handler execution: records its end, or its drop.
pub struct Execution<S: HandlerSink> {
    sink: S,
    worker: WorkerId,
    job: JobId,
    token: Token,
    done: bool,
}

impl<S: HandlerSink> Execution<S> {
    /// Records the start of `worker`'s execution of `job` under `token`.
    pub fn start(sink: S, worker: WorkerId, job: JobId, token: Token) -> Self {
        let e = Execution {
            sink,
            worker,
            job,
            token,
            done: false,
        };
        e.record(HandlerPhase::Start);
        e
    }

    /// Records `phase` of this execution.
    pub fn record(&self, phase: HandlerPhase) {
        self.sink.record(Record::Handler {
            t: self.sink.now(),
            host: self.sink.host(),
            worker: self.worker.clone(),
            job: self.job,
            token: self.token,
            phase,
        });
    }

    /// Records that the execution finished, successfully or not.
    pub fn finish(mut self, ok: bool) {
        self.done = true;
        self.record(HandlerPhase::Done { ok });
    }
}

impl<S: HandlerSink> Drop for Execution<S> {
    fn drop(&mut self) {
        if !self.done && !self.sink.crashing() {
            self.record(HandlerPhase::Dropped);
        }
    }
}
