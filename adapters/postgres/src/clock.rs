//! The store clock: the database server's clock in milliseconds, read in
//! SQL ([`STMT_CLOCK`], [`LIVE_CLOCK`]), or, in tests only, the clock the
//! builder was given instead (bound as `$1`).

use crate::{error, PgStore};
use leasehold_core::{StoreError, StoreTime};
use sqlx::postgres::PgConnection;

/// The database clock in ms, stable within a statement; `$1` overrides it.
pub(crate) const STMT_CLOCK: &str =
    "COALESCE($1::bigint, floor(extract(epoch from statement_timestamp()) * 1000)::bigint)";
/// The database clock in ms at the moment of evaluation; `$1` overrides it.
pub(crate) const LIVE_CLOCK: &str =
    "COALESCE($1::bigint, floor(extract(epoch from clock_timestamp()) * 1000)::bigint)";

impl PgStore {
    pub(crate) fn clock_param(&self) -> Option<i64> {
        self.clock_override.as_ref().map(|c| c.now().0)
    }

    /// The store's clock, read now.
    pub(crate) async fn clock_now(&self, conn: &mut PgConnection) -> Result<StoreTime, StoreError> {
        let t: i64 = sqlx::query_scalar(&format!("SELECT {LIVE_CLOCK}"))
            .bind(self.clock_param())
            .fetch_one(&mut *conn)
            .await
            .map_err(error::map)?;
        Ok(StoreTime(t))
    }

    /// The store's clock, read now (outside a transaction).
    pub(crate) async fn clock_now_pooled(&self) -> Result<StoreTime, StoreError> {
        if let Some(c) = &self.clock_override {
            return Ok(c.now());
        }
        let sql = format!("SELECT {LIVE_CLOCK}");
        let t: i64 = sqlx::query_scalar(&sql)
            .bind(None::<i64>)
            .fetch_one(&self.pool)
            .await
            .map_err(error::map)?;
        Ok(StoreTime(t))
    }
}
