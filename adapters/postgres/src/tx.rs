//! One transaction per operation: [`in_tx!`] runs an operation's body in
//! a transaction and retries a conflict, at most
//! [`crate::MAX_CONFLICT_RETRIES`] times; the simulator's injected
//! failures are raised by PostgreSQL itself ([`raise_injected`]).
//!
//! Under the simulator's statement scheduler every statement of a
//! transaction first awaits [`gate`] (`BEGIN` and `COMMIT` here, the
//! others where they are sent), and the transaction tells the scheduler
//! its backend pid ([`attach_session`]), so the scheduler can ask
//! PostgreSQL whether it waits on a lock. Unattached, both cost one
//! thread-local read.

use crate::error;
pub(crate) use leasehold_core::tx_faults::AtCommit;
use leasehold_core::{statement_gate, StoreError};
use sqlx::postgres::PgConnection;

/// Runs `$body` (an expression using `$conn: &mut PgConnection`) in one
/// transaction, retrying a conflict at most [`crate::MAX_CONFLICT_RETRIES`]
/// times.
macro_rules! in_tx {
    ($self:ident, |$conn:ident| $body:expr) => {{
        let mut retries = leasehold_sql::conflict_retry::Retries::new($crate::MAX_CONFLICT_RETRIES);
        loop {
            // A transaction dropped by its caller may still hold row locks
            // until its rollback is answered (`rollback.rs`).
            $self.rollbacks.settled().await;
            $crate::tx::gate("begin").await;
            let tx = $self.pool.begin().await.map_err($crate::error::map)?;
            let mut tx = $crate::rollback::TxGuard::new(tx, &$self.rollbacks);
            let result = match $crate::tx::attach_session(tx.conn()).await {
                Err(e) => Err(e),
                Ok(()) => {
                    let $conn: &mut sqlx::postgres::PgConnection = tx.conn();
                    $body
                }
            };
            let result = match result {
                Ok(v) => match $self.tx_faults.at_commit().await {
                    $crate::tx::AtCommit::Commit => Ok(v),
                    $crate::tx::AtCommit::Fail(code) => {
                        Err($crate::tx::raise_injected(tx.conn(), code).await)
                    }
                },
                Err(e) => Err(e),
            };
            match result {
                Ok(v) => {
                    $crate::tx::gate("commit").await;
                    tx.commit().await.map_err($crate::error::map_commit)?;
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

/// The simulator's yield point before the statement `what` (see the
/// module docs): ready at once outside the simulator's scheduler.
pub(crate) async fn gate(what: &'static str) {
    statement_gate::step(statement_gate::Step::Before(what)).await;
}

/// The simulator's yield point before the `SKIP LOCKED` scan `what` that
/// the transaction decides on (`Step::Decides`: under the simulator the
/// transaction takes effect there, not at its commit): ready at once
/// outside its scheduler.
pub(crate) async fn decides(what: &'static str) {
    statement_gate::step(statement_gate::Step::Decides(what)).await;
}

/// As [`decides`], for the scan of a transaction that only claims
/// (`Step::Claims`: under the simulator it waits while a sweep or a
/// release has decided and not committed, since it would skip their rows).
pub(crate) async fn claims(what: &'static str) {
    statement_gate::step(statement_gate::Step::Claims(what)).await;
}

/// Under the simulator's scheduler, tells it the backend pid of the
/// transaction's connection; otherwise does nothing (no statement).
pub(crate) async fn attach_session(conn: &mut PgConnection) -> Result<(), StoreError> {
    if !statement_gate::armed() {
        return Ok(());
    }
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(conn)
        .await
        .map_err(error::map)?;
    statement_gate::session(i64::from(pid));
    Ok(())
}

/// Makes PostgreSQL itself fail the open transaction with `sqlstate`
/// (the simulator's injected serialization or deadlock failure), and
/// answers the error the adapter maps it to.
pub(crate) async fn raise_injected(conn: &mut PgConnection, sqlstate: &str) -> StoreError {
    if !is_sqlstate(sqlstate) {
        return StoreError::Unavailable(format!("bad injected SQLSTATE {sqlstate:?}"));
    }
    let sql = format!(
        "DO $$ BEGIN RAISE EXCEPTION 'leasehold: injected failure' USING ERRCODE = '{sqlstate}'; END $$"
    );
    match sqlx::query(&sql).execute(conn).await {
        Err(e) => error::map(e),
        Ok(_) => StoreError::Unavailable("the injected failure was not raised".into()),
    }
}

/// Whether `s` has a SQLSTATE's shape (five letters or digits), so it can
/// be spliced into the `RAISE` of [`raise_injected`].
pub(crate) fn is_sqlstate(s: &str) -> bool {
    s.len() == 5 && s.chars().all(|c| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::is_sqlstate;

    /// Only a SQLSTATE's shape is spliced into the injected `RAISE`.
    #[test]
    fn only_sqlstates_are_raised() {
        for ok in ["40001", "40P01", "23505"] {
            assert!(is_sqlstate(ok), "{ok:?}");
        }
        for bad in ["", "4000", "400011", "40'01", "4000\u{e9}", "40 01"] {
            assert!(!is_sqlstate(bad), "{bad:?}");
        }
    }
}
