//! Reading a column of either driver's rows as a typed value, so that the
//! codecs ([`crate::job_columns`], [`crate::schedule_columns`]) read rows
//! once for both drivers.
//!
//! A value the driver cannot decode (a wrong type, a missing column) is
//! [`StoreError::Corrupt`]: the row is reported, never used.

use leasehold_core::StoreError;
use sqlx::{ColumnIndex, Decode, Row, Type};

/// A row whose column `i` reads as a `T`.
pub trait Column<T> {
    /// Column `i` (from 0) as a `T`.
    fn column(&self, i: usize) -> Result<T, StoreError>;
}

impl<R, T> Column<T> for R
where
    R: Row,
    usize: ColumnIndex<R>,
    T: for<'r> Decode<'r, R::Database> + Type<R::Database>,
{
    fn column(&self, i: usize) -> Result<T, StoreError> {
        self.try_get(i)
            .map_err(|e| StoreError::Corrupt(e.to_string()))
    }
}

/// A row whose columns read as every type the codecs store: both
/// drivers' rows are.
pub trait SqlRow:
    Column<i64>
    + Column<i32>
    + Column<bool>
    + Column<String>
    + Column<Vec<u8>>
    + Column<Option<i64>>
    + Column<Option<String>>
    + Column<Option<Vec<u8>>>
{
}

impl SqlRow for sqlx::postgres::PgRow {}
impl SqlRow for sqlx::sqlite::SqliteRow {}
