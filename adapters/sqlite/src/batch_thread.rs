//! A merged batch's write transaction, polled on a thread of the runtime's
//! blocking pool instead of on the application's runtime threads.
//!
//! Why: a transaction is a chain of statements under the write lock, each
//! a hand-off to the connection's SQLite thread and back. Polled by a
//! runtime thread, every hand-back waits until such a thread is free, and
//! in a process of `Worker`s those threads are busy running the handlers of
//! the last batch: the lock is held that much longer, and SQLite's single
//! writer is the whole drain (`docs/PERFORMANCE.md`, "SQLite at `FULL`").
//! On a thread of its own the transaction's task is woken by the
//! connection's thread directly. Only merged batches go there: they are
//! the `Worker`'s path, and one hand-off per batch is nothing beside a
//! transaction of hundreds of rows; a single operation would pay it for
//! one row.
//!
//! Invariants:
//! - the same future runs, with the same statements in the same order:
//!   only the thread that polls it changes;
//! - a caller that drops the call (a request timeout, a merged batch
//!   dropped by its runner) drops the transaction at its next `.await`
//!   there, biased first, which rolls it back as an inline call dropped at
//!   its own `.await` does (`write_conn.rs`); until then it holds the write
//!   lock, as a cancelled inline transaction holds its connection;
//! - bounded: one thread per merged batch in flight, and the merger runs at
//!   most `DEFAULT_MERGE_FLUSHERS` of them at once;
//! - only on a multi-thread runtime, the one a process of `Worker`s runs
//!   (the chaos workers' among them); on a current-thread runtime the
//!   transaction runs inline, as the simulator runs it. The simulator's
//!   store driver is such a runtime, on one pinned CPU, where the hop is
//!   only cost: two more thread wake-ups a batch made its SQLite seeds
//!   1.36x slower (`docs/PERFORMANCE.md`), and its statement scheduler's
//!   gate belongs to the calling task and must see every statement. The
//!   future is the same either way; on a multi-thread runtime,
//!   `batch_thread_tests.rs` checks what the hop adds (a commit while the
//!   runtime's threads are busy) and `tests/tests/commit_point_faults.rs`
//!   a call dropped at its commit point.

use crate::SqliteStore;
use leasehold_core::statement_gate;
use leasehold_core::{BatchAnswer, BatchRequest, StoreError};
use tokio::runtime::{Handle, RuntimeFlavor};
use tracing::Instrument;

impl SqliteStore {
    /// [`SqliteStore::batch_in_one_tx`] on a thread of the blocking pool
    /// (see the module docs), or inline outside a multi-thread runtime or
    /// under the statement scheduler.
    pub(crate) async fn batch_off_runtime(
        &self,
        req: BatchRequest,
    ) -> Result<BatchAnswer, StoreError> {
        let handle = match Handle::try_current() {
            Ok(h)
                if h.runtime_flavor() == RuntimeFlavor::MultiThread && !statement_gate::armed() =>
            {
                h
            }
            _ => return self.batch_in_one_tx(req).await,
        };
        let store = self.handle();
        // Dropped with this future: the transaction's thread then drops
        // the transaction at its next `.await`.
        let (_caller, gone) = tokio::sync::oneshot::channel::<()>();
        let span = tracing::Span::current();
        let inner = handle.clone();
        let thread = handle.spawn_blocking(move || {
            inner.block_on(
                async move {
                    tokio::select! {
                        biased;
                        _ = gone => None,
                        answer = store.batch_in_one_tx(req) => Some(answer),
                    }
                }
                .instrument(span),
            )
        });
        match thread.await {
            Ok(Some(answer)) => answer,
            // Only a dropped caller ends it so, and none is left to answer.
            Ok(None) => Err(StoreError::Unavailable("batch call dropped".into())),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(StoreError::Unavailable(format!(
                "batch transaction's thread did not finish: {e}"
            ))),
        }
    }
}
