//! Sweep: expired leases read under the write lock, reclaimed by the
//! core, written as one set; this process's workers a reclaim wakes are
//! woken after the commit.

use crate::set_sql::WriteSet;
use crate::{error, SqliteStore};
use leasehold_core::transition;
use leasehold_core::{CrashReport, StoreError, StoreTime};
use leasehold_sql::job_columns::{decode_job, COLUMNS};
use sqlx::SqliteConnection;

/// The sweep scan's filter (parameter: the store time): a running job
/// whose lease has expired. The sweep probe (`sweep_probe.rs`) asks the
/// same question.
pub(crate) const EXPIRED_RUNNING: &str = "state = 'running' AND expires_at <= ?";

impl SqliteStore {
    pub(crate) async fn sweep_in(
        &self,
        conn: &mut SqliteConnection,
        limit: u32,
        now: StoreTime,
    ) -> Result<Vec<CrashReport>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM leasehold_jobs \
             WHERE {EXPIRED_RUNNING} ORDER BY expires_at, id LIMIT ?"
        );
        let rows = sqlx::query(&sql)
            .bind(now.0)
            .bind(i64::from(limit))
            .fetch_all(&mut *conn)
            .await
            .map_err(error::map)?;
        let mut reports = Vec::with_capacity(rows.len());
        let mut set = WriteSet::default();
        for row in &rows {
            let record = decode_job(row)?;
            // The core re-checks the guard on the row as loaded.
            if let Ok((applied, report)) = transition::sweep(&record, now) {
                set.push_row(applied.record, record.version);
                set.push_event(applied.event);
                reports.push(report);
            }
        }
        set.flush(conn, self.shared.audit).await?;
        Ok(reports)
    }
}
