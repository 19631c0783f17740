//! A migrated `PgStore` in a schema of the run's own (dropped by the
//! caller when done), with the run's audit setting and a pool of a given
//! size: what the soak and prune-claims modes both start from.

use crate::args::Settings;
use leasehold_core::{Policy, StoreError};
use leasehold_postgres::PgStore;

/// Connects to `url` with its tables in `schema`, migrated.
pub async fn migrated(
    url: &str,
    schema: &str,
    s: &Settings,
    pool: u32,
) -> Result<PgStore, StoreError> {
    let store = PgStore::builder(url)
        .schema(schema.to_string())
        .policy(Policy::default())
        .audit(s.audit())
        .max_connections(pool)
        .connect()
        .await?;
    store.migrate().await?;
    Ok(store)
}
