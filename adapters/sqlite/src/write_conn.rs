//! One pooled connection inside one `BEGIN IMMEDIATE` write transaction,
//! safe against cancellation.
//!
//! A caller may drop a store future at any `.await` (a request timeout, a
//! worker resumed after `SIGSTOP` dropping its overdue calls). If that
//! happens while `BEGIN IMMEDIATE` or `COMMIT` is in flight, SQLite may
//! finish the statement after the future is gone: a plain pooled
//! transaction would then go back to the pool still open, holding the
//! database's write lock, and every writer in every process would wait on
//! it until its busy timeout, forever (chaos test finding, seed 12).
//!
//! Invariant: a [`WriteConn`] dropped before [`WriteConn::commit`] or
//! [`WriteConn::rollback`] completed closes its connection instead of
//! returning it to the pool. Closing a SQLite connection rolls back any
//! open transaction and releases its locks, whatever state the cancelled
//! statement left it in. The close waits for the cancelled statement to
//! end; `BEGIN IMMEDIATE` waits for another process's lock in short slices
//! (`busy.rs`), so that is at most one slice.
//!
//! A transaction that ended (committed or rolled back) leaves its
//! connection kept for the next one (`leasehold_sql::kept_conn`): the
//! store's writes are one at a time, so the next write takes it.

use crate::{busy, error};
use leasehold_core::StoreError;
use leasehold_sql::kept_conn::{KeptConn, Lent};
use sqlx::{Sqlite, SqliteConnection, SqlitePool};
use std::time::Duration;

/// A connection holding an open write transaction (see the module docs).
pub(crate) struct WriteConn<'a> {
    /// Lent until the transaction ends.
    conn: Option<Lent<'a, Sqlite>>,
    /// Whether the transaction may still be open: `true` from before
    /// `BEGIN` is sent until `COMMIT`/`ROLLBACK` has answered.
    open: bool,
}

impl<'a> WriteConn<'a> {
    /// Takes the kept write connection, else one from `pool` (the store's
    /// write pool), and begins an immediate (write-locked) transaction on
    /// it, waiting at most `busy_timeout` for another process's lock.
    pub(crate) async fn begin(
        kept: &'a KeptConn<Sqlite>,
        pool: &'a SqlitePool,
        busy_timeout: Duration,
    ) -> Result<WriteConn<'a>, StoreError> {
        let conn = kept.acquire(pool).await.map_err(error::map)?;
        // Armed before BEGIN is sent: a cancelled BEGIN may still take the
        // lock after this future is gone.
        let mut w = WriteConn {
            conn: Some(conn),
            open: true,
        };
        busy::begin_immediate(w.conn(), busy_timeout).await?;
        Ok(w)
    }

    /// The connection, for the statements of the transaction.
    pub(crate) fn conn(&mut self) -> &mut SqliteConnection {
        self.conn
            .as_deref_mut()
            .expect("lent until the transaction ends")
    }

    /// Commits. On an error the outcome is unknown and the connection is
    /// closed (the drop sees the transaction as still open).
    pub(crate) async fn commit(mut self) -> Result<(), StoreError> {
        sqlx::query("COMMIT")
            .execute(self.conn())
            .await
            .map_err(error::map_commit)?;
        self.open = false;
        self.end();
        Ok(())
    }

    /// Rolls back; a failed rollback closes the connection.
    pub(crate) async fn rollback(mut self) {
        if sqlx::query("ROLLBACK").execute(self.conn()).await.is_ok() {
            self.open = false;
            self.end();
        }
    }

    /// The transaction ended: the connection is kept for the next one.
    fn end(&mut self) {
        if let Some(conn) = self.conn.take() {
            conn.done();
        }
    }
}

impl Drop for WriteConn<'_> {
    fn drop(&mut self) {
        if self.open {
            tracing::debug!("write transaction dropped before it ended; closing its connection");
            if let Some(conn) = self.conn.as_mut() {
                conn.close_on_drop();
            }
        }
    }
}
