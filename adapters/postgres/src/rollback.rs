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
//! What: [`TxGuard`] owns the open transaction and its connection. Dropped
//! before its commit or rollback, it spawns a task that sends the
//! `ROLLBACK` and waits for the answer, counted in [`Rollbacks`] until
//! then; [`Rollbacks::settled`] lets the store's next transaction wait for
//! them.
//!
//! The guard sends `BEGIN`, `COMMIT` and `ROLLBACK` itself, on the store's
//! kept write connection (`leasehold_sql::kept_conn`), so a transaction
//! after one that ended cleanly skips the pool's pings (one when a
//! connection goes back, one when it is handed out). sqlx does not know
//! such a connection is inside a transaction.
//!
//! Invariants:
//! - a connection that may be inside a transaction never goes back to the
//!   pool or the keeper: it goes back only once its `COMMIT` or `ROLLBACK`
//!   was answered, and is closed (the server rolls back) when that failed,
//!   was dropped before its answer, or no runtime is left to send it;
//! - `pending` counts the spawned rollbacks not yet answered: each spawn
//!   adds one before it starts, and the task takes it back when it ends,
//!   finished or dropped;
//! - a transaction waits for them at most [`ROLLBACK_WAIT`] (a server that
//!   does not answer is the pool's to deal with, not a reason to stall).

use leasehold_sql::kept_conn::KeptConn;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnection, PgPool, Postgres};
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

/// An open transaction on a connection of its own, rolled back, and
/// counted until it is, if it is dropped before [`TxGuard::commit`] or
/// [`TxGuard::rollback`].
///
/// It sends `BEGIN`, `COMMIT` and `ROLLBACK` itself on a plain pooled
/// connection, taken from the store's kept writer
/// (`leasehold_sql::kept_conn`) and kept there again after a transaction
/// that ended cleanly, so the next transaction skips the pool's two pings.
/// sqlx does not know that connection is in a transaction, so it must
/// never go back to the pool open: it goes back only after its `COMMIT` or
/// `ROLLBACK` was answered, and is closed when either failed (the outcome
/// unknown) or no runtime is left to roll it back.
pub(crate) struct TxGuard {
    /// Holds the connection until the transaction ended.
    conn: OpenConn,
    kept: Arc<KeptConn<Postgres>>,
    pool: PgPool,
    rollbacks: Arc<Rollbacks>,
}

impl TxGuard {
    /// Takes the kept write connection, else one from `pool`, and begins
    /// a transaction on it.
    ///
    /// A kept connection was not pinged, and its server may have dropped it
    /// while it sat idle (a restart, an idle timeout): when `BEGIN` fails
    /// on it, nothing of the transaction ran, so it is closed and the
    /// transaction begins on one from the pool (pinged there) instead of
    /// failing the write.
    pub(crate) async fn begin(
        kept: &Arc<KeptConn<Postgres>>,
        pool: &PgPool,
        rollbacks: &Arc<Rollbacks>,
    ) -> Result<Self, sqlx::Error> {
        if let Some(conn) = kept.take_kept() {
            let begun = Self::begin_on(conn, kept, pool, rollbacks).await;
            if begun.is_ok() {
                return begun;
            }
            tracing::debug!("BEGIN failed on the kept write connection; taking one from the pool");
        }
        let conn = pool.acquire().await?;
        Self::begin_on(conn, kept, pool, rollbacks).await
    }

    async fn begin_on(
        conn: PoolConnection<Postgres>,
        kept: &Arc<KeptConn<Postgres>>,
        pool: &PgPool,
        rollbacks: &Arc<Rollbacks>,
    ) -> Result<Self, sqlx::Error> {
        // Armed before `BEGIN` is sent: dropped from here on (a failed
        // `BEGIN` included), the guard rolls back whatever the server made
        // of it, and a broken connection is closed.
        let mut tx = TxGuard {
            conn: OpenConn(Some(conn)),
            kept: kept.clone(),
            pool: pool.clone(),
            rollbacks: rollbacks.clone(),
        };
        sqlx::query("BEGIN").execute(tx.conn()).await?;
        Ok(tx)
    }

    /// The transaction's connection (`None` only after commit or rollback,
    /// which consume the guard).
    pub(crate) fn conn(&mut self) -> &mut PgConnection {
        match self.conn.0.as_deref_mut() {
            Some(conn) => conn,
            None => unreachable!("commit and rollback consume the guard"),
        }
    }

    pub(crate) async fn commit(mut self) -> Result<(), sqlx::Error> {
        let conn = OpenConn(self.conn.0.take());
        end(conn, "COMMIT", &self.kept, &self.pool).await
    }

    pub(crate) async fn rollback(mut self) {
        let conn = OpenConn(self.conn.0.take());
        let _ = end(conn, "ROLLBACK", &self.kept, &self.pool).await;
    }
}

/// A connection that may be inside a transaction: closed, never pooled,
/// if it is dropped while it holds one (the server then rolls back).
struct OpenConn(Option<PoolConnection<Postgres>>);

impl Drop for OpenConn {
    fn drop(&mut self) {
        if let Some(conn) = self.0.as_mut() {
            conn.close_on_drop();
        }
    }
}

/// Ends the transaction on `conn` with `statement` (`COMMIT` or
/// `ROLLBACK`). Answered, the connection is kept for the next transaction;
/// failed, or dropped before the answer, it is closed.
async fn end(
    mut conn: OpenConn,
    statement: &'static str,
    kept: &KeptConn<Postgres>,
    pool: &PgPool,
) -> Result<(), sqlx::Error> {
    let Some(c) = conn.0.as_deref_mut() else {
        return Ok(());
    };
    sqlx::query(statement).execute(c).await?;
    if let Some(c) = conn.0.take() {
        kept.keep(c, pool);
    }
    Ok(())
}

impl Drop for TxGuard {
    fn drop(&mut self) {
        if self.conn.0.is_none() {
            return;
        }
        let conn = OpenConn(self.conn.0.take());
        // Without a runtime nothing can send the rollback: the connection
        // is closed, and the server rolls back.
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        self.rollbacks.pending.fetch_add(1, Ordering::AcqRel);
        // Taken back when the task ends, or is dropped unfinished (its
        // runtime shutting down): the count never stays up for good.
        let done = Done(self.rollbacks.clone());
        let (kept, pool) = (self.kept.clone(), self.pool.clone());
        rt.spawn(async move {
            let _done = done;
            // A connection left mid-statement answers that statement first;
            // a broken one fails here and is closed.
            let _ = end(conn, "ROLLBACK", &kept, &pool).await;
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
