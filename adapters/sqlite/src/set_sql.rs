//! Set-based statements: many rows loaded, written or logged by one
//! statement, so a batch costs a few statements instead of a few per job.
//!
//! The protocol stays in the core: these only load rows, and persist rows
//! the core's transitions produced, each guarded by the version it was
//! loaded at (`WHERE id = … AND version = …`, per row). A write that
//! changes fewer rows than it was given means a concurrent writer won: the
//! caller's transaction answers [`StoreError::Conflict`] and is retried.
//!
//! Bounds: every statement carries at most a fixed number of rows, far
//! below SQLite's variable limit (32,766 in the bundled build); longer
//! inputs are split into several statements of the same transaction.

use crate::error;
use crate::one_row::bind_lease_columns;
use crate::row_set::{decode_rows, MAX_AGG_ROWS, ROW_JSON};
use leasehold_core::{Event, JobId, JobRecord, StoreError};
use leasehold_sql::job_columns::to_i64;
use sqlx::SqliteConnection;
use std::collections::BTreeMap;

/// Most ids one load statement carries (as one JSON array parameter): its
/// rows come back as one aggregated value (`row_set`).
pub(crate) const MAX_LOAD_IDS: usize = MAX_AGG_ROWS;
/// Most rows one update statement writes (15 variables each; a power of
/// two, see [`padded`]).
pub(crate) const MAX_UPDATE_ROWS: usize = 512;
/// Most audit events one insert statement writes (5 variables each; a
/// power of two, see [`padded`]).
pub(crate) const MAX_EVENT_ROWS: usize = 1_024;

/// The number of VALUES tuples a statement of `n` rows is given: `n`
/// rounded up to a power of two, the rest filled with all-NULL tuples that
/// match no row. So a few statement texts serve every batch size and stay
/// prepared in the connection's statement cache: parsing and planning a
/// statement of hundreds of tuples on every batch cost more than running it.
fn padded(n: usize) -> usize {
    n.next_power_of_two()
}

/// Rows the core changed (each with the version it was loaded at) and the
/// events of those changes, in the order the transitions ran.
#[derive(Default)]
pub(crate) struct WriteSet {
    rows: Vec<(JobRecord, u64)>,
    events: Vec<Event>,
}

impl WriteSet {
    /// Adds a changed row, loaded at `loaded_version`.
    pub(crate) fn push_row(&mut self, record: JobRecord, loaded_version: u64) {
        self.rows.push((record, loaded_version));
    }

    /// Adds an audit event.
    pub(crate) fn push_event(&mut self, event: Event) {
        self.events.push(event);
    }

    /// Writes the rows (version-checked) and, when `audit`, the events;
    /// leaves the set empty.
    pub(crate) async fn flush(
        &mut self,
        conn: &mut SqliteConnection,
        audit: bool,
    ) -> Result<(), StoreError> {
        let rows = std::mem::take(&mut self.rows);
        let events = std::mem::take(&mut self.events);
        update_rows(conn, &rows).await?;
        if audit {
            insert_events(conn, &events).await?;
        }
        Ok(())
    }
}

/// Loads the rows of `ids` (any order, duplicates allowed), by id. Ids
/// without a row, or too large to be stored, are simply absent.
pub(crate) async fn load_rows(
    conn: &mut SqliteConnection,
    ids: &[JobId],
) -> Result<BTreeMap<JobId, JobRecord>, StoreError> {
    let mut wanted: Vec<i64> = ids.iter().filter_map(|id| to_i64(id.0).ok()).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let sql = format!(
        "SELECT json_group_array({ROW_JSON}) FROM leasehold_jobs \
         WHERE id IN (SELECT value FROM json_each(?))"
    );
    let mut out = BTreeMap::new();
    for chunk in wanted.chunks(MAX_LOAD_IDS) {
        let json = serde_json::to_string(chunk)
            .map_err(|e| StoreError::Corrupt(format!("id list encoding: {e}")))?;
        let rows: Option<String> = sqlx::query_scalar(&sql)
            .bind(json)
            .fetch_one(&mut *conn)
            .await
            .map_err(error::map)?;
        for record in decode_rows(rows.as_deref())? {
            out.insert(record.id, record);
        }
    }
    Ok(out)
}

/// Writes `rows` over the versions they were loaded at, in statements of at
/// most [`MAX_UPDATE_ROWS`]; a row not written is a conflict.
async fn update_rows(
    conn: &mut SqliteConnection,
    rows: &[(JobRecord, u64)],
) -> Result<(), StoreError> {
    for chunk in rows.chunks(MAX_UPDATE_ROWS) {
        let size = padded(chunk.len());
        let tuples = vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"; size].join(", ");
        // `v.columnN` are the VALUES columns, in the order bound below.
        let sql = format!(
            "UPDATE leasehold_jobs SET run_at = v.column3, state = v.column4, \
             attempt = v.column5, token = v.column6, holder = v.column7, \
             expires_at = v.column8, cancel_requested = v.column9, result = v.column10, \
             error = v.column11, released_token = v.column12, released_digest = v.column13, \
             version = v.column14, updated_at = v.column15 \
             FROM (VALUES {tuples}) AS v \
             WHERE leasehold_jobs.id = v.column1 AND leasehold_jobs.version = v.column2"
        );
        let mut q = sqlx::query(&sql);
        for (r, loaded) in chunk {
            q = q
                .bind(to_i64(r.id.0)?)
                .bind(to_i64(*loaded)?)
                .bind(r.run_at.0)
                .bind(r.state.as_str())
                .bind(i64::from(r.attempt));
            q = bind_lease_columns(q, r)?
                .bind(to_i64(r.version)?)
                .bind(r.updated_at.0);
        }
        for _ in chunk.len()..size {
            // `id = NULL` matches no row.
            for _ in 0..15 {
                q = q.bind(None::<i64>);
            }
        }
        let res = q.execute(&mut *conn).await.map_err(error::map)?;
        if res.rows_affected() != chunk.len() as u64 {
            // Which row lost is not known here; the retry re-reads them all.
            return Err(StoreError::Conflict(chunk[0].0.id));
        }
    }
    Ok(())
}

/// Appends `events` to the audit log in order, in statements of at most
/// [`MAX_EVENT_ROWS`].
async fn insert_events(conn: &mut SqliteConnection, events: &[Event]) -> Result<(), StoreError> {
    for chunk in events.chunks(MAX_EVENT_ROWS) {
        let size = padded(chunk.len());
        let tuples = vec!["(?, ?, ?, ?, ?)"; size].join(", ");
        // `column5` keeps the events in order (their `seq`); padding tuples
        // have a NULL job and are skipped.
        let sql = format!(
            "INSERT INTO lease_events (job_id, version, at, event) \
             SELECT column1, column2, column3, column4 FROM (VALUES {tuples}) \
             WHERE column1 IS NOT NULL ORDER BY column5"
        );
        let mut q = sqlx::query(&sql);
        for (i, e) in chunk.iter().enumerate() {
            let json = serde_json::to_string(e)
                .map_err(|err| StoreError::Corrupt(format!("event encoding: {err}")))?;
            q = q
                .bind(to_i64(e.job.0)?)
                .bind(to_i64(e.version)?)
                .bind(e.at.0)
                .bind(json)
                .bind(i as i64);
        }
        for _ in chunk.len()..size {
            for _ in 0..5 {
                q = q.bind(None::<i64>);
            }
        }
        q.execute(&mut *conn).await.map_err(error::map)?;
    }
    Ok(())
}
