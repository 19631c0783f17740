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

use crate::read::JOBS;
use crate::schedules::SQL;
use crate::{error, PgStore};
use leasehold_core::{JobId, PruneRequest, StoreError};
use leasehold_sql::dialect::POSTGRES;
use leasehold_sql::prune_sql;
use leasehold_sql::prune_variants;
use sqlx::postgres::PgConnection;

/// Deletes the oldest audit rows (at most `$1`) whose newest event was
/// written at or before `$2`.
const PRUNE_AUDIT: &str = "DELETE FROM leasehold_audit WHERE seq IN (\
     SELECT o.seq FROM (SELECT seq, events FROM leasehold_audit ORDER BY seq LIMIT $1 \
     FOR UPDATE SKIP LOCKED) AS o \
     WHERE (SELECT max((e ->> 'at')::bigint) FROM json_array_elements(o.events) AS e) <= $2)";

impl PgStore {
    pub(crate) async fn prune_in(
        &self,
        conn: &mut PgConnection,
        req: &PruneRequest,
    ) -> Result<Vec<JobId>, StoreError> {
        let now = self.clock_now(conn).await?;
        // Three steps take the catalogue's prune bugs when one is in force
        // (the instant ages are judged at, the marks, the keys).
        let judged_at = prune_variants::judged_at(self.variant, req, now);
        let plan = JOBS.prune_plan(&mut *conn, req, judged_at).await?;
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
        if prune_variants::raises_marks(self.variant) {
            SQL.raise_marks(conn, &plan).await?;
        }
        prune_variants::free_unpruned_keys(self.variant, &mut *conn, POSTGRES, now, error::map)
            .await?;
        prune_sql::prune_audit(&mut *conn, PRUNE_AUDIT, req, now, error::map).await?;
        Ok(plan.jobs)
    }
}
