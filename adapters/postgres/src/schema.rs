//! The schema as an operator's tool sees it: the migrations this build
//! carries (`migrations/postgres/`) and the versions a database (in the
//! store's schema, if one was set) has applied, so `leasehold migrate
//! --dry-run` can print what it would apply and every other command can
//! refuse a database without the schema or with a newer one.

use crate::{error, PgStore};
use leasehold_core::StoreError;
use leasehold_sql::schema_state::{migrations_of, Migration, SchemaState, APPLIED_VERSIONS_SQL};

/// The migrations this build carries, in version order.
pub fn migrations() -> Vec<Migration> {
    migrations_of(&sqlx::migrate!("../../migrations/postgres"))
}

impl PgStore {
    /// The migration versions applied to this database (successful ones,
    /// in order), looked up on the store's search path; empty when it was
    /// never migrated.
    pub async fn applied_migrations(&self) -> Result<Vec<i64>, StoreError> {
        let exists: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
            .fetch_one(&self.pool)
            .await
            .map_err(error::map)?;
        if !exists {
            return Ok(Vec::new());
        }
        sqlx::query_scalar(APPLIED_VERSIONS_SQL)
            .fetch_all(&self.pool)
            .await
            .map_err(error::map)
    }

    /// This database's schema against the migrations of this build.
    pub async fn schema_state(&self) -> Result<SchemaState, StoreError> {
        Ok(SchemaState::of(
            &self.applied_migrations().await?,
            &migrations(),
        ))
    }
}
