//! Mapping between [`JobRecord`] and the `leasehold_jobs` row: this
//! driver's typed column reads; the encoding itself is
//! `leasehold_core::columns`, shared with the other SQL adapter.

use leasehold_core::{JobRecord, StoreError};
use sqlx::sqlite::SqliteRow;
use sqlx::Row;

pub(crate) use leasehold_core::columns::{to_i64, COLUMNS};

fn get<'r, T: sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite>>(
    row: &'r SqliteRow,
    i: usize,
) -> Result<T, StoreError> {
    row.try_get(i)
        .map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// Decodes the [`COLUMNS`] of `row`, starting at column 0, and checks the
/// row invariants (the column encoding lives in `leasehold_core::columns`).
pub(crate) fn decode(row: &SqliteRow) -> Result<JobRecord, StoreError> {
    leasehold_core::read_job_columns!(get, row).into_record()
}
