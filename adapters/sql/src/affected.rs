//! How many rows a statement changed, read the same way from either
//! driver's result (sqlx 0.8 gives each its own inherent method, no trait).

/// A statement's result that counts the rows it changed.
pub trait RowsAffected {
    /// Rows the statement inserted, updated or deleted.
    fn rows_affected(&self) -> u64;
}

impl RowsAffected for sqlx::postgres::PgQueryResult {
    fn rows_affected(&self) -> u64 {
        sqlx::postgres::PgQueryResult::rows_affected(self)
    }
}

impl RowsAffected for sqlx::sqlite::SqliteQueryResult {
    fn rows_affected(&self) -> u64 {
        sqlx::sqlite::SqliteQueryResult::rows_affected(self)
    }
}
