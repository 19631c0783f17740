//! One job row at a time: loaded by id, inserted, or written over the
//! version it was loaded at, each write with its audit event in the same
//! execution (two statements, one trip to the connection's thread).

use crate::read::JOBS;
use crate::{error, SqliteStore};
use leasehold_core::transition::Applied;
use leasehold_core::{Event, InputError, JobId, JobRecord, StoreError};
use leasehold_sql::job_columns::{to_i64, COLUMNS};
use leasehold_sql::job_sql::FindJob;
use sqlx::query::Query;
use sqlx::sqlite::SqliteArguments;
use sqlx::{Sqlite, SqliteConnection};

impl SqliteStore {
    pub(crate) async fn load(
        conn: &mut SqliteConnection,
        id: JobId,
    ) -> Result<JobRecord, StoreError> {
        JOBS.find(&mut *conn, FindJob::Id(id))
            .await?
            .ok_or(StoreError::Input(InputError::UnknownJob(id)))
    }

    /// Inserts a new row, and its audit event with it; a unique violation
    /// (a key taken meanwhile) is a conflict, so the retry re-reads the
    /// key.
    pub(crate) async fn insert(
        &self,
        conn: &mut SqliteConnection,
        a: &Applied,
    ) -> Result<(), StoreError> {
        let r = &a.record;
        let insert = format!(
            "INSERT INTO leasehold_jobs ({COLUMNS}) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        );
        let sql = self.with_event(insert);
        let q = sqlx::query(&sql)
            .bind(to_i64(r.id.0)?)
            .bind(&r.queue)
            .bind(&r.payload)
            .bind(r.priority)
            .bind(r.run_at.0)
            .bind(r.state.as_str())
            .bind(i64::from(r.attempt))
            .bind(i64::from(r.max_attempts));
        let q = bind_lease_columns(q, r)?
            .bind(r.idempotency_key.as_deref())
            .bind(to_i64(r.version)?)
            .bind(r.created_at.0)
            .bind(r.updated_at.0);
        match self.bind_event(q, &a.event)?.execute(&mut *conn).await {
            Ok(_) => Ok(()),
            Err(e) if error::is_unique_violation(&e) => Err(StoreError::Conflict(r.id)),
            Err(e) => Err(error::map(e)),
        }
    }

    /// Writes `a` over the row loaded at `loaded_version`, and its audit
    /// event with it; zero rows written means a concurrent writer won: a
    /// conflict, whose transaction is rolled back with the event.
    pub(crate) async fn update(
        &self,
        conn: &mut SqliteConnection,
        a: &Applied,
        loaded_version: u64,
    ) -> Result<(), StoreError> {
        let r = &a.record;
        let sql = self.with_event(
            "UPDATE leasehold_jobs SET run_at = ?, state = ?, attempt = ?, token = ?, \
             holder = ?, expires_at = ?, cancel_requested = ?, result = ?, error = ?, \
             released_token = ?, released_digest = ?, version = ?, updated_at = ? \
             WHERE id = ? AND version = ?"
                .to_string(),
        );
        let q = sqlx::query(&sql)
            .bind(r.run_at.0)
            .bind(r.state.as_str())
            .bind(i64::from(r.attempt));
        let q = bind_lease_columns(q, r)?
            .bind(to_i64(r.version)?)
            .bind(r.updated_at.0)
            .bind(to_i64(r.id.0)?)
            .bind(to_i64(loaded_version)?);
        let res = self
            .bind_event(q, &a.event)?
            .execute(&mut *conn)
            .await
            .map_err(error::map)?;
        // The changes of both statements: the event's insert always adds
        // its one row, so the sum falls short exactly when the update
        // missed.
        if res.rows_affected() != 1 + u64::from(self.shared.audit) {
            return Err(StoreError::Conflict(r.id));
        }
        Ok(())
    }

    /// `write` followed, when the audit log is on, by the insert of its
    /// event ([`EVENT`]): one execution of two statements, so the pair
    /// costs one hand-off to the connection's thread instead of two. A
    /// failing first statement stops the second.
    fn with_event(&self, write: String) -> String {
        if self.shared.audit {
            format!("{write}; {EVENT}")
        } else {
            write
        }
    }

    /// Binds `event`'s columns after the write's, when the audit log is on
    /// (the statement is then [`Self::with_event`]'s pair).
    fn bind_event<'q>(&self, q: JobQuery<'q>, event: &Event) -> Result<JobQuery<'q>, StoreError> {
        if !self.shared.audit {
            return Ok(q);
        }
        let json = serde_json::to_string(event)
            .map_err(|e| StoreError::Corrupt(format!("event encoding: {e}")))?;
        Ok(q.bind(to_i64(event.job.0)?)
            .bind(to_i64(event.version)?)
            .bind(event.at.0)
            .bind(json))
    }
}

/// One audit event.
const EVENT: &str = "INSERT INTO lease_events (job_id, version, at, event) VALUES (?, ?, ?, ?)";

/// A statement on the job table, with its arguments bound so far.
pub(crate) type JobQuery<'q> = Query<'q, Sqlite, SqliteArguments<'q>>;

/// Binds `r`'s lease columns next, in the order every job statement lists
/// them: `token, holder, expires_at, cancel_requested, result, error,
/// released_token, released_digest`.
pub(crate) fn bind_lease_columns<'q>(
    q: JobQuery<'q>,
    r: &'q JobRecord,
) -> Result<JobQuery<'q>, StoreError> {
    Ok(q.bind(to_i64(r.token.0)?)
        .bind(r.holder.as_ref().map(|w| w.as_str()))
        .bind(r.expires_at.map(|t| t.0))
        .bind(r.cancel_requested)
        .bind(r.result.as_deref())
        .bind(r.error.as_deref())
        .bind(r.released.map(|m| to_i64(m.token.0)).transpose()?)
        .bind(r.released.map(|m| m.digest as i64)))
}
