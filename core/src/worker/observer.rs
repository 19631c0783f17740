//! What the worker runtime reports about its beliefs and requests.
//!
//! Every event carries the host's local monotonic time. The simulator maps it
//! to true time to check exclusive belief (I3); production code may log it.
//! A worker believes it holds lease (job, token) from its `Claimed` event
//! until the earliest of its latest `believe_until` and its `BeliefEnded`.

use crate::history::CrashReport;
use crate::ids::{JobId, Token, WorkerId};
use crate::job::Release;
use crate::time::Millis;

/// Why a worker stopped believing it holds a lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BeliefEnd {
    /// The handler returned; a release follows.
    HandlerDone,
    /// A renew answered `Lost` (or was rejected).
    Lost,
    /// The self-fencing deadline passed without a successful renew.
    Fenced,
    /// Shutdown grace ran out; the job is returned.
    ShutdownTimeout,
    /// Cancel grace ran out; the cancel is acknowledged.
    CancelTimeout,
}

/// One thing a worker or sweeper did or learned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuntimeEvent {
    /// A lease was granted; the worker believes it until `believe_until`.
    Claimed {
        /// The worker.
        worker: WorkerId,
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
        /// Local time of the answer.
        at: Millis,
        /// Local belief deadline.
        believe_until: Millis,
    },
    /// A renew succeeded; the belief now lasts until `believe_until`.
    Renewed {
        /// The worker.
        worker: WorkerId,
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
        /// Local time of the answer.
        at: Millis,
        /// Local belief deadline.
        believe_until: Millis,
    },
    /// A renew's outcome was unknown; it will be retried.
    RenewUnavailable {
        /// The worker.
        worker: WorkerId,
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
        /// Local time.
        at: Millis,
    },
    /// The worker stopped believing it holds the lease; the handler is stopped.
    BeliefEnded {
        /// The worker.
        worker: WorkerId,
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
        /// Local time.
        at: Millis,
        /// Why.
        why: BeliefEnd,
    },
    /// A release was answered (or gave up after its bounded tries: `None`).
    Released {
        /// The worker.
        worker: WorkerId,
        /// The job.
        job: JobId,
        /// The token.
        token: Token,
        /// Local time.
        at: Millis,
        /// The outcome's kind.
        outcome: &'static str,
        /// The answer, or `None` when every try's outcome was unknown.
        answer: Option<Release>,
    },
    /// A sweeper reclaimed an expired lease.
    CrashReported {
        /// The report.
        report: CrashReport,
        /// Local time.
        at: Millis,
    },
}

/// Receives [`RuntimeEvent`]s. Must not block.
pub trait Observer: Send + Sync + 'static {
    /// Called for every event, in the order the host saw them.
    fn on_event(&self, event: &RuntimeEvent);
}

/// Discards events (tracing still logs them).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoObserver;

impl Observer for NoObserver {
    fn on_event(&self, _: &RuntimeEvent) {}
}

impl<F: Fn(&RuntimeEvent) + Send + Sync + 'static> Observer for F {
    fn on_event(&self, event: &RuntimeEvent) {
        self(event)
    }
}
