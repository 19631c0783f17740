//! The driver: where a store that does its own I/O runs, so that its
//! answers come back at an exact simulated instant.
//!
//! One private tokio runtime (one worker thread) per seed. The simulation
//! thread hands it a future and blocks until the result is back, so the
//! simulated clock cannot move while a database works. Nothing else ever
//! runs on the simulation thread in the meantime, which keeps the order of
//! store operations the order in which the store host received them.

use std::future::Future;

/// Most time one store call may take for real before the run is failed
/// as a harness error (a hung database must not hang the simulator).
pub const DRIVER_CALL_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// A private runtime for one seed's store.
pub struct Driver {
    rt: Option<tokio::runtime::Runtime>,
}

/// The driver's call did not finish (the database hung, or its task died).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("store call did not finish: {0}")]
pub struct DriverError(pub String);

impl Driver {
    /// A driver with its own worker thread.
    pub fn new() -> Result<Driver, DriverError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("leasehold-sim-store")
            .enable_all()
            .build()
            .map_err(|e| DriverError(format!("cannot start the store driver: {e}")))?;
        Ok(Driver { rt: Some(rt) })
    }

    /// Runs `fut` on the driver and blocks this thread until it is done.
    pub fn run<T: Send + 'static>(
        &self,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, DriverError> {
        let rt = self.rt.as_ref().expect("driver runtime lives until drop");
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        rt.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv_timeout(DRIVER_CALL_LIMIT).map_err(|e| {
            DriverError(format!(
                "{e} (limit {}s of real time)",
                DRIVER_CALL_LIMIT.as_secs()
            ))
        })
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // A runtime may not be dropped inside another runtime's context
        // (the last reference can go away inside a simulated host).
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Polls a future once with a no-op waker: the memory store's futures are
/// ready at once, so a synchronous caller needs no runtime for them.
pub fn ready_now<F: Future>(fut: F) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => Some(v),
        std::task::Poll::Pending => None,
    }
}
