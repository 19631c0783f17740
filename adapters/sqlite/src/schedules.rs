//! Schedules on SQLite: `leasehold_schedules`, and fires as inserts into
//! `leasehold_jobs` under the plan time's key.
//!
//! Every write runs in the same `BEGIN IMMEDIATE` transaction as the other
//! operations and applies the core's `put_schedule` or `fire` transition.
//! The unique index on `idempotency_key` holds "one job per plan time": a
//! concurrent fire that inserted the key first turns this insert into a
//! unique violation, which is retried and then answered with that job.

use crate::error;
use crate::read::JOBS;
use crate::SqliteStore;
use leasehold_core::transition::{self, FirePlan};
use leasehold_core::{FireRequest, JobId, Schedule, StoreError, StoreTime};
use leasehold_sql::dialect::SQLITE;
use leasehold_sql::schedule_sql::ScheduleSql;
use sqlx::sqlite::SqliteConnection;
use sqlx::Sqlite;
use std::sync::LazyLock;

/// The schedule statements, in SQLite's placeholders.
pub(crate) static SQL: LazyLock<ScheduleSql<Sqlite>> =
    LazyLock::new(|| ScheduleSql::new(SQLITE, error::map));

impl SqliteStore {
    pub(crate) async fn put_schedule_in(
        &self,
        conn: &mut SqliteConnection,
        spec: &Schedule,
        now: StoreTime,
    ) -> Result<(), StoreError> {
        // No row lock: the transaction holds the whole file.
        let old = SQL.load(&mut *conn, &spec.name, false).await?;
        // A concurrent first put of the name is a unique violation:
        // retried, it becomes an update.
        let first = old.is_none();
        SQL.put_schedule(&mut *conn, spec, old.as_ref(), self.policy(), now, |e| {
            if first && error::is_unique_violation(&e) {
                StoreError::Conflict(JobId(0))
            } else {
                error::map(e)
            }
        })
        .await
    }

    pub(crate) async fn fire_in(
        &self,
        conn: &mut SqliteConnection,
        req: &FireRequest,
        now: StoreTime,
    ) -> Result<JobId, StoreError> {
        let (schedule, existing) = SQL.fire_reads(conn, &JOBS, req).await?;
        let id = crate::prune::next_id(conn).await?;
        match transition::fire(schedule.as_ref(), req, id, existing.as_ref(), now)? {
            FirePlan::Existing(id) => Ok(id),
            FirePlan::Insert(applied) => {
                self.insert(conn, &applied).await?;
                Ok(id)
            }
        }
    }
}
