//! One pooled connection kept out of its pool between operations, so that
//! the next operation skips sqlx's ping.
//!
//! sqlx pings every connection that goes back into a pool (its
//! `return_to_pool`), to flush what a cancelled call may have left behind
//! and to close a broken connection. That ping is a hand-off to the
//! connection's thread and back on SQLite, and a round trip to the server
//! on PostgreSQL: for a store call of one statement (an idle poll's probe,
//! a read of one row) it doubles the calls to the connection. A store
//! lends its connection from a [`KeptConn`] instead: an operation that ran
//! to its end hands the connection back here, unpinged, and the next
//! operation takes it first.
//!
//! Invariants:
//! - only a connection whose operation ran to its end without an error is
//!   kept ([`Lent::done`], [`Lent::finish`]); one dropped before that, or
//!   after an error, goes back to the pool, which pings it and closes it if
//!   broken (or closes it, when the caller asked, [`Lent::close_on_drop`]);
//! - at most one connection is kept;
//! - a connection is kept only while the pool could serve an acquire
//!   without it (an idle connection, or room to open one), so no acquire
//!   waits for a connection that sits here unused;
//! - after [`KeptConn::close`] nothing is kept: the connection kept then
//!   goes back to the pool, so the pool's close does not wait for it.

use sqlx::pool::PoolConnection;
use sqlx::{Database, Pool};
use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard};

/// The slot of one kept connection (see the module docs).
pub struct KeptConn<DB: Database> {
    slot: Mutex<Slot<DB>>,
}

struct Slot<DB: Database> {
    conn: Option<PoolConnection<DB>>,
    closed: bool,
}

impl<DB: Database> Default for KeptConn<DB> {
    fn default() -> Self {
        KeptConn {
            slot: Mutex::new(Slot {
                conn: None,
                closed: false,
            }),
        }
    }
}

impl<DB: Database> KeptConn<DB> {
    fn slot(&self) -> MutexGuard<'_, Slot<DB>> {
        // A panic while the lock was held left a slot that is still whole.
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The kept connection if there is one, else one from `pool`.
    pub async fn acquire<'a>(&'a self, pool: &'a Pool<DB>) -> Result<Lent<'a, DB>, sqlx::Error> {
        let kept = self.slot().conn.take();
        let conn = match kept {
            Some(c) => c,
            None => pool.acquire().await?,
        };
        Ok(Lent {
            conn: Some(conn),
            home: self,
            pool,
            close: false,
        })
    }

    /// Keeps nothing from now on, and gives the kept connection back to
    /// its pool. Call before closing the pool.
    pub fn close(&self) {
        let kept = {
            let mut slot = self.slot();
            slot.closed = true;
            slot.conn.take()
        };
        drop(kept);
    }

    /// How many connections are kept here (0 or 1): idle, though the pool
    /// counts them as taken.
    pub fn held(&self) -> usize {
        usize::from(self.slot().conn.is_some())
    }

    fn keep(&self, conn: PoolConnection<DB>, pool: &Pool<DB>) {
        let spare = pool.num_idle() > 0 || pool.size() < pool.options().get_max_connections();
        let back = {
            let mut slot = self.slot();
            if slot.closed || slot.conn.is_some() || !spare || pool.is_closed() {
                Some(conn)
            } else {
                slot.conn = Some(conn);
                None
            }
        };
        // Outside the lock: dropping returns the connection to its pool.
        drop(back);
    }
}

/// A connection lent by a [`KeptConn`]: kept again by [`Lent::done`],
/// returned to the pool when dropped without it.
pub struct Lent<'a, DB: Database> {
    conn: Option<PoolConnection<DB>>,
    home: &'a KeptConn<DB>,
    pool: &'a Pool<DB>,
    close: bool,
}

impl<DB: Database> Lent<'_, DB> {
    /// The operation ran to its end: keep the connection for the next.
    pub fn done(mut self) {
        if let Some(mut conn) = self.conn.take() {
            if self.close {
                conn.close_on_drop();
            } else {
                self.home.keep(conn, self.pool);
            }
        }
    }

    /// Ends an operation that answered `result`: the connection is kept
    /// after an answer, and goes back to its pool (pinged) after an error.
    pub fn finish<T, E>(self, result: Result<T, E>) -> Result<T, E> {
        if result.is_ok() {
            self.done();
        }
        result
    }

    /// Closes the connection when this is dropped, instead of returning it
    /// to the pool (a transaction that may still be open).
    pub fn close_on_drop(&mut self) {
        self.close = true;
    }
}

impl<DB: Database> Drop for Lent<'_, DB> {
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            if self.close {
                conn.close_on_drop();
            }
        }
    }
}

impl<DB: Database> Deref for Lent<'_, DB> {
    type Target = DB::Connection;
    fn deref(&self) -> &DB::Connection {
        self.conn.as_deref().expect("lent until done or dropped")
    }
}

impl<DB: Database> DerefMut for Lent<'_, DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        self.conn
            .as_deref_mut()
            .expect("lent until done or dropped")
    }
}

#[cfg(test)]
mod tests {
    use super::KeptConn;
    use sqlx::sqlite::{SqlitePool, SqlitePoolOptions};
    use sqlx::Sqlite;

    /// A pool of in-memory databases, one per connection: a table made on
    /// one connection names that connection.
    async fn pool(max: u32) -> SqlitePool {
        SqlitePoolOptions::new()
            .max_connections(max)
            .test_before_acquire(false)
            .connect("sqlite::memory:")
            .await
            .expect("an in-memory pool")
    }

    /// Waits (boundedly) until every connection of `pool` is back in it:
    /// sqlx returns a dropped one in a task of its own.
    async fn returned(pool: &SqlitePool) {
        for _ in 0..1000 {
            if pool.num_idle() == pool.size() as usize {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        panic!("connections still out of the pool");
    }

    async fn marked(conn: &mut sqlx::SqliteConnection) -> bool {
        sqlx::query("SELECT 1 FROM sqlite_master WHERE name = 'mark'")
            .fetch_optional(conn)
            .await
            .expect("a read")
            .is_some()
    }

    #[tokio::test]
    async fn a_connection_used_to_its_end_is_lent_again() {
        let pool = pool(2).await;
        let kept = KeptConn::<Sqlite>::default();
        let mut c = kept.acquire(&pool).await.expect("lent");
        sqlx::query("CREATE TABLE mark (x)")
            .execute(&mut *c)
            .await
            .expect("marked");
        c.done();
        assert_eq!(kept.held(), 1);
        let mut c = kept.acquire(&pool).await.expect("lent");
        assert_eq!(kept.held(), 0, "lent out, not kept");
        assert!(marked(&mut c).await, "another connection was lent");
        c.done();
        kept.close();
        pool.close().await;
    }

    #[tokio::test]
    async fn a_connection_dropped_or_failed_goes_back_to_the_pool() {
        let pool = pool(2).await;
        let kept = KeptConn::<Sqlite>::default();
        let c = kept.acquire(&pool).await.expect("lent");
        drop(c);
        assert_eq!(kept.held(), 0, "kept though its operation never ended");
        returned(&pool).await;
        let c = kept.acquire(&pool).await.expect("lent");
        let failed: Result<(), &str> = c.finish(Err("an error"));
        assert!(failed.is_err());
        assert_eq!(kept.held(), 0, "kept after an error");
        returned(&pool).await;
        let c = kept.acquire(&pool).await.expect("lent");
        let answered: Result<u8, &str> = c.finish(Ok(1));
        assert_eq!(answered, Ok(1));
        assert_eq!(kept.held(), 1, "not kept after an answer");
        kept.close();
        pool.close().await;
    }

    /// With the pool at its size and nothing idle, a kept connection would
    /// leave the next `acquire` of the pool waiting for it: it goes back.
    #[tokio::test]
    async fn nothing_is_kept_that_the_pool_could_not_do_without() {
        let pool = pool(1).await;
        let kept = KeptConn::<Sqlite>::default();
        let c = kept.acquire(&pool).await.expect("lent");
        assert_eq!((pool.size(), pool.num_idle()), (1, 0));
        c.done();
        assert_eq!(kept.held(), 0, "kept the pool's only connection");
        let again = tokio::time::timeout(std::time::Duration::from_secs(5), pool.acquire()).await;
        assert!(matches!(again, Ok(Ok(_))), "the pool's acquire waited");
        drop(again);
        pool.close().await;
    }

    #[tokio::test]
    async fn close_gives_the_kept_connection_back_and_keeps_nothing_after() {
        let pool = pool(3).await;
        let kept = KeptConn::<Sqlite>::default();
        let (a, b) = (
            kept.acquire(&pool).await.expect("lent"),
            kept.acquire(&pool).await.expect("lent"),
        );
        a.done();
        assert_eq!(kept.held(), 1);
        kept.close();
        assert_eq!(kept.held(), 0);
        b.done();
        assert_eq!(kept.held(), 0, "kept after close");
        let closed = tokio::time::timeout(std::time::Duration::from_secs(5), pool.close()).await;
        assert!(
            closed.is_ok(),
            "the pool's close waited for a kept connection"
        );
        assert_eq!(pool.size(), 0);
    }
}
