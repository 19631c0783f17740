//! Sweep: expired leases locked with `SKIP LOCKED`, reclaimed by the
//! core, one write; the queues whose workers a reclaim wakes are notified.

use crate::clock::STMT_CLOCK;
use crate::load::{fetch_scan, ScanGate};
use crate::sweep_probe::expired_running;
use crate::write_batch::Batch;
use crate::{listener, PgStore};
use leasehold_core::transition;
use leasehold_core::{CrashReport, StoreError};
use leasehold_sql::job_columns::COLUMNS;
use leasehold_sql::race_variants;
use sqlx::postgres::PgConnection;

impl PgStore {
    pub(crate) async fn sweep_in(
        &self,
        conn: &mut PgConnection,
        limit: u32,
    ) -> Result<Vec<CrashReport>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS}, {STMT_CLOCK} FROM leasehold_jobs \
             WHERE {} \
             ORDER BY expires_at, id LIMIT $2 FOR UPDATE SKIP LOCKED",
            expired_running()
        );
        let sql = race_variants::sweep_scan(self.variant, sql);
        let q = sqlx::query(&sql)
            .bind(self.clock_param())
            .bind(i64::from(limit));
        let locked = fetch_scan(conn, q, ScanGate::Sweep).await?;
        let Some(now) = locked.now else {
            return Ok(Vec::new());
        };
        let mut batch = Batch::default();
        batch.by_id = race_variants::sweep_writes_by_id(self.variant);
        let mut reports = Vec::with_capacity(locked.rows.len());
        let mut woken = std::collections::BTreeSet::new();
        for record in &locked.rows {
            // The core re-checks the guard on the row as locked.
            if let Ok((applied, report)) = transition::sweep(record, now) {
                if leasehold_core::wakes_workers(
                    Some(record.state),
                    &applied.record,
                    now,
                    &self.policy,
                ) {
                    woken.insert(record.queue.as_str());
                }
                self.push(&mut batch, &applied, record.version)?;
                reports.push(report);
            }
        }
        listener::notify_queues(conn, &self.channel, &woken).await?;
        self.write(conn, batch).await?;
        Ok(reports)
    }
}
