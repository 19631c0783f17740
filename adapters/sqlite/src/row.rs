//! Mapping between [`JobRecord`] and the `leasehold_jobs` row: this
//! driver's typed column reads; the encoding itself is
//! `leasehold_core::columns`, shared with the other SQL adapter.

use leasehold_core::columns::JobColumns;
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
    JobColumns {
        id: get(row, 0)?,
        queue: get(row, 1)?,
        payload: get(row, 2)?,
        priority: get(row, 3)?,
        run_at: get(row, 4)?,
        state: get(row, 5)?,
        attempt: get(row, 6)?,
        max_attempts: get(row, 7)?,
        token: get(row, 8)?,
        holder: get(row, 9)?,
        expires_at: get(row, 10)?,
        cancel_requested: get(row, 11)?,
        result: get(row, 12)?,
        error: get(row, 13)?,
        released_token: get(row, 14)?,
        released_digest: get(row, 15)?,
        idempotency_key: get(row, 16)?,
        version: get(row, 17)?,
        created_at: get(row, 18)?,
        updated_at: get(row, 19)?,
    }
    .into_record()
}
