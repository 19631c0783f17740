//! How a [`JobRecord`] is stored in SQL columns (table `leasehold_jobs`).
//!
//! Unsigned values are stored as signed 64-bit integers: ids, tokens and
//! versions must fit (a value that does not is a corrupt row), and the
//! outcome digest keeps its bit pattern. A decoded row must pass
//! [`JobRecord::check_invariants`]; one that does not is reported as
//! [`StoreError::Corrupt`], never used.

use crate::column::SqlRow;
use leasehold_core::{
    JobId, JobRecord, JobState, ReleaseMark, StoreError, StoreTime, Token, WorkerId,
};

/// The job columns, in the order of [`JobColumns`]' fields.
pub const COLUMNS: &str = "id, queue, payload, priority, run_at, state, attempt, \
     max_attempts, token, holder, expires_at, cancel_requested, result, error, \
     released_token, released_digest, idempotency_key, version, created_at, updated_at";

/// Decodes the [`COLUMNS`] of `row`, starting at column 0, and checks the
/// row invariants ([`JobColumns::into_record`]).
pub fn decode_job<R: SqlRow>(row: &R) -> Result<JobRecord, StoreError> {
    JobColumns {
        id: row.column(0)?,
        queue: row.column(1)?,
        payload: row.column(2)?,
        priority: row.column(3)?,
        run_at: row.column(4)?,
        state: row.column(5)?,
        attempt: row.column(6)?,
        max_attempts: row.column(7)?,
        token: row.column(8)?,
        holder: row.column(9)?,
        expires_at: row.column(10)?,
        cancel_requested: row.column(11)?,
        result: row.column(12)?,
        error: row.column(13)?,
        released_token: row.column(14)?,
        released_digest: row.column(15)?,
        idempotency_key: row.column(16)?,
        version: row.column(17)?,
        created_at: row.column(18)?,
        updated_at: row.column(19)?,
    }
    .into_record()
}

/// One row's columns as read from SQL, before validation.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // one field per column of [`COLUMNS`], same names
pub struct JobColumns {
    pub id: i64,
    pub queue: String,
    pub payload: Vec<u8>,
    pub priority: i32,
    pub run_at: i64,
    pub state: String,
    pub attempt: i64,
    pub max_attempts: i64,
    pub token: i64,
    pub holder: Option<String>,
    pub expires_at: Option<i64>,
    pub cancel_requested: bool,
    pub result: Option<Vec<u8>>,
    pub error: Option<String>,
    pub released_token: Option<i64>,
    pub released_digest: Option<i64>,
    pub idempotency_key: Option<String>,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(what.to_string())
}

/// A `u64` as stored: it must fit an `i64`.
pub fn to_i64(v: u64) -> Result<i64, StoreError> {
    i64::try_from(v).map_err(|_| corrupt(format!("value {v} does not fit a signed 64-bit column")))
}

fn to_u64(v: i64, what: &str) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| corrupt(format!("negative {what}: {v}")))
}

fn to_u32(v: i64, what: &str) -> Result<u32, StoreError> {
    u32::try_from(v).map_err(|_| corrupt(format!("{what} out of range: {v}")))
}

impl JobColumns {
    /// Validates the columns into a record.
    pub fn into_record(self) -> Result<JobRecord, StoreError> {
        let released = match (self.released_token, self.released_digest) {
            (Some(t), Some(d)) => Some(ReleaseMark {
                token: Token(to_u64(t, "released_token")?),
                digest: d as u64,
            }),
            (None, None) => None,
            _ => return Err(corrupt("released_token and released_digest set apart")),
        };
        let state = JobState::parse(&self.state)
            .ok_or_else(|| corrupt(format!("state {:?}", self.state)))?;
        let record = JobRecord {
            id: JobId(to_u64(self.id, "id")?),
            queue: self.queue,
            payload: self.payload,
            priority: self.priority,
            run_at: StoreTime(self.run_at),
            state,
            attempt: to_u32(self.attempt, "attempt")?,
            max_attempts: to_u32(self.max_attempts, "max_attempts")?,
            token: Token(to_u64(self.token, "token")?),
            holder: self.holder.map(WorkerId),
            expires_at: self.expires_at.map(StoreTime),
            cancel_requested: self.cancel_requested,
            result: self.result,
            error: self.error,
            released,
            idempotency_key: self.idempotency_key,
            version: to_u64(self.version, "version")?,
            created_at: StoreTime(self.created_at),
            updated_at: StoreTime(self.updated_at),
        };
        record.check_invariants().map_err(corrupt)?;
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending() -> JobColumns {
        JobColumns {
            id: 1,
            queue: "q".into(),
            payload: vec![],
            priority: 0,
            run_at: 0,
            state: "pending".into(),
            attempt: 0,
            max_attempts: 3,
            token: 0,
            holder: None,
            expires_at: None,
            cancel_requested: false,
            result: None,
            error: None,
            released_token: None,
            released_digest: None,
            idempotency_key: None,
            version: 1,
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn a_valid_row_decodes_and_a_digest_keeps_its_bits() {
        let mut c = pending();
        c.released_token = Some(0);
        c.released_digest = Some(-1);
        let r = c.into_record().unwrap();
        assert_eq!(r.released.unwrap().digest, u64::MAX);
        assert_eq!(r.state, JobState::Pending);
    }

    #[test]
    fn corrupt_rows_are_reported_not_used() {
        type Breaker = fn(&mut JobColumns);
        let cases: Vec<(Breaker, &str)> = vec![
            (|c| c.state = "paused".into(), "state"),
            (|c| c.id = -1, "negative id"),
            (|c| c.attempt = 1 << 40, "attempt out of range"),
            (|c| c.released_token = Some(1), "set apart"),
            (|c| c.state = "running".into(), "holder"),
        ];
        for (break_it, needle) in cases {
            let mut c = pending();
            break_it(&mut c);
            let err = c.into_record().unwrap_err().to_string();
            assert!(err.contains(needle), "{err} should mention {needle}");
        }
        assert!(to_i64(u64::MAX).is_err());
    }
}
