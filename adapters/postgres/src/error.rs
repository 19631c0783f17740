//! Mapping `sqlx` errors onto [`StoreError`].
//!
//! - A lost connection, a closed or exhausted pool, a server shutting down,
//!   any error at `COMMIT`, and every other server error are
//!   [`StoreError::Unavailable`]: the caller cannot tell whether the request
//!   committed, and must retry idempotently.
//! - A serialization failure, a deadlock, or a unique violation (an
//!   idempotency key inserted concurrently) aborts the transaction with
//!   nothing changed: the operation is retried, re-reading the rows, as a
//!   version conflict is.
//! - Undecodable rows are [`StoreError::Corrupt`].

use leasehold_core::{JobId, StoreError};

/// SQLSTATEs after which the transaction is retried from the start.
const RETRY_CODES: [&str; 3] = ["40001", "40P01", "23505"];

/// Maps an error from a statement inside a transaction, or a read.
pub(crate) fn map(e: sqlx::Error) -> StoreError {
    match &e {
        sqlx::Error::Database(db) => {
            let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
            if RETRY_CODES.contains(&code.as_str()) {
                StoreError::Conflict(JobId(0))
            } else {
                StoreError::Unavailable(format!("postgres error {code}: {}", db.message()))
            }
        }
        sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::Decode(_)
        | sqlx::Error::ColumnNotFound(_)
        | sqlx::Error::ColumnIndexOutOfBounds { .. } => StoreError::Corrupt(e.to_string()),
        _ => StoreError::Unavailable(format!("postgres: {e}")),
    }
}

/// Maps an error from `COMMIT`: whatever it was, the outcome is unknown.
pub(crate) fn map_commit(e: sqlx::Error) -> StoreError {
    StoreError::Unavailable(format!("postgres commit: {e}"))
}

#[cfg(test)]
mod tests {
    use super::{map, map_commit};
    use leasehold_core::StoreError;

    /// A row the adapter cannot read is corruption, not an outage: the
    /// caller must not retry it as if the database were away.
    #[test]
    fn undecodable_rows_are_corrupt_and_outages_unavailable() {
        let corrupt = [
            sqlx::Error::ColumnNotFound("state".into()),
            sqlx::Error::ColumnIndexOutOfBounds { index: 30, len: 21 },
            sqlx::Error::Decode("not a job state".into()),
            sqlx::Error::ColumnDecode {
                index: "payload".into(),
                source: "bytes expected".into(),
            },
        ];
        for e in corrupt {
            let what = e.to_string();
            assert!(matches!(map(e), StoreError::Corrupt(_)), "{what}");
        }
        assert!(matches!(
            map(sqlx::Error::PoolTimedOut),
            StoreError::Unavailable(_)
        ));
        assert!(matches!(
            map(sqlx::Error::PoolClosed),
            StoreError::Unavailable(_)
        ));
        assert!(matches!(
            map_commit(sqlx::Error::ColumnNotFound("x".into())),
            StoreError::Unavailable(_)
        ));
    }
}
