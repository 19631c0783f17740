//! Many job rows read as **one** value: a JSON array of row arrays built by
//! SQLite (`json_group_array`), decoded here into [`JobColumns`].
//!
//! Why: the driver hands each result row from its SQLite thread to the
//! async side as a separate message with one allocation per column; on the
//! batch paths (a batch's release rows, a claim's candidates) that per-row
//! hand-off, not SQLite, was the larger cost. One aggregated value per
//! statement removes it. Blobs travel as hex text (`hex()`), decoded here;
//! the decoded columns go through the same checks as any row
//! (`JobColumns::into_record`).
//!
//! Bound: a statement aggregates at most [`MAX_AGG_ROWS`] rows, so one
//! value stays far below SQLite's string limit (1e9 bytes) even with
//! payloads at their cap.

use leasehold_core::{JobRecord, StoreError};
use leasehold_sql::job_columns::JobColumns;
use serde::Deserialize;

/// Most rows one aggregated statement returns.
pub(crate) const MAX_AGG_ROWS: usize = 200;

/// One row as a JSON array, in the order of [`Wire`]'s fields. A NULL
/// result stays NULL (`hex(NULL)` would be the empty blob).
pub(crate) const ROW_JSON: &str = "json_array(id, queue, hex(payload), priority, run_at, state, \
     attempt, max_attempts, token, holder, expires_at, cancel_requested, \
     CASE WHEN result IS NULL THEN NULL ELSE hex(result) END, error, released_token, \
     released_digest, idempotency_key, version, created_at, updated_at)";

/// A row as [`ROW_JSON`] encodes it (a JSON array maps onto the fields in
/// order).
#[derive(Deserialize)]
struct Wire(
    i64,
    String,
    String,
    i32,
    i64,
    String,
    i64,
    i64,
    i64,
    Option<String>,
    Option<i64>,
    i64,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<String>,
    i64,
    i64,
    i64,
);

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("aggregated row: {what}"))
}

fn unhex(s: &str) -> Result<Vec<u8>, StoreError> {
    fn nibble(c: u8) -> Result<u8, StoreError> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            _ => Err(corrupt("bad hex digit")),
        }
    }
    let b = s.as_bytes();
    if b.len() % 2 != 0 {
        return Err(corrupt("odd hex length"));
    }
    b.chunks_exact(2)
        .map(|p| Ok(nibble(p[0])? << 4 | nibble(p[1])?))
        .collect()
}

/// Decodes the aggregated value (`NULL` when no row matched) into records,
/// each checked like any row.
pub(crate) fn decode_rows(json: Option<&str>) -> Result<Vec<JobRecord>, StoreError> {
    let Some(json) = json else {
        return Ok(Vec::new());
    };
    let wires: Vec<Wire> = serde_json::from_str(json).map_err(corrupt)?;
    wires
        .into_iter()
        .map(|w| {
            JobColumns {
                id: w.0,
                queue: w.1,
                payload: unhex(&w.2)?,
                priority: w.3,
                run_at: w.4,
                state: w.5,
                attempt: w.6,
                max_attempts: w.7,
                token: w.8,
                holder: w.9,
                expires_at: w.10,
                cancel_requested: w.11 != 0,
                result: w.12.as_deref().map(unhex).transpose()?,
                error: w.13,
                released_token: w.14,
                released_digest: w.15,
                idempotency_key: w.16,
                version: w.17,
                created_at: w.18,
                updated_at: w.19,
            }
            .into_record()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_garbage() {
        assert_eq!(unhex("00ff7A").unwrap(), vec![0, 255, 0x7a]);
        assert_eq!(unhex("").unwrap(), Vec::<u8>::new());
        assert!(unhex("abc").is_err());
        assert!(unhex("zz").is_err());
    }

    #[test]
    fn bad_json_is_a_corrupt_row_not_a_panic() {
        assert!(matches!(
            decode_rows(Some("[[1]]")),
            Err(StoreError::Corrupt(_))
        ));
        assert!(decode_rows(None).unwrap().is_empty());
    }
}
