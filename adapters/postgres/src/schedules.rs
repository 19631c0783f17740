//! Schedules on PostgreSQL: `leasehold_schedules`, and fires as inserts into
//! `leasehold_jobs` under the plan time's key.
//!
//! Each operation is one transaction applying the core's `put_schedule` or
//! `fire` transition. The schedule row is locked (`FOR UPDATE`) by a put;
//! a fire reads it, looks up the plan time's key, and inserts. The unique
//! index on `idempotency_key` is what holds "one job per plan time": two
//! schedulers firing the same plan time at once both find no job, one
//! insert waits for the other's commit and fails with a unique violation,
//! and its retry finds the job and answers it.

use crate::error;
use crate::read::JOBS;
use crate::write_batch::Batch;
use crate::PgStore;
use leasehold_core::transition::{self, FirePlan};
use leasehold_core::{FireRequest, JobId, Schedule, StoreError};
use leasehold_sql::dialect::POSTGRES;
use leasehold_sql::schedule_sql::ScheduleSql;
use sqlx::postgres::PgConnection;
use sqlx::Postgres;
use std::sync::LazyLock;

/// The schedule statements, in PostgreSQL's placeholders.
pub(crate) static SQL: LazyLock<ScheduleSql<Postgres>> =
    LazyLock::new(|| ScheduleSql::new(POSTGRES, error::map));

impl PgStore {
    pub(crate) async fn put_schedule_in(
        &self,
        conn: &mut PgConnection,
        spec: &Schedule,
    ) -> Result<(), StoreError> {
        let old = SQL.load(&mut *conn, &spec.name, true).await?;
        let now = self.clock_now(conn).await?;
        // A concurrent first put of the name is a unique violation:
        // retried, it becomes an update.
        SQL.put_schedule(
            &mut *conn,
            spec,
            old.as_ref(),
            self.policy(),
            now,
            error::map,
        )
        .await
    }

    pub(crate) async fn fire_in(
        &self,
        conn: &mut PgConnection,
        req: &FireRequest,
    ) -> Result<JobId, StoreError> {
        crate::tx::gate("fire reads").await;
        let (schedule, existing) = SQL.fire_reads(conn, &JOBS, req).await?;
        crate::tx::gate("clock").await;
        let now = self.clock_now(conn).await?;
        // An id only when the fire will insert a job: an answer from an
        // existing job, or a refusal (a removed schedule, a time that is no
        // plan time), burns none, so ids stay those of the other stores
        // (a refused fire used to burn one; found by the simulator's
        // PostgreSQL-against-memory run). The transition is pure, so it is
        // first asked without an id.
        let inserts = matches!(
            transition::fire(schedule.as_ref(), req, JobId(0), existing.as_ref(), now)?,
            FirePlan::Insert(_)
        );
        let id = match &existing {
            Some(job) => job.id,
            None if !inserts => JobId(0),
            None => {
                crate::tx::gate("next id").await;
                let next: i64 = sqlx::query_scalar("SELECT nextval('leasehold_job_ids')")
                    .fetch_one(&mut *conn)
                    .await
                    .map_err(error::map)?;
                JobId(
                    u64::try_from(next)
                        .map_err(|_| StoreError::Corrupt("job id sequence".into()))?,
                )
            }
        };
        match transition::fire(schedule.as_ref(), req, id, existing.as_ref(), now)? {
            FirePlan::Existing(id) => Ok(id),
            FirePlan::Insert(a) => {
                let mut batch = Batch::default();
                self.push(&mut batch, &a, 0)?;
                self.write_new(conn, batch).await?;
                Ok(id)
            }
        }
    }
}
