//! The schema as an operator's tool sees it: the migrations this build
//! carries (`migrations/sqlite/`) and the versions a file has applied, so
//! `leasehold migrate --dry-run` can print what it would apply and every
//! other command can refuse a file without the schema or with a newer one.

use crate::{error, SqliteStore};
use leasehold_core::StoreError;
use leasehold_sql::schema_state::{applied_versions, migrations_of, Migration, SchemaState};

/// How many migrations tables the file has (0 or 1).
const HAS_TABLE: &str =
    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'";

/// The migrations this build carries, in version order.
pub fn migrations() -> Vec<Migration> {
    migrations_of(&sqlx::migrate!("../../migrations/sqlite"))
}

impl SqliteStore {
    /// The migration versions applied to this file (successful ones, in
    /// order); empty when it was never migrated.
    pub async fn applied_migrations(&self) -> Result<Vec<i64>, StoreError> {
        applied_versions::<_, i64>(&self.shared.pool, HAS_TABLE, error::map).await
    }

    /// This file's schema against the migrations of this build.
    pub async fn schema_state(&self) -> Result<SchemaState, StoreError> {
        Ok(SchemaState::of(
            &self.applied_migrations().await?,
            &migrations(),
        ))
    }
}
