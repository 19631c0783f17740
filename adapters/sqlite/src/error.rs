//! Mapping `sqlx` errors onto [`StoreError`].
//!
//! Anything that may have left the outcome unknown (I/O, a closed pool, a
//! busy database past its timeout, an error at commit) is
//! [`StoreError::Unavailable`]. Undecodable rows are [`StoreError::Corrupt`].
//! A unique violation is reported to the caller, which re-reads the row.
//!
//! A file system that ran out of space is `Unavailable` too (a worker
//! retries it, and the store heals once space is freed), but its message
//! names the cause: `disk full (SQLITE_FULL)`, or `disk I/O error
//! (SQLITE_IOERR)` for a write the operating system refused otherwise (a
//! file size limit, a failing disk), so an operator reading a log sees it.

use leasehold_core::StoreError;

/// SQLite's primary result code for a failed read or write of a file.
const SQLITE_IOERR: i32 = 10;
/// SQLite's primary result code for a full file system (or database).
const SQLITE_FULL: i32 = 13;

/// Whether `e` is a unique-constraint violation (a concurrent insert of the
/// same idempotency key).
pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// What an error says about the storage under the file, for the message:
/// empty unless SQLite answered `SQLITE_FULL` or `SQLITE_IOERR`.
fn storage_cause(e: &sqlx::Error) -> &'static str {
    let sqlx::Error::Database(db) = e else {
        return "";
    };
    match db
        .code()
        .and_then(|c| c.parse::<i32>().ok())
        .map(|c| c & 0xff)
    {
        Some(SQLITE_FULL) => "disk full (SQLITE_FULL): ",
        Some(SQLITE_IOERR) => {
            "disk I/O error (SQLITE_IOERR: no space, a file size limit or a failing disk): "
        }
        _ => "",
    }
}

/// Maps an error from a statement inside a transaction or a read.
pub(crate) fn map(e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::Decode(_)
        | sqlx::Error::ColumnNotFound(_)
        | sqlx::Error::ColumnIndexOutOfBounds { .. } => StoreError::Corrupt(e.to_string()),
        other => StoreError::Unavailable(format!("sqlite: {}{other}", storage_cause(&other))),
    }
}

/// Maps an error from `COMMIT`: the outcome is unknown whatever it was.
pub(crate) fn map_commit(e: sqlx::Error) -> StoreError {
    StoreError::Unavailable(format!("sqlite commit: {}{e}", storage_cause(&e)))
}
