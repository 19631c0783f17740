//! What a worker runs: the [`Handler`] trait and its stop signal.
//!
//! A handler gets the lease (payload included) and a [`StopSignal`]. A
//! cooperative stop (cancel requested, graceful shutdown) is signalled and the
//! handler may finish; a hard stop (lease lost, self-fenced) drops the
//! handler's future at its next await point, after signalling.

use crate::job::Lease;
use std::future::Future;
use tokio::sync::watch;

/// Why a handler is asked to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// A cancel was requested; return soon (an error acknowledges the cancel).
    Cancel,
    /// The worker is shutting down; return soon (an error returns the job).
    Shutdown,
    /// The lease is gone; the handler is being dropped.
    Lost,
    /// The worker can no longer be sure it holds the lease; the handler is
    /// being dropped.
    Fenced,
}

/// A handler's failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandlerError {
    /// What went wrong.
    pub message: String,
    /// Whether another attempt may succeed.
    pub retryable: bool,
}

impl HandlerError {
    /// A failure worth retrying.
    pub fn retryable(message: impl Into<String>) -> Self {
        HandlerError {
            message: message.into(),
            retryable: true,
        }
    }

    /// A failure that no retry will fix.
    pub fn permanent(message: impl Into<String>) -> Self {
        HandlerError {
            message: message.into(),
            retryable: false,
        }
    }

    /// A payload the handler cannot decode: fails the job as non-retryable
    /// so it is never left claimed nor re-listed forever.
    pub fn poison(message: impl std::fmt::Display) -> Self {
        HandlerError::permanent(format!("poison payload: {message}"))
    }
}

/// Tells a running handler to stop.
#[derive(Clone, Debug)]
pub struct StopSignal(watch::Receiver<Option<StopReason>>);

impl StopSignal {
    /// A signal and the sender that raises it.
    pub fn new() -> (watch::Sender<Option<StopReason>>, StopSignal) {
        let (tx, rx) = watch::channel(None);
        (tx, StopSignal(rx))
    }

    /// The stop reason, if a stop was requested.
    pub fn reason(&self) -> Option<StopReason> {
        *self.0.borrow()
    }

    /// Completes when a stop is requested (or the worker is gone).
    pub async fn stopped(&mut self) -> StopReason {
        match self.0.wait_for(Option::is_some).await {
            Ok(r) => r.unwrap_or(StopReason::Lost),
            Err(_) => StopReason::Lost,
        }
    }
}

/// Runs one job.
pub trait Handler: Send + Sync + 'static {
    /// Runs the job leased by `lease`; `Ok` is the result bytes.
    fn handle(
        &self,
        lease: Lease,
        stop: StopSignal,
    ) -> impl Future<Output = Result<Vec<u8>, HandlerError>> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_signal_tells_its_reason_once_raised() {
        let (tx, signal) = StopSignal::new();
        assert_eq!(signal.reason(), None);
        tx.send(Some(StopReason::Cancel)).unwrap();
        assert_eq!(signal.reason(), Some(StopReason::Cancel));
    }
}
