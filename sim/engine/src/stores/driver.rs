//! The driver: where a store that does its own I/O runs, so that its
//! answers come back at an exact simulated instant.
//!
//! One private single-threaded tokio runtime per seed, driven by the
//! simulation thread itself: it hands the runtime a future and runs it to
//! the end ([`Driver::run`]), so the simulated clock cannot move while a
//! database works, and the simulation goes on only once the answer is
//! back. Nothing else ever runs on the simulation thread in the meantime,
//! which keeps the order of store operations the order in which the store
//! host received them. Work a call leaves behind (a cancelled
//! transaction's rollback, a connection going back to its pool) runs at
//! the next call, which waits for it where it matters
//! (`SimStore::settle`).
//!
//! Why the simulation thread and not a worker thread of the runtime's own
//! (as until issue 46): a SQL seed spends nearly all its time handing work
//! between threads, and a worker thread cost two more hand-offs per call
//! (there and back), each a wake-up of another thread; the seed's threads
//! are also kept on one CPU (`pin.rs`).

use std::future::Future;

/// Most time one store call may take for real before the run is failed
/// as a harness error (a hung database must not hang the simulator).
pub const DRIVER_CALL_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// A private runtime for one seed's store.
pub struct Driver {
    rt: Option<tokio::runtime::Runtime>,
    /// The thread's CPUs come back when the seed is done (after the
    /// runtime is gone: declared after it).
    _pinned: super::pin::Pinned,
    /// For a store whose connections are threads of this process: the
    /// seed's threads run under the batch policy (`batch_policy.rs`).
    _batched: Option<super::batch_policy::Batched>,
}

/// The driver's call did not finish (the database hung, or its task died).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("store call did not finish: {0}")]
pub struct DriverError(pub String);

impl Driver {
    /// A driver for the calling thread (the seed's simulation thread, which
    /// it keeps on one CPU with the threads the store starts from it).
    pub fn new() -> Result<Driver, DriverError> {
        Self::build(true)
    }

    /// As [`Driver::new`], for a store that needs no sockets (its
    /// connections are threads of its own, as SQLite's under sqlx): the
    /// runtime has timers but no I/O reactor, so while a statement runs
    /// the simulation thread waits on a futex, and each answer wakes it
    /// directly, instead of through an `eventfd` write and `epoll_wait`.
    /// A SQL seed makes thousands of such wake-ups. The seed's thread and
    /// the connection threads it starts also run under the batch policy
    /// (`batch_policy.rs`), so that an answer of many rows is one
    /// switch, not two a row.
    pub fn without_io() -> Result<Driver, DriverError> {
        Self::build(false)
    }

    fn build(io: bool) -> Result<Driver, DriverError> {
        let pinned = super::pin::this_thread();
        let mut builder = tokio::runtime::Builder::new_current_thread();
        if io {
            builder.enable_all();
        } else {
            builder.enable_time();
        }
        let rt = builder
            .build()
            .map_err(|e| DriverError(format!("cannot start the store driver: {e}")))?;
        Ok(Driver {
            rt: Some(rt),
            _pinned: pinned,
            _batched: (!io).then(super::batch_policy::this_thread),
        })
    }

    /// Runs `fut` on the driver, on this thread, until it is done (at most
    /// [`DRIVER_CALL_LIMIT`]). Must not be called from inside a call. From
    /// a thread inside another tokio runtime it is an error (tokio refuses
    /// a nested `block_on`): the simulator runs seeds on plain threads, and
    /// so must a harness that runs them from async code.
    pub fn run<T: Send + 'static>(
        &self,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, DriverError> {
        let rt = self.rt.as_ref().expect("driver runtime lives until drop");
        // tokio panics on a `block_on` inside another runtime: a harness that
        // runs seeds from async code gets this error instead.
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(DriverError(
                "a seed on a store with a driver cannot run inside a tokio runtime: \
                 run it from a plain thread (std::thread::spawn, or \
                 tokio::task::spawn_blocking)"
                    .to_string(),
            ));
        }
        // The timer is made inside the runtime, which it needs.
        rt.block_on(async move { tokio::time::timeout(DRIVER_CALL_LIMIT, fut).await })
            .map_err(|_| {
                DriverError(format!(
                    "timed out (limit {}s of real time)",
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

#[cfg(test)]
mod tests {
    use super::Driver;

    #[test]
    fn a_call_runs_to_its_end_on_the_calling_thread() {
        let d = Driver::new().expect("a driver");
        let here = std::thread::current().id();
        let there = d
            .run(async move { std::thread::current().id() })
            .expect("answered");
        assert_eq!(here, there, "the driver runs on the simulation thread");
        assert_eq!(d.run(async { 7 }).expect("answered"), 7);
    }

    /// A driver without I/O still has timers: the call limit and a
    /// store's own timeouts run on them.
    #[test]
    fn a_driver_without_io_runs_timers() {
        let d = Driver::without_io().expect("a driver");
        let slept = d
            .run(async {
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                7
            })
            .expect("answered");
        assert_eq!(slept, 7);
    }

    #[test]
    fn a_call_from_inside_a_tokio_runtime_is_an_error_not_a_panic() {
        let outer = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let d = Driver::new().expect("a driver");
        let got = outer.block_on(async { d.run(async { 7 }) });
        let e = got.expect_err("refused inside a runtime");
        assert!(e.0.contains("inside a tokio runtime"), "{}", e.0);
        assert_eq!(d.run(async { 8 }).expect("fine from a plain thread"), 8);
    }
}
