//! Another PostgreSQL session holding a store's job table in `EXCLUSIVE`
//! mode, which lets plain reads through and blocks every row lock: the
//! setting of the tests that prove a call answers from a read, or waits
//! when it must lock rows.
//!
//! The table is held for [`HOLD`]; a call that answers within
//! [`READ_LIMIT`] did not wait for it, and one that answers after
//! [`LockedTable::release`] let it go did.

use crate::lock_hold::answered_after_release;
use sqlx::Connection;
use std::future::Future;
use std::time::{Duration, Instant};

/// How long the other session holds the table.
pub const HOLD: Duration = Duration::from_millis(1_000);
/// An answer from a read, whoever holds the table: slack for a loaded
/// machine, far below [`HOLD`].
pub const READ_LIMIT: Duration = Duration::from_millis(250);

/// The other session, inside a transaction holding the table.
pub struct LockedTable {
    conn: sqlx::PgConnection,
    held_at: Instant,
}

/// Locks `schema`'s `leasehold_jobs` from a new session on `url`.
pub async fn lock_jobs_table(url: &str, schema: &str) -> LockedTable {
    let mut conn = sqlx::PgConnection::connect(url).await.expect("connect");
    sqlx::query("BEGIN")
        .execute(&mut conn)
        .await
        .expect("begin");
    sqlx::query(&format!(
        "LOCK TABLE \"{schema}\".leasehold_jobs IN EXCLUSIVE MODE"
    ))
    .execute(&mut conn)
    .await
    .expect("the other session locks the table");
    LockedTable {
        conn,
        held_at: Instant::now(),
    }
}

impl LockedTable {
    /// Runs `reads` (calls that must not wait for the table) for at most
    /// half of [`HOLD`]; when they take longer, lets the table go and
    /// panics, so that the test fails instead of hanging.
    pub async fn within_half_hold<T>(&mut self, reads: impl Future<Output = T>) -> T {
        match tokio::time::timeout(HOLD / 2, reads).await {
            Ok(got) => got,
            Err(_) => {
                sqlx::query("ROLLBACK")
                    .execute(&mut self.conn)
                    .await
                    .expect("unlock");
                panic!("a read waited for the table for {:?}", HOLD / 2);
            }
        }
    }

    /// Starts `call`, lets the table go once [`HOLD`] has passed since it
    /// was locked, and returns `call`'s output with whether it answered
    /// only after that (as a call that locks rows must).
    pub async fn release<T: Send + 'static>(
        self,
        call: impl Future<Output = T> + Send + 'static,
    ) -> (T, bool) {
        let mut conn = self.conn;
        let let_go = async {
            sqlx::query("COMMIT")
                .execute(&mut conn)
                .await
                .expect("unlock");
        };
        let got = answered_after_release(call, self.held_at, HOLD, let_go).await;
        let _ = conn.close().await;
        got
    }
}
