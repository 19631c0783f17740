//! Closing a pool for good.
//!
//! sqlx 0.8's `Pool::close` can return with a connection still open. A
//! dropped connection goes back to its pool in a task that pings it first;
//! when `close` runs during that ping, the connection lands in the closed
//! pool's idle queue after `close` drained it for the last time, and stays
//! open for the pool's life (launchbadge/sqlx#3217, fixed after 0.8.6). On
//! PostgreSQL that leaves a backend behind the closed store; on SQLite it
//! keeps the file open and its write-ahead log on disk. Closing again
//! closes it; it is back in the queue within one ping.
//!
//! Invariant: [`close_pool`] returns once the pool holds no connection, or
//! after [`MAX_CLOSE_ROUNDS`] rounds (a connection its caller still holds
//! past them is logged).

use sqlx::{Database, Pool};
use std::time::Duration;

/// Most `close` calls on one pool.
pub const MAX_CLOSE_ROUNDS: u32 = 100;
/// Wait between two `close` calls: a returning connection's ping is a
/// round trip to the server (PostgreSQL) or to the connection's thread
/// (SQLite).
pub const CLOSE_RECHECK: Duration = Duration::from_millis(5);

/// Closes `pool` and waits until it holds no connection (see the module
/// docs).
pub async fn close_pool<DB: Database>(pool: &Pool<DB>) {
    for _ in 0..MAX_CLOSE_ROUNDS {
        pool.close().await;
        if pool.size() == 0 {
            return;
        }
        tokio::time::sleep(CLOSE_RECHECK).await;
    }
    tracing::warn!(
        open = pool.size(),
        "connections still open after closing the pool {MAX_CLOSE_ROUNDS} times"
    );
}
