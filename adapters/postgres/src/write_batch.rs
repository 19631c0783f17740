//! Many job rows written by one statement: column arrays for PostgreSQL's
//! `UNNEST`, with the audit events of the same statement. The column
//! encoding itself is `leasehold_sql::job_columns`, shared with the other
//! SQL adapter.

use crate::{error, PgStore};
use leasehold_core::transition;
use leasehold_core::{JobId, JobRecord, StoreError};
use leasehold_sql::job_columns::to_i64;
use sqlx::postgres::PgConnection;
use sqlx::Row;

/// Column arrays for one `UPDATE … FROM UNNEST(…)` of many rows, plus the
/// audit events written by the same statement: one `leasehold_audit` row
/// per statement, holding the events as one JSON array in the order they
/// were applied (see `migrations/postgres/0003_leasehold_audit_rows.sql`).
#[derive(Default)]
pub(crate) struct Batch {
    id: Vec<i64>,
    old_version: Vec<i64>,
    run_at: Vec<i64>,
    state: Vec<&'static str>,
    attempt: Vec<i64>,
    lease: LeaseColumns,
    version: Vec<i64>,
    updated_at: Vec<i64>,
    // Insert-only columns.
    queue: Vec<String>,
    payload: Vec<Vec<u8>>,
    priority: Vec<i32>,
    max_attempts: Vec<i64>,
    idempotency_key: Vec<Option<String>>,
    created_at: Vec<i64>,
    // The audit events, as the JSON array one `leasehold_audit` row holds
    // (`None` while there are none: the statement then inserts no row).
    events: Option<String>,
    /// Whether the rows are written by id alone, without their version
    /// check: never, but under a catalogue race variant
    /// (`leasehold_sql::race_variants`).
    pub(crate) by_id: bool,
}

/// The lease columns of the rows, `token` … `released_digest`, in the
/// order both statements list them.
#[derive(Default)]
struct LeaseColumns {
    token: Vec<i64>,
    holder: Vec<Option<String>>,
    expires_at: Vec<Option<i64>>,
    cancel_requested: Vec<bool>,
    result: Vec<Option<Vec<u8>>>,
    error: Vec<Option<String>>,
    released_token: Vec<Option<i64>>,
    released_digest: Vec<Option<i64>>,
}

/// A statement of this module, with its arguments bound so far.
type PgQuery = sqlx::query::Query<'static, sqlx::Postgres, sqlx::postgres::PgArguments>;

impl LeaseColumns {
    /// Adds the lease columns of `r`.
    fn push(&mut self, r: &JobRecord) -> Result<(), StoreError> {
        self.token.push(to_i64(r.token.0)?);
        self.holder.push(r.holder.as_ref().map(|w| w.0.clone()));
        self.expires_at.push(r.expires_at.map(|t| t.0));
        self.cancel_requested.push(r.cancel_requested);
        self.result.push(r.result.clone());
        self.error.push(r.error.clone());
        self.released_token
            .push(r.released.map(|m| to_i64(m.token.0)).transpose()?);
        self.released_digest
            .push(r.released.map(|m| m.digest as i64));
        Ok(())
    }

    /// Binds the columns next, in their order.
    fn bind(self, q: PgQuery) -> PgQuery {
        q.bind(self.token)
            .bind(self.holder)
            .bind(self.expires_at)
            .bind(self.cancel_requested)
            .bind(self.result)
            .bind(self.error)
            .bind(self.released_token)
            .bind(self.released_digest)
    }
}

/// Writes the rows of a [`Batch`] over the versions they were loaded at.
pub(crate) const UPDATE_SQL: &str = "WITH u AS (\
    UPDATE leasehold_jobs AS j SET run_at = u.run_at, state = u.state, attempt = u.attempt, \
        token = u.token, holder = u.holder, expires_at = u.expires_at, \
        cancel_requested = u.cancel_requested, result = u.result, error = u.error, \
        released_token = u.released_token, released_digest = u.released_digest, \
        version = u.version, updated_at = u.updated_at \
    FROM UNNEST($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::bigint[], \
        $6::bigint[], $7::text[], $8::bigint[], $9::bool[], $10::bytea[], $11::text[], \
        $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[]) \
        AS u(id, old_version, run_at, state, attempt, token, holder, expires_at, \
             cancel_requested, result, error, released_token, released_digest, version, \
             updated_at) \
    WHERE j.id = u.id AND j.version = u.old_version \
    RETURNING j.id), \
e AS (INSERT INTO leasehold_audit (events) SELECT $16::json WHERE $16::text IS NOT NULL) \
SELECT COUNT(*) FROM u";

/// Inserts the rows of a [`Batch`] with their events, and announces the
/// queues on the notify channel `$21` (delivered at commit).
pub(crate) const INSERT_SQL: &str = "WITH i AS (\
    INSERT INTO leasehold_jobs (id, queue, payload, priority, run_at, state, attempt, \
        max_attempts, token, holder, expires_at, cancel_requested, result, error, \
        released_token, released_digest, idempotency_key, version, created_at, updated_at) \
    SELECT * FROM UNNEST($1::bigint[], $2::text[], $3::bytea[], $4::int[], $5::bigint[], \
        $6::text[], $7::bigint[], $8::bigint[], $9::bigint[], $10::text[], $11::bigint[], \
        $12::bool[], $13::bytea[], $14::text[], $15::bigint[], $16::bigint[], $17::text[], \
        $18::bigint[], $19::bigint[], $20::bigint[]) \
    RETURNING id), \
e AS (INSERT INTO leasehold_audit (events) SELECT $22::json WHERE $22::text IS NOT NULL) \
SELECT (SELECT COUNT(*) FROM i), \
    (SELECT COUNT(pg_notify($21, q)) FROM (SELECT DISTINCT unnest($2::text[]) AS q) qs)";

impl Batch {
    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        self.id.len()
    }

    /// The ids of the rows.
    pub(crate) fn ids(&self) -> impl Iterator<Item = leasehold_core::JobId> + '_ {
        // Non-negative: pushed through `to_i64` from a `u64`.
        self.id.iter().map(|&i| leasehold_core::JobId(i as u64))
    }

    /// Whether some row is written back as pending (claimable again).
    pub(crate) fn requeues(&self) -> bool {
        let pending = leasehold_core::JobState::Pending.as_str();
        self.state.contains(&pending)
    }

    /// Adds a row.
    pub(crate) fn push_row(&mut self, r: &JobRecord, old_version: u64) -> Result<(), StoreError> {
        self.id.push(to_i64(r.id.0)?);
        self.old_version.push(to_i64(old_version)?);
        self.run_at.push(r.run_at.0);
        self.state.push(r.state.as_str());
        self.attempt.push(i64::from(r.attempt));
        self.lease.push(r)?;
        self.version.push(to_i64(r.version)?);
        self.updated_at.push(r.updated_at.0);
        self.queue.push(r.queue.clone());
        self.payload.push(r.payload.clone());
        self.priority.push(r.priority);
        self.max_attempts.push(i64::from(r.max_attempts));
        self.idempotency_key.push(r.idempotency_key.clone());
        self.created_at.push(r.created_at.0);
        Ok(())
    }

    /// Adds an audit event.
    pub(crate) fn push_event(&mut self, e: &crate::Event) -> Result<(), StoreError> {
        let json = serde_json::to_string(e)
            .map_err(|err| StoreError::Corrupt(format!("event encoding: {err}")))?;
        // The view `lease_events` reads `job` and `version` back as bigint.
        to_i64(e.job.0)?;
        to_i64(e.version)?;
        match &mut self.events {
            None => self.events = Some(format!("[{json}")),
            Some(array) => {
                array.push(',');
                array.push_str(&json);
            }
        }
        Ok(())
    }

    /// The update statement with its arguments bound; it answers the
    /// number of rows written.
    pub(crate) fn update(self) -> PgQuery {
        #[cfg(feature = "buggy-variants")]
        let sql = if self.by_id {
            leasehold_sql::race_variants::update_by_id(UPDATE_SQL)
        } else {
            UPDATE_SQL
        };
        #[cfg(not(feature = "buggy-variants"))]
        let sql = {
            // Only a catalogue variant writes by id.
            debug_assert!(!self.by_id);
            UPDATE_SQL
        };
        let q = sqlx::query(sql)
            .bind(self.id)
            .bind(self.old_version)
            .bind(self.run_at)
            .bind(self.state)
            .bind(self.attempt);
        self.lease
            .bind(q)
            .bind(self.version)
            .bind(self.updated_at)
            .bind(close(self.events))
    }

    /// The insert statement with its arguments bound.
    pub(crate) fn insert(self, channel: String) -> PgQuery {
        let q = sqlx::query(INSERT_SQL)
            .bind(self.id)
            .bind(self.queue)
            .bind(self.payload)
            .bind(self.priority)
            .bind(self.run_at)
            .bind(self.state)
            .bind(self.attempt)
            .bind(self.max_attempts);
        self.lease
            .bind(q)
            .bind(self.idempotency_key)
            .bind(self.version)
            .bind(self.created_at)
            .bind(self.updated_at)
            .bind(channel)
            .bind(close(self.events))
    }
}

impl PgStore {
    /// Writes `batch`; fewer rows written than pushed means a conflict.
    pub(crate) async fn write(
        &self,
        conn: &mut PgConnection,
        batch: Batch,
    ) -> Result<(), StoreError> {
        let n = batch.len();
        if n == 0 {
            return Ok(());
        }
        crate::tx::gate("update rows").await;
        let counted = batch
            .update()
            .fetch_one(&mut *conn)
            .await
            .map_err(error::map)?;
        let written: i64 = counted.try_get(0).map_err(error::map)?;
        if written != n as i64 {
            return Err(StoreError::Conflict(JobId(0)));
        }
        Ok(())
    }

    /// Inserts the new rows of `batch` with their events, and announces
    /// their queues (at commit).
    pub(crate) async fn write_new(
        &self,
        conn: &mut PgConnection,
        batch: Batch,
    ) -> Result<(), StoreError> {
        crate::tx::gate("insert rows").await;
        batch
            .insert(self.channel.clone())
            .execute(&mut *conn)
            .await
            .map_err(error::map)?;
        Ok(())
    }

    /// Adds the row `a` wrote over version `old` (0: a new row), with its
    /// event when the audit log is on.
    pub(crate) fn push(
        &self,
        batch: &mut Batch,
        a: &transition::Applied,
        old: u64,
    ) -> Result<(), StoreError> {
        batch.push_row(&a.record, old)?;
        if self.audit {
            batch.push_event(&a.event)?;
        }
        Ok(())
    }
}

/// Closes an events array opened by [`Batch::push_event`].
fn close(events: Option<String>) -> Option<String> {
    events.map(|mut array| {
        array.push(']');
        array
    })
}
