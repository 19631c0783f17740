//! [`Inspect`] on SQLite: the `dbstat` virtual table's bytes for
//! `leasehold_jobs` and its indexes when the library has it compiled in
//! (else `n/a`), the file as `page_count · page_size`, and the `-wal`
//! file's size on disk.

use crate::store_sizes::{unavailable, Inspect, Sizes};
use leasehold_core::StoreError;
use leasehold_sqlite::SqliteStore;

const COUNTS: &str = "SELECT (SELECT count(*) FROM leasehold_jobs), \
     (SELECT count(*) FROM lease_events), \
     (SELECT page_count FROM pragma_page_count()) * (SELECT page_size FROM pragma_page_size())";

/// Bytes of the table, then of its indexes (`dbstat`).
const DBSTAT: &str = "SELECT \
     COALESCE(SUM(CASE WHEN name = 'leasehold_jobs' THEN pgsize END), 0), \
     COALESCE(SUM(CASE WHEN name <> 'leasehold_jobs' THEN pgsize END), 0) \
     FROM dbstat WHERE name = 'leasehold_jobs' OR name IN \
     (SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'leasehold_jobs')";

impl Inspect for SqliteStore {
    const PLACEHOLDER: &'static str = "?";

    async fn sizes(&self) -> Result<Sizes, StoreError> {
        let (jobs, audit, file): (i64, i64, i64) = sqlx::query_as(COUNTS)
            .fetch_one(self.pool())
            .await
            .map_err(unavailable)?;
        let dbstat: Option<(i64, i64)> = sqlx::query_as(DBSTAT).fetch_one(self.pool()).await.ok();
        let path: String =
            sqlx::query_scalar("SELECT file FROM pragma_database_list WHERE name = 'main'")
                .fetch_one(self.pool())
                .await
                .map_err(unavailable)?;
        let wal = std::fs::metadata(format!("{path}-wal"))
            .map(|m| m.len())
            .ok();
        Ok(Sizes {
            jobs_rows: jobs as u64,
            audit_rows: audit as u64,
            table_bytes: dbstat.map(|d| d.0 as u64),
            index_bytes: dbstat.map(|d| d.1 as u64),
            total_bytes: file as u64,
            wal_bytes: wal,
        })
    }

    async fn count(&self, sql: String, bind: Option<i64>) -> Result<u64, StoreError> {
        let q = sqlx::query_scalar::<_, i64>(&sql);
        let q = if let Some(b) = bind { q.bind(b) } else { q };
        q.fetch_one(self.pool())
            .await
            .map(|n| n as u64)
            .map_err(unavailable)
    }
}
