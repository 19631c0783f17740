//! One `BEGIN IMMEDIATE` transaction per operation: [`in_write_tx!`] runs
//! an operation's body under the write lock with the store time read once
//! the lock is held, and retries a version conflict.
//!
//! Under the simulator's statement scheduler a write first takes the
//! store's write lock through [`write_lock`], which never waits inside the
//! lock: a lock held by another transaction of this store is answered at
//! the transaction's gate as blocked, and tried again when the scheduler
//! next chooses it. Every write holds the lock for its whole transaction,
//! so SQLite's writes never interleave; the scheduler chooses their order
//! and, before `COMMIT`, lets other requests' steps run.

use leasehold_core::statement_gate::{self, Step};
use tokio::sync::{Mutex, MutexGuard};

/// Most times a gated write finds the lock held before it waits for it
/// as an ungated one does (the scheduler's own step bound ends a run far
/// sooner).
const MAX_GATED_TRIES: u32 = 100_000;

/// Takes the store's write lock: as a plain wait outside the simulator's
/// scheduler; under it, by trying, and answering each held lock at the
/// gate as blocked (see the module docs).
pub(crate) async fn write_lock(lock: &Mutex<()>) -> MutexGuard<'_, ()> {
    if !statement_gate::armed() {
        return lock.lock().await;
    }
    statement_gate::step(Step::Before("begin")).await;
    for _ in 0..MAX_GATED_TRIES {
        if let Ok(guard) = lock.try_lock() {
            return guard;
        }
        statement_gate::step(Step::Blocked("write lock")).await;
    }
    lock.lock().await
}

/// The simulator's yield point before the statement `what`: ready at once
/// outside its scheduler.
pub(crate) async fn gate(what: &'static str) {
    statement_gate::step(Step::Before(what)).await;
}

/// Runs `$body` (an expression using `$conn: &mut SqliteConnection` and
/// `$now: StoreTime`) in one `BEGIN IMMEDIATE` transaction, retrying a
/// version conflict at most [`crate::MAX_CONFLICT_RETRIES`] times.
macro_rules! in_write_tx {
    ($self:ident, |$conn:ident, $now:ident| $body:expr) => {{
        let mut retries = leasehold_sql::conflict_retry::Retries::new($crate::MAX_CONFLICT_RETRIES);
        loop {
            let _writer = $crate::tx::write_lock(&$self.shared.write_lock).await;
            let mut tx = $crate::write_conn::WriteConn::begin(
                &$self.shared.kept_writer,
                &$self.shared.writers,
                $self.shared.busy_timeout,
            )
            .await?;
            let $now = $self.shared.clock.now();
            let result = {
                let $conn: &mut sqlx::sqlite::SqliteConnection = tx.conn();
                $body
            };
            match result {
                Ok(v) => {
                    // SQLite has no serialization failures to raise: only
                    // an armed stall (the caller drops us here) applies.
                    let _ = $self.shared.tx_faults.at_commit().await;
                    $crate::tx::gate("commit").await;
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
