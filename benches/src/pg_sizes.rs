//! [`Inspect`] on PostgreSQL: `pg_relation_size`, `pg_indexes_size` and
//! `pg_total_relation_size` of `leasehold_jobs` (the store's schema is on
//! its connections' `search_path`), and exact row counts.

use crate::store_sizes::{unavailable, Inspect, Sizes};
use leasehold_core::StoreError;
use leasehold_postgres::PgStore;

const SIZES: &str = "SELECT (SELECT count(*) FROM leasehold_jobs), \
     (SELECT count(*) FROM leasehold_audit), \
     pg_relation_size('leasehold_jobs'), pg_indexes_size('leasehold_jobs'), \
     pg_total_relation_size('leasehold_jobs')";

impl Inspect for PgStore {
    const PLACEHOLDER: &'static str = "$1";

    async fn sizes(&self) -> Result<Sizes, StoreError> {
        let (jobs, audit, table, index, total): (i64, i64, i64, i64, i64) = sqlx::query_as(SIZES)
            .fetch_one(self.pool())
            .await
            .map_err(unavailable)?;
        Ok(Sizes {
            jobs_rows: jobs as u64,
            audit_rows: audit as u64,
            table_bytes: Some(table as u64),
            index_bytes: Some(index as u64),
            total_bytes: total as u64,
            wal_bytes: None,
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
