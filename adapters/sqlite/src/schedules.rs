//! Schedules on SQLite: `leasehold_schedules`, and fires as inserts into
//! `leasehold_jobs` under the plan time's key.
//!
//! Every write runs in the same `BEGIN IMMEDIATE` transaction as the other
//! operations and applies the core's `put_schedule` or `fire` transition.
//! The unique index on `idempotency_key` holds "one job per plan time": a
//! concurrent fire that inserted the key first turns this insert into a
//! unique violation, which is retried and then answered with that job.

use crate::error;
use crate::row::{decode, COLUMNS};
use crate::SqliteStore;
use leasehold_core::schedule::columns::{ScheduleColumns, SCHEDULE_COLUMNS};
use leasehold_core::transition::{self, FirePlan, PutPlan};
use leasehold_core::{
    FireRequest, JobId, ListSchedulesRequest, Schedule, ScheduleRecord, StoreError, StoreTime,
};
use sqlx::sqlite::{SqliteConnection, SqliteRow};
use sqlx::Row;

fn get<'r, T: sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite>>(
    row: &'r SqliteRow,
    i: usize,
) -> Result<T, StoreError> {
    row.try_get(i)
        .map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// Decodes the [`SCHEDULE_COLUMNS`] of `row`.
pub(crate) fn decode_schedule(row: &SqliteRow) -> Result<ScheduleRecord, StoreError> {
    ScheduleColumns {
        name: get(row, 0)?,
        queue: get(row, 1)?,
        payload: get(row, 2)?,
        rule_kind: get(row, 3)?,
        cron_expr: get(row, 4)?,
        time_zone: get(row, 5)?,
        interval_ms: get(row, 6)?,
        catch_up_max: get(row, 7)?,
        jitter_ms: get(row, 8)?,
        max_attempts: get(row, 9)?,
        version: get(row, 10)?,
        created_at: get(row, 11)?,
        updated_at: get(row, 12)?,
    }
    .into_record()
}

impl SqliteStore {
    pub(crate) async fn load_schedule(
        conn: &mut SqliteConnection,
        name: &str,
    ) -> Result<Option<ScheduleRecord>, StoreError> {
        let sql = format!("SELECT {SCHEDULE_COLUMNS} FROM leasehold_schedules WHERE name = ?");
        let row = sqlx::query(&sql)
            .bind(name)
            .fetch_optional(&mut *conn)
            .await
            .map_err(error::map)?;
        row.as_ref().map(decode_schedule).transpose()
    }

    pub(crate) async fn put_schedule_in(
        &self,
        conn: &mut SqliteConnection,
        spec: &Schedule,
        now: StoreTime,
    ) -> Result<(), StoreError> {
        let old = Self::load_schedule(conn, &spec.name).await?;
        let PutPlan::Write(rec) = transition::put_schedule(spec, old.as_ref(), self.policy(), now)?
        else {
            return Ok(());
        };
        let c = ScheduleColumns::of(&rec)?;
        let res = match &old {
            None => sqlx::query(&format!(
                "INSERT INTO leasehold_schedules ({SCHEDULE_COLUMNS}) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            ))
            .bind(&c.name)
            .bind(&c.queue)
            .bind(&c.payload)
            .bind(&c.rule_kind)
            .bind(&c.cron_expr)
            .bind(&c.time_zone)
            .bind(c.interval_ms)
            .bind(c.catch_up_max)
            .bind(c.jitter_ms)
            .bind(c.max_attempts)
            .bind(c.version)
            .bind(c.created_at)
            .bind(c.updated_at)
            .execute(&mut *conn)
            .await
            .map_err(|e| {
                if error::is_unique_violation(&e) {
                    StoreError::Conflict(JobId(0))
                } else {
                    error::map(e)
                }
            })?,
            Some(o) => sqlx::query(
                "UPDATE leasehold_schedules SET queue = ?, payload = ?, rule_kind = ?, \
                 cron_expr = ?, time_zone = ?, interval_ms = ?, catch_up_max = ?, jitter_ms = ?, \
                 max_attempts = ?, version = ?, updated_at = ? WHERE name = ? AND version = ?",
            )
            .bind(&c.queue)
            .bind(&c.payload)
            .bind(&c.rule_kind)
            .bind(&c.cron_expr)
            .bind(&c.time_zone)
            .bind(c.interval_ms)
            .bind(c.catch_up_max)
            .bind(c.jitter_ms)
            .bind(c.max_attempts)
            .bind(c.version)
            .bind(c.updated_at)
            .bind(&c.name)
            .bind(o.version as i64)
            .execute(&mut *conn)
            .await
            .map_err(error::map)?,
        };
        if res.rows_affected() != 1 {
            return Err(StoreError::Conflict(JobId(0)));
        }
        Ok(())
    }

    pub(crate) async fn remove_schedule_in(
        conn: &mut SqliteConnection,
        name: &str,
    ) -> Result<bool, StoreError> {
        let res = sqlx::query("DELETE FROM leasehold_schedules WHERE name = ?")
            .bind(name)
            .execute(&mut *conn)
            .await
            .map_err(error::map)?;
        Ok(res.rows_affected() > 0)
    }

    pub(crate) async fn fire_in(
        &self,
        conn: &mut SqliteConnection,
        req: &FireRequest,
        now: StoreTime,
    ) -> Result<JobId, StoreError> {
        leasehold_core::schedule::check_name(&req.name)?;
        let schedule = Self::load_schedule(conn, &req.name).await?;
        let key = transition::fire_key(req);
        let sql = format!("SELECT {COLUMNS} FROM leasehold_jobs WHERE idempotency_key = ?");
        let existing = sqlx::query(&sql)
            .bind(&key)
            .fetch_optional(&mut *conn)
            .await
            .map_err(error::map)?
            .as_ref()
            .map(decode)
            .transpose()?;
        // Rows are never deleted and ids are taken under the write lock.
        let next: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) + 1 FROM leasehold_jobs")
            .fetch_one(&mut *conn)
            .await
            .map_err(error::map)?;
        let id = JobId(u64::try_from(next).map_err(|_| StoreError::Corrupt("negative id".into()))?);
        match transition::fire(schedule.as_ref(), req, id, existing.as_ref(), now)? {
            FirePlan::Existing(id) => Ok(id),
            FirePlan::Insert(applied) => {
                self.insert(conn, &applied).await?;
                Ok(id)
            }
        }
    }

    pub(crate) async fn list_schedules_in(
        &self,
        req: &ListSchedulesRequest,
    ) -> Result<Vec<ScheduleRecord>, StoreError> {
        let sql = format!(
            "SELECT {SCHEDULE_COLUMNS} FROM leasehold_schedules WHERE name > ? \
             ORDER BY name LIMIT ?"
        );
        let rows = sqlx::query(&sql)
            .bind(req.after.as_deref().unwrap_or(""))
            .bind(i64::from(req.limit))
            .fetch_all(self.pool())
            .await
            .map_err(error::map)?;
        rows.iter().map(decode_schedule).collect()
    }
}
