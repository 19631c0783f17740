//! One `BEGIN IMMEDIATE` transaction per operation: [`in_write_tx!`] runs
//! an operation's body under the write lock with the store time read once
//! the lock is held, and retries a version conflict.

/// Runs `$body` (an expression using `$conn: &mut SqliteConnection` and
/// `$now: StoreTime`) in one `BEGIN IMMEDIATE` transaction, retrying a
/// version conflict at most [`crate::MAX_CONFLICT_RETRIES`] times.
macro_rules! in_write_tx {
    ($self:ident, |$conn:ident, $now:ident| $body:expr) => {{
        let mut last_conflict = leasehold_core::JobId(0);
        let mut answer = None;
        for _ in 0..=$crate::MAX_CONFLICT_RETRIES {
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
                    answer = Some(v);
                    break;
                }
                Err(leasehold_core::StoreError::Conflict(id)) => {
                    tx.rollback().await;
                    last_conflict = id;
                }
                Err(e) => {
                    tx.rollback().await;
                    return Err(e);
                }
            }
        }
        answer.ok_or(leasehold_core::StoreError::Conflict(last_conflict))
    }};
}
