//! Prune on SQLite: under the write lock, the oldest finished rows past
//! the retention are offered to the core's guard, and the rows it picks
//! are deleted with the marks that outlive them (the largest pruned id,
//! each schedule's latest pruned plan time) and old audit events, in one
//! transaction.
//!
//! The scan reads the partial index `leasehold_jobs_finished` (migration
//! 0003) from its oldest entry: at most `limit` rows.

use crate::read::JOBS;
use crate::{error, SqliteStore};
use leasehold_core::{JobId, PruneRequest, StoreError, StoreTime};
use leasehold_sql::dialect::SQLITE;
use leasehold_sql::prune_sql;
use leasehold_sql::prune_variants;
use leasehold_sql::schedule_sql::ScheduleSql;
use sqlx::{Sqlite, SqliteConnection};

/// Deletes, of the oldest events (as many as the first bound,
/// `prune_sql::audit_budget`: ten per job the call may prune), those
/// written at or before the second: a bounded walk of the primary key,
/// whatever the table's size. The bound was `limit` events, a third of
/// what a job writes, and the log grew without end (docs/PERFORMANCE.md).
const PRUNE_AUDIT: &str = "DELETE FROM lease_events WHERE seq IN (SELECT seq FROM \
     (SELECT seq, at FROM lease_events ORDER BY seq LIMIT ?) WHERE at <= ?)";

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

impl SqliteStore {
    /// Prunes by `req` at store time `now`, raising the marks through
    /// `schedules` (passed in: `schedules.rs` takes its ids from this file).
    pub(crate) async fn prune_in(
        &self,
        conn: &mut SqliteConnection,
        req: &PruneRequest,
        now: StoreTime,
        schedules: &ScheduleSql<Sqlite>,
    ) -> Result<Vec<JobId>, StoreError> {
        // Three steps take the catalogue's prune bugs when one is in force
        // (the instant ages are judged at, the marks, the keys).
        let judged_at = prune_variants::judged_at(self.shared.variant, req, now);
        let plan = JOBS.prune_plan(&mut *conn, req, judged_at).await?;
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
        if prune_variants::raises_marks(self.shared.variant) {
            schedules.raise_marks(conn, &plan).await?;
        }
        prune_variants::free_unpruned_keys(
            self.shared.variant,
            &mut *conn,
            SQLITE,
            now,
            error::map,
        )
        .await?;
        prune_sql::prune_audit(&mut *conn, PRUNE_AUDIT, req, now, error::map).await?;
        Ok(plan.jobs)
    }
}
