//! The schema as an operator's tool sees it: the migrations this build
//! carries (`migrations/sqlite/`) and the versions a file has applied, so
//! `leasehold migrate --dry-run` can print what it would apply and every
//! other command can refuse a file without the schema or with a newer one.

use crate::{error, SqliteStore};
use leasehold_core::StoreError;
use leasehold_sql::schema_state::{Migration, SchemaState};

/// The migrations this build carries, in version order.
pub fn migrations() -> Vec<Migration> {
    sqlx::migrate!("../../migrations/sqlite")
        .iter()
        .map(|m| Migration {
            version: m.version,
            description: m.description.to_string(),
            sql: m.sql.to_string(),
        })
        .collect()
}

impl SqliteStore {
    /// The migration versions applied to this file (successful ones, in
    /// order); empty when it was never migrated.
    pub async fn applied_migrations(&self) -> Result<Vec<i64>, StoreError> {
        let exists: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(error::map)?;
        if exists == 0 {
            return Ok(Vec::new());
        }
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
            .fetch_all(&self.pool)
            .await
            .map_err(error::map)
    }

    /// This file's schema against the migrations of this build.
    pub async fn schema_state(&self) -> Result<SchemaState, StoreError> {
        let known: Vec<i64> = migrations().iter().map(|m| m.version).collect();
        Ok(SchemaState::judge(
            &self.applied_migrations().await?,
            &known,
        ))
    }
}
