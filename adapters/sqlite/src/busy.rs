//! Waiting for another process's write lock in slices the caller can stop.
//!
//! SQLite waits for a lock held by another connection inside its busy
//! handler, on the connection's own thread. Dropping the store future
//! (a request timeout) does not stop that wait: the write goes on waiting
//! for up to the whole busy timeout (10 s by default), holding its pooled
//! connection, and may still take the lock for nobody. Under a lock held by
//! another process every caller that gave up left one such write behind,
//! until they filled the pool and this process's readers and writers
//! starved (issue 27).
//!
//! So a write connection's own busy timeout is one short slice
//! ([`BUSY_SLICE`]) and `BEGIN IMMEDIATE` is retried from async code until
//! the store's busy timeout: a write whose caller is gone stops within one
//! slice, and a write that waits polls the lock every few milliseconds
//! (the busy handler's first steps: 1, 2, 5 ms) instead of every 100 ms
//! (its last ones).

use crate::error;
use leasehold_core::StoreError;
use sqlx::SqliteConnection;
use std::time::{Duration, Instant};

/// The longest a write waits inside SQLite's busy handler at a time, and so
/// the longest a write whose caller gave up keeps its connection.
pub const BUSY_SLICE: Duration = Duration::from_millis(10);

/// SQLite's primary result code for a lock held by another connection.
const SQLITE_BUSY: i32 = 5;

/// The busy timeout of a write connection: one slice, or less when the
/// store's whole busy timeout is shorter.
pub(crate) fn slice(busy_timeout: Duration) -> Duration {
    busy_timeout.min(BUSY_SLICE)
}

/// Whether `e` is `SQLITE_BUSY` or one of its extended codes.
fn is_busy(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = e else {
        return false;
    };
    db.code()
        .and_then(|c| c.parse::<i32>().ok())
        .is_some_and(|c| c & 0xff == SQLITE_BUSY)
}

/// Begins an immediate transaction on `conn` (whose busy timeout is
/// [`slice`]), trying again while another connection holds the lock, for
/// at most `busy_timeout` in all.
pub(crate) async fn begin_immediate(
    conn: &mut SqliteConnection,
    busy_timeout: Duration,
) -> Result<(), StoreError> {
    let started = Instant::now();
    // Each try waits about one slice, so this bounds the loop even if the
    // clock stalls; the deadline check usually ends it first.
    let tries = busy_timeout.as_millis() / slice(busy_timeout).as_millis().max(1) + 1;
    let mut last = None;
    for _ in 0..tries {
        match sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await {
            Ok(_) => return Ok(()),
            Err(e) if is_busy(&e) => last = Some(e),
            Err(e) => return Err(error::map(e)),
        }
        if started.elapsed() >= busy_timeout {
            break;
        }
    }
    let cause = last.map_or_else(|| "no try".to_string(), |e| e.to_string());
    Err(StoreError::Unavailable(format!(
        "sqlite: database is locked: another connection held the write lock \
         for the whole busy timeout ({busy_timeout:?}): {cause}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_never_exceeds_the_busy_timeout() {
        assert_eq!(slice(Duration::from_secs(10)), BUSY_SLICE);
        assert_eq!(slice(Duration::from_millis(5)), Duration::from_millis(5));
        assert_eq!(slice(Duration::ZERO), Duration::ZERO);
    }

    /// A free lock is taken at the first try, whatever the busy timeout,
    /// down to zero (a store that never waits still writes).
    #[tokio::test]
    async fn a_free_lock_is_taken_under_any_busy_timeout() {
        use sqlx::Connection;
        for ms in [0, 1, 9, 10, 11, 10_000] {
            let mut conn = SqliteConnection::connect("sqlite::memory:")
                .await
                .expect("connect");
            let r = begin_immediate(&mut conn, Duration::from_millis(ms)).await;
            assert!(r.is_ok(), "busy timeout {ms} ms: {r:?}");
        }
    }

    /// Only a lock held by another connection is waited out: any other
    /// error at `BEGIN IMMEDIATE` (here, a transaction already open on the
    /// connection) is answered at once, as itself, not as a busy timeout.
    #[tokio::test]
    async fn an_error_other_than_busy_is_answered_at_once() {
        use sqlx::Connection;
        let mut conn = SqliteConnection::connect("sqlite::memory:")
            .await
            .expect("connect");
        sqlx::query("BEGIN")
            .execute(&mut conn)
            .await
            .expect("begin");
        let busy_timeout = Duration::from_secs(2);
        let started = Instant::now();
        let e = begin_immediate(&mut conn, busy_timeout)
            .await
            .expect_err("a transaction is already open");
        let took = started.elapsed();
        assert!(took < busy_timeout / 2, "retried for {took:?}: {e}");
        assert!(!e.to_string().contains("database is locked"), "{e}");
    }
}
