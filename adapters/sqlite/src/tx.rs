//! One `BEGIN IMMEDIATE` transaction per operation: [`in_write_tx!`] runs
//! an operation's body under the write lock with the store time read once
//! the lock is held, and retries a version conflict.

/// Runs `$body` (an expression using `$conn: &mut SqliteConnection` and
/// `$now: StoreTime`) in one `BEGIN IMMEDIATE` transaction, retrying a
/// version conflict at most [`crate::MAX_CONFLICT_RETRIES`] times.
macro_rules! in_write_tx {
    ($self:ident, |$conn:ident, $now:ident| $body:expr) => {{
        let mut retries = leasehold_sql::conflict_retry::Retries::new($crate::MAX_CONFLICT_RETRIES);
        loop {
            let _writer = $self.write_lock.lock().await;
            let mut tx =
                $crate::write_conn::WriteConn::begin(&$self.writers, $self.busy_timeout).await?;
            let $now = $self.clock.now();
            let result = {
                let $conn: &mut sqlx::sqlite::SqliteConnection = tx.conn();
                $body
            };
            match result {
                Ok(v) => {
                    // SQLite has no serialization failures to raise: only
                    // an armed stall (the caller drops us here) applies.
                    let _ = $self.tx_faults.at_commit().await;
                    tx.commit().await?;
                    break Ok(v);
                }
                Err(e) => {
                    tx.rollback().await;
                    // Bounded: `retries` answers an error once they are spent.
                    if let Err(e) = retries.after(e) {
                        break Err(e);
                    }
                }
            }
        }
    }};
}
