//! Prune on PostgreSQL: one bounded transaction per call. The oldest
//! finished rows past the retention are locked with `SKIP LOCKED` (read
//! from the partial index `leasehold_jobs_finished`, migration 0005, so
//! the scan reads at most `limit` entries), offered to the core's guard,
//! and the rows it picks are deleted with their schedules' marks and the
//! oldest audit rows past the audit retention.
//!
//! Locks: only terminal rows and old audit rows, which no claim, renew or
//! sweep waits for; a row another transaction holds (a repeated release or
//! cancel reading a finished job) is skipped, not waited for, and goes in
//! a later call. Concurrent pruners split the rows between them.
//!
//! Audit rows (`leasehold_audit`) hold one write statement's events, of
//! possibly many jobs, so they are not deleted with a job: a row goes once
//! its newest event was written at or before `now − audit_retention`
//! (never shorter than `R`, so a job's events outlive the job's own
//! retention). At most `limit` rows, from the oldest: a bounded walk of
//! the primary key.

use crate::{error, PgStore};
use leasehold_core::transition;
use leasehold_core::{FireRequest, JobId, PruneRequest, StoreError, StoreTime};
use leasehold_sql::dialect::POSTGRES;
use leasehold_sql::job_columns::{decode_job, COLUMNS};
use leasehold_sql::prune_sql;
use sqlx::postgres::PgConnection;

/// Deletes the oldest audit rows (at most `$1`) whose newest event was
/// written at or before `$2`.
const PRUNE_AUDIT: &str = "DELETE FROM leasehold_audit WHERE seq IN (\
     SELECT o.seq FROM (SELECT seq, events FROM leasehold_audit ORDER BY seq LIMIT $1 \
     FOR UPDATE SKIP LOCKED) AS o \
     WHERE (SELECT max((e ->> 'at')::bigint) FROM json_array_elements(o.events) AS e) <= $2)";

/// The fire guard for a plan time whose job is gone (see
/// [`transition::refuse_pruned_plan_time`]).
pub(crate) async fn refuse_pruned(
    conn: &mut PgConnection,
    req: &FireRequest,
) -> Result<(), StoreError> {
    let through: Option<i64> = sqlx::query_scalar(&prune_sql::pruned_plan_time(POSTGRES))
        .bind(&req.name)
        .fetch_optional(&mut *conn)
        .await
        .map_err(error::map)?;
    Ok(transition::refuse_pruned_plan_time(
        req,
        through.map(StoreTime),
    )?)
}

impl PgStore {
    pub(crate) async fn prune_in(
        &self,
        conn: &mut PgConnection,
        req: &PruneRequest,
    ) -> Result<Vec<JobId>, StoreError> {
        let now = self.clock_now(conn).await?;
        let sql = format!(
            "SELECT {COLUMNS} FROM leasehold_jobs WHERE {} \
             ORDER BY updated_at, id LIMIT $2 FOR UPDATE SKIP LOCKED",
            prune_sql::prunable_filter(POSTGRES, 1)
        );
        let rows = sqlx::query(&sql)
            .bind(req.cutoff(now).0)
            .bind(i64::from(req.limit))
            .fetch_all(&mut *conn)
            .await
            .map_err(error::map)?;
        let loaded = rows.iter().map(decode_job).collect::<Result<Vec<_>, _>>()?;
        let plan = transition::prune(&loaded, req, now)?;
        if !plan.jobs.is_empty() {
            let ids: Vec<i64> = plan.jobs.iter().map(|j| j.0 as i64).collect();
            let gone = sqlx::query(&format!(
                "DELETE FROM leasehold_jobs WHERE id = ANY($1) AND state IN {}",
                prune_sql::TERMINAL_STATES
            ))
            .bind(&ids)
            .execute(&mut *conn)
            .await
            .map_err(error::map)?;
            if gone.rows_affected() != ids.len() as u64 {
                // The rows were locked: only a bug or a hand edit gets here.
                return Err(StoreError::Conflict(plan.jobs[0]));
            }
        }
        for (name, t) in &plan.plan_times {
            sqlx::query(&prune_sql::raise_plan_time(POSTGRES))
                .bind(name)
                .bind(t.0)
                .execute(&mut *conn)
                .await
                .map_err(error::map)?;
        }
        sqlx::query(PRUNE_AUDIT)
            .bind(i64::from(req.limit))
            .bind(req.audit_cutoff(now).0)
            .execute(&mut *conn)
            .await
            .map_err(error::map)?;
        Ok(plan.jobs)
    }
}
