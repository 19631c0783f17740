//! Mapping `sqlx` errors onto [`StoreError`].
//!
//! Anything that may have left the outcome unknown (I/O, a closed pool, a
//! busy database past its timeout, an error at commit) is
//! [`StoreError::Unavailable`]. Undecodable rows are [`StoreError::Corrupt`].
//! A unique violation is reported to the caller, which re-reads the row.

use leasehold_core::StoreError;

/// Whether `e` is a unique-constraint violation (a concurrent insert of the
/// same idempotency key).
pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// Maps an error from a statement inside a transaction or a read.
pub(crate) fn map(e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::Decode(_)
        | sqlx::Error::ColumnNotFound(_)
        | sqlx::Error::ColumnIndexOutOfBounds { .. } => StoreError::Corrupt(e.to_string()),
        other => StoreError::Unavailable(format!("sqlite: {other}")),
    }
}

/// Maps an error from `COMMIT`: the outcome is unknown whatever it was.
pub(crate) fn map_commit(e: sqlx::Error) -> StoreError {
    StoreError::Unavailable(format!("sqlite commit: {e}"))
}
