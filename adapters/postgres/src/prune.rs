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
//! retention). The walk goes from the oldest row in `seq` order and stops
//! at the first row too young, or before the row that would take the call
//! past its event budget (`prune_sql::audit_budget`, counted with
//! `json_array_length`): every row read is parsed once, none past the
//! first young one, so a call's work is bounded whatever the backlog.

use crate::read::JOBS;
use crate::schedules::SQL;
use crate::{error, PgStore};
use leasehold_core::{JobId, PruneRequest, StoreError};
use leasehold_sql::dialect::POSTGRES;
use leasehold_sql::prune_sql;
use leasehold_sql::prune_variants;
use sqlx::postgres::PgConnection;

/// Deletes the oldest audit rows whose newest event was written at or
/// before `$2`: a walk of the primary key from the oldest row, one row a
/// step, that stops at the first row too young (its events are parsed,
/// no later row's) or before the row that would take the events read past
/// `$1`. The first row is read whatever its size, so a call always makes
/// progress. A row another pruner holds is skipped, not waited for.
///
/// Why a walk: the bound it replaced took the oldest `limit` rows and
/// parsed every event of each, old enough or not: 1,000 rows of 270
/// events under load outlived the `Pruner`'s 5 s request timeout, so each
/// call rolled back and nothing was pruned (docs/PERFORMANCE.md).
const PRUNE_AUDIT: &str = "WITH RECURSIVE walk (seq, spent, old) AS (\
     SELECT h.seq, greatest(json_array_length(h.events), 1)::bigint, \
         (SELECT coalesce(max((e ->> 'at')::bigint), $2) FROM json_array_elements(h.events) AS e) <= $2 \
     FROM (SELECT seq, events FROM leasehold_audit ORDER BY seq LIMIT 1) AS h \
     UNION ALL \
     SELECT n.seq, n.spent, \
         (SELECT coalesce(max((e ->> 'at')::bigint), $2) FROM json_array_elements(n.events) AS e) <= $2 \
     FROM walk AS w CROSS JOIN LATERAL (\
         SELECT a.seq, a.events, w.spent + greatest(json_array_length(a.events), 1) AS spent \
         FROM leasehold_audit AS a WHERE a.seq > w.seq ORDER BY a.seq LIMIT 1) AS n \
     WHERE w.old AND n.spent <= $1) \
     DELETE FROM leasehold_audit WHERE seq IN (SELECT seq FROM leasehold_audit \
     WHERE seq IN (SELECT seq FROM walk WHERE old) FOR UPDATE SKIP LOCKED)";

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
