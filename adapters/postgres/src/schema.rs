//! The schema as an operator's tool sees it: the migrations this build
//! carries (`migrations/postgres/`) and the versions a database (in the
//! store's schema, if one was set) has applied, so `leasehold migrate
//! --dry-run` can print what it would apply and every other command can
//! refuse a database without the schema or with a newer one.

use crate::{error, PgStore};
use leasehold_core::StoreError;
use leasehold_sql::schema_state::{applied_versions, migrations_of, Migration, SchemaState};

/// Whether the migrations table is on the store's search path.
const HAS_TABLE: &str = "SELECT to_regclass('_sqlx_migrations') IS NOT NULL";

/// The migrations this build carries, in version order.
pub fn migrations() -> Vec<Migration> {
    migrations_of(&sqlx::migrate!("../../migrations/postgres"))
}

impl PgStore {
    /// The migration versions applied to this database (successful ones,
    /// in order), looked up on the store's search path; empty when it was
    /// never migrated.
    pub async fn applied_migrations(&self) -> Result<Vec<i64>, StoreError> {
        applied_versions::<_, bool>(&self.pool, HAS_TABLE, error::map).await
    }

    /// This database's schema against the migrations of this build.
    pub async fn schema_state(&self) -> Result<SchemaState, StoreError> {
        Ok(SchemaState::of(
            &self.applied_migrations().await?,
            &migrations(),
        ))
    }
}
