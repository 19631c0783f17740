//! Prune on SQLite: under the write lock, the oldest finished rows past
//! the retention are offered to the core's guard, and the rows it picks
//! are deleted with the marks that outlive them (the largest pruned id,
//! each schedule's latest pruned plan time) and old audit events, in one
//! transaction.
//!
//! The scan reads the partial index `leasehold_jobs_finished` (migration
//! 0003) from its oldest entry: at most `limit` rows.

use crate::{error, SqliteStore};
use leasehold_core::transition;
use leasehold_core::{FireRequest, JobId, PruneRequest, StoreError, StoreTime};
use leasehold_sql::dialect::SQLITE;
use leasehold_sql::job_columns::{decode_job, COLUMNS};
use leasehold_sql::prune_sql;
use sqlx::SqliteConnection;

/// The next job id: above every row and every pruned id, so an id is never
/// handed out twice. Ids are taken under the write lock.
pub(crate) const NEXT_ID: &str = "SELECT MAX(COALESCE((SELECT MAX(id) FROM leasehold_jobs), 0), \
     COALESCE((SELECT max_id FROM leasehold_pruned_ids), 0)) + 1";

/// Reads [`NEXT_ID`].
pub(crate) async fn next_id(conn: &mut SqliteConnection) -> Result<JobId, StoreError> {
    let next: i64 = sqlx::query_scalar(NEXT_ID)
        .fetch_one(&mut *conn)
        .await
        .map_err(error::map)?;
    Ok(JobId(
        u64::try_from(next).map_err(|_| StoreError::Corrupt("negative id".into()))?,
    ))
}

/// The fire guard for a plan time whose job is gone (see
/// [`transition::refuse_pruned_plan_time`]).
pub(crate) async fn refuse_pruned(
    conn: &mut SqliteConnection,
    req: &FireRequest,
) -> Result<(), StoreError> {
    let through: Option<i64> = sqlx::query_scalar(&prune_sql::pruned_plan_time(SQLITE))
        .bind(&req.name)
        .fetch_optional(&mut *conn)
        .await
        .map_err(error::map)?;
    Ok(transition::refuse_pruned_plan_time(
        req,
        through.map(StoreTime),
    )?)
}

impl SqliteStore {
    pub(crate) async fn prune_in(
        &self,
        conn: &mut SqliteConnection,
        req: &PruneRequest,
        now: StoreTime,
    ) -> Result<Vec<JobId>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM leasehold_jobs WHERE {} ORDER BY updated_at, id LIMIT ?",
            prune_sql::prunable_filter(SQLITE, 1)
        );
        let rows = sqlx::query(&sql)
            .bind(req.cutoff(now).0)
            .bind(i64::from(req.limit))
            .fetch_all(&mut *conn)
            .await
            .map_err(error::map)?;
        let loaded = rows.iter().map(decode_job).collect::<Result<Vec<_>, _>>()?;
        let plan = transition::prune(&loaded, req, now)?;
        for id in &plan.jobs {
            let gone = sqlx::query(&format!(
                "DELETE FROM leasehold_jobs WHERE id = ? AND state IN {}",
                prune_sql::TERMINAL_STATES
            ))
            .bind(id.0 as i64)
            .execute(&mut *conn)
            .await
            .map_err(error::map)?;
            if gone.rows_affected() != 1 {
                return Err(StoreError::Conflict(*id));
            }
        }
        if let Some(max) = plan.jobs.iter().max() {
            sqlx::query(
                "INSERT INTO leasehold_pruned_ids (one, max_id) VALUES (1, ?) \
                 ON CONFLICT (one) DO UPDATE SET max_id = excluded.max_id \
                 WHERE excluded.max_id > leasehold_pruned_ids.max_id",
            )
            .bind(max.0 as i64)
            .execute(&mut *conn)
            .await
            .map_err(error::map)?;
        }
        for (name, t) in &plan.plan_times {
            sqlx::query(&prune_sql::raise_plan_time(SQLITE))
                .bind(name)
                .bind(t.0)
                .execute(&mut *conn)
                .await
                .map_err(error::map)?;
        }
        // The oldest `limit` events, those written at or before the audit
        // cutoff: a bounded walk of the primary key, whatever the table's size.
        sqlx::query(
            "DELETE FROM lease_events WHERE seq IN (SELECT seq FROM \
             (SELECT seq, at FROM lease_events ORDER BY seq LIMIT ?) WHERE at <= ?)",
        )
        .bind(i64::from(req.limit))
        .bind(req.audit_cutoff(now).0)
        .execute(&mut *conn)
        .await
        .map_err(error::map)?;
        Ok(plan.jobs)
    }
}
