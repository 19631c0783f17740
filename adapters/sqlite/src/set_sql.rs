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
use crate::one_row::{bind_lease_columns, JobQuery};
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
    /// leaves the set empty. When the rows fit one update statement and the
    /// events one insert, both go in one execution (one hand-off to the
    /// connection's thread instead of two).
    pub(crate) async fn flush(
        &mut self,
        conn: &mut SqliteConnection,
        audit: bool,
    ) -> Result<(), StoreError> {
        let rows = std::mem::take(&mut self.rows);
        let events = if audit {
            std::mem::take(&mut self.events)
        } else {
            Vec::new()
        };
        self.events.clear();
        let one_each = (1..=MAX_UPDATE_ROWS).contains(&rows.len())
            && (1..=MAX_EVENT_ROWS).contains(&events.len());
        if !one_each {
            update_rows(conn, &rows).await?;
            return insert_events(conn, &events).await;
        }
        let sql = format!(
            "{}; {}",
            update_sql(padded(rows.len())),
            events_sql(padded(events.len()))
        );
        let q = bind_events(bind_rows(sqlx::query(&sql), &rows)?, &events)?;
        let res = q.execute(&mut *conn).await.map_err(error::map)?;
        // The changes of both statements: every event is inserted, so the
        // sum falls short exactly when a row was not written.
        if res.rows_affected() != (rows.len() + events.len()) as u64 {
            // Which row lost is not known here; the retry re-reads them all.
            return Err(StoreError::Conflict(rows[0].0.id));
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
        let sql = update_sql(padded(chunk.len()));
        let res = bind_rows(sqlx::query(&sql), chunk)?
            .execute(&mut *conn)
            .await
            .map_err(error::map)?;
        if res.rows_affected() != chunk.len() as u64 {
            // Which row lost is not known here; the retry re-reads them all.
            return Err(StoreError::Conflict(chunk[0].0.id));
        }
    }
    Ok(())
}

/// The update of `size` rows, each over the version it was loaded at:
/// [`bind_rows`] binds it.
fn update_sql(size: usize) -> String {
    let tuples = vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"; size].join(", ");
    // `v.columnN` are the VALUES columns, in the order bound below.
    format!(
        "UPDATE leasehold_jobs SET run_at = v.column3, state = v.column4, \
         attempt = v.column5, token = v.column6, holder = v.column7, \
         expires_at = v.column8, cancel_requested = v.column9, result = v.column10, \
         error = v.column11, released_token = v.column12, released_digest = v.column13, \
         version = v.column14, updated_at = v.column15 \
         FROM (VALUES {tuples}) AS v \
         WHERE leasehold_jobs.id = v.column1 AND leasehold_jobs.version = v.column2"
    )
}

/// Binds `rows` into [`update_sql`]`(padded(rows.len()))`, then the
/// padding tuples.
fn bind_rows<'q>(
    mut q: JobQuery<'q>,
    rows: &'q [(JobRecord, u64)],
) -> Result<JobQuery<'q>, StoreError> {
    for (r, loaded) in rows {
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
    for _ in rows.len()..padded(rows.len()) {
        // `id = NULL` matches no row.
        for _ in 0..15 {
            q = q.bind(None::<i64>);
        }
    }
    Ok(q)
}

/// Appends `events` to the audit log in order, in statements of at most
/// [`MAX_EVENT_ROWS`].
async fn insert_events(conn: &mut SqliteConnection, events: &[Event]) -> Result<(), StoreError> {
    for chunk in events.chunks(MAX_EVENT_ROWS) {
        let sql = events_sql(padded(chunk.len()));
        bind_events(sqlx::query(&sql), chunk)?
            .execute(&mut *conn)
            .await
            .map_err(error::map)?;
    }
    Ok(())
}

/// The insert of `size` audit events in order: [`bind_events`] binds it.
fn events_sql(size: usize) -> String {
    let tuples = vec!["(?, ?, ?, ?, ?)"; size].join(", ");
    // `column5` keeps the events in order (their `seq`); padding tuples
    // have a NULL job and are skipped.
    format!(
        "INSERT INTO lease_events (job_id, version, at, event) \
         SELECT column1, column2, column3, column4 FROM (VALUES {tuples}) \
         WHERE column1 IS NOT NULL ORDER BY column5"
    )
}

/// Binds `events` into [`events_sql`]`(padded(events.len()))`, then the
/// padding tuples.
fn bind_events<'q>(mut q: JobQuery<'q>, events: &[Event]) -> Result<JobQuery<'q>, StoreError> {
    for (i, e) in events.iter().enumerate() {
        let json = serde_json::to_string(e)
            .map_err(|err| StoreError::Corrupt(format!("event encoding: {err}")))?;
        q = q
            .bind(to_i64(e.job.0)?)
            .bind(to_i64(e.version)?)
            .bind(e.at.0)
            .bind(json)
            .bind(i as i64);
    }
    for _ in events.len()..padded(events.len()) {
        for _ in 0..5 {
            q = q.bind(None::<i64>);
        }
    }
    Ok(q)
}
