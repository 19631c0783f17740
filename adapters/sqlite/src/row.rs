//! Mapping between [`JobRecord`] and the `leasehold_jobs` row.
//!
//! Unsigned values are stored as signed 64-bit integers: ids, tokens and
//! versions must fit (a value that does not is a corrupt row), and the
//! outcome digest keeps its bit pattern.

use leasehold_core::{
    JobId, JobRecord, JobState, ReleaseMark, StoreError, StoreTime, Token, WorkerId,
};
use sqlx::sqlite::SqliteRow;
use sqlx::Row;

/// The job columns, in the order [`decode`] reads them.
pub(crate) const COLUMNS: &str = "id, queue, payload, priority, run_at, state, attempt, \
     max_attempts, token, holder, expires_at, cancel_requested, result, error, \
     released_token, released_digest, idempotency_key, version, created_at, updated_at";

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(what.to_string())
}

/// A `u64` as stored: it must fit an `i64`.
pub(crate) fn to_i64(v: u64) -> Result<i64, StoreError> {
    i64::try_from(v).map_err(|_| corrupt(format!("value {v} does not fit a signed 64-bit column")))
}

fn to_u64(v: i64, what: &str) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| corrupt(format!("negative {what}: {v}")))
}

fn to_u32(v: i64, what: &str) -> Result<u32, StoreError> {
    u32::try_from(v).map_err(|_| corrupt(format!("{what} out of range: {v}")))
}

fn get<'r, T: sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite>>(
    row: &'r SqliteRow,
    i: usize,
) -> Result<T, StoreError> {
    row.try_get(i).map_err(corrupt)
}

/// Decodes the [`COLUMNS`] of `row`, starting at column 0, and checks the
/// row invariants.
pub(crate) fn decode(row: &SqliteRow) -> Result<JobRecord, StoreError> {
    let state: String = get(row, 5)?;
    let released_token: Option<i64> = get(row, 14)?;
    let released_digest: Option<i64> = get(row, 15)?;
    let released = match (released_token, released_digest) {
        (Some(t), Some(d)) => Some(ReleaseMark {
            token: Token(to_u64(t, "released_token")?),
            digest: d as u64,
        }),
        (None, None) => None,
        _ => return Err(corrupt("released_token and released_digest set apart")),
    };
    let record = JobRecord {
        id: JobId(to_u64(get(row, 0)?, "id")?),
        queue: get(row, 1)?,
        payload: get(row, 2)?,
        priority: get(row, 3)?,
        run_at: StoreTime(get(row, 4)?),
        state: JobState::parse(&state).ok_or_else(|| corrupt(format!("state {state:?}")))?,
        attempt: to_u32(get(row, 6)?, "attempt")?,
        max_attempts: to_u32(get(row, 7)?, "max_attempts")?,
        token: Token(to_u64(get(row, 8)?, "token")?),
        holder: get::<Option<String>>(row, 9)?.map(WorkerId),
        expires_at: get::<Option<i64>>(row, 10)?.map(StoreTime),
        cancel_requested: get(row, 11)?,
        result: get(row, 12)?,
        error: get(row, 13)?,
        released,
        idempotency_key: get(row, 16)?,
        version: to_u64(get(row, 17)?, "version")?,
        created_at: StoreTime(get(row, 18)?),
        updated_at: StoreTime(get(row, 19)?),
    };
    record.check_invariants().map_err(corrupt)?;
    Ok(record)
}
