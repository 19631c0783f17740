//! Rolling back a transaction whose caller went away, before the store's
//! next transaction starts.
//!
//! Why: a caller may drop a store call in the middle of its transaction
//! (a request timeout, a cancelled batch). sqlx then only queues the
//! `ROLLBACK`; it goes out when the pool's return task pings the connection,
//! some time later. Until then the dropped transaction keeps its row locks,
//! and the store's next claim skips those rows (`SKIP LOCKED`): on a loaded
//! machine, 1 run in 30 of `commit_point_faults`'s cancelled PostgreSQL
//! batch, retried at once, claimed nothing of the job the cancelled one had
//! locked.
//!
//! What: [`TxGuard`] owns the open transaction. Dropped before its commit or
//! rollback, it spawns a task that sends the `ROLLBACK` and waits for the
//! answer, counted in [`Rollbacks`] until then; [`Rollbacks::settled`] lets
//! the store's next transaction wait for them.
//!
//! Invariants:
//! - `pending` counts the spawned rollbacks not yet answered: each spawn
//!   adds one before it starts, and the task takes it back when it ends,
//!   finished or dropped;
//! - a transaction waits for them at most [`ROLLBACK_WAIT`] (a server that
//!   does not answer is the pool's to deal with, not a reason to stall).

use sqlx::postgres::{PgConnection, Postgres};
use sqlx::Transaction;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// Longest a transaction waits for the rollbacks of dropped ones.
pub(crate) const ROLLBACK_WAIT: Duration = Duration::from_secs(1);

/// The rollbacks of dropped transactions still under way.
#[derive(Default)]
pub(crate) struct Rollbacks {
    pending: AtomicUsize,
    done: Notify,
}

impl Rollbacks {
    /// Returns once no rollback is under way, or after [`ROLLBACK_WAIT`].
    pub(crate) async fn settled(&self) {
        if self.pending.load(Ordering::Acquire) == 0 {
            return;
        }
        let deadline = tokio::time::Instant::now() + ROLLBACK_WAIT;
        // Bounded by the deadline: every pass waits for a rollback to end
        // or returns.
        loop {
            let done = self.done.notified();
            tokio::pin!(done);
            // Registered before the check, so an end between the two is seen.
            done.as_mut().enable();
            if self.pending.load(Ordering::Acquire) == 0 {
                return;
            }
            if tokio::time::timeout_at(deadline, done).await.is_err() {
                return;
            }
        }
    }

    #[cfg(test)]
    fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }
}

/// An open transaction that is rolled back, and counted until it is, if
/// it is dropped before [`TxGuard::commit`] or [`TxGuard::rollback`].
pub(crate) struct TxGuard {
    tx: Option<Transaction<'static, Postgres>>,
    rollbacks: Arc<Rollbacks>,
}

impl TxGuard {
    pub(crate) fn new(tx: Transaction<'static, Postgres>, rollbacks: &Arc<Rollbacks>) -> Self {
        TxGuard {
            tx: Some(tx),
            rollbacks: rollbacks.clone(),
        }
    }

    /// The transaction's connection (`None` only after commit or rollback,
    /// which consume the guard).
    pub(crate) fn conn(&mut self) -> &mut PgConnection {
        match self.tx.as_deref_mut() {
            Some(conn) => conn,
            None => unreachable!("commit and rollback consume the guard"),
        }
    }

    pub(crate) async fn commit(mut self) -> Result<(), sqlx::Error> {
        match self.tx.take() {
            Some(tx) => tx.commit().await,
            None => Ok(()),
        }
    }

    pub(crate) async fn rollback(mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.rollback().await;
        }
    }
}

impl Drop for TxGuard {
    fn drop(&mut self) {
        let Some(tx) = self.tx.take() else { return };
        // Outside a runtime sqlx's own drop queues the rollback.
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        self.rollbacks.pending.fetch_add(1, Ordering::AcqRel);
        // Taken back when the task ends, or is dropped unfinished (its
        // runtime shutting down): the count never stays up for good.
        let done = Done(self.rollbacks.clone());
        rt.spawn(async move {
            let _done = done;
            // A connection left mid-statement answers that statement first;
            // a broken one fails here and the server rolls back on its own.
            let _ = tx.rollback().await;
        });
    }
}

/// Takes one pending rollback back when dropped, and wakes the waiters.
struct Done(Arc<Rollbacks>);

impl Drop for Done {
    fn drop(&mut self) {
        self.0.pending.fetch_sub(1, Ordering::AcqRel);
        self.0.done.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::{Done, Rollbacks, ROLLBACK_WAIT};
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn settled_waits_for_the_last_rollback_and_no_longer_than_its_bound() {
        let r = Arc::new(Rollbacks::default());
        let t = tokio::time::Instant::now();
        r.settled().await;
        assert_eq!(t.elapsed(), Duration::ZERO, "nothing pending: at once");

        r.pending.fetch_add(2, Ordering::AcqRel);
        let ender = r.clone();
        tokio::spawn(async move {
            for _ in 0..2 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                ender.pending.fetch_sub(1, Ordering::AcqRel);
                ender.done.notify_waiters();
            }
        });
        let t = tokio::time::Instant::now();
        r.settled().await;
        assert_eq!(t.elapsed(), Duration::from_millis(200), "until the last");
        assert_eq!(r.pending(), 0);

        r.pending.fetch_add(1, Ordering::AcqRel);
        let t = tokio::time::Instant::now();
        r.settled().await;
        assert_eq!(t.elapsed(), ROLLBACK_WAIT, "a rollback that never ends");
        r.pending.fetch_sub(1, Ordering::AcqRel);
    }

    /// A rollback task dropped unfinished (its runtime shut down) still
    /// takes its count back, so later transactions do not wait for it.
    #[tokio::test(start_paused = true)]
    async fn a_rollback_dropped_unfinished_is_taken_back() {
        let r = Arc::new(Rollbacks::default());
        r.pending.fetch_add(1, Ordering::AcqRel);
        let done = Done(r.clone());
        let task = tokio::spawn(async move {
            let _done = done;
            std::future::pending::<()>().await;
        });
        tokio::task::yield_now().await;
        assert_eq!(r.pending(), 1);
        task.abort();
        let _ = task.await;
        assert_eq!(r.pending(), 0);
        let t = tokio::time::Instant::now();
        r.settled().await;
        assert_eq!(t.elapsed(), Duration::ZERO);
    }
}
