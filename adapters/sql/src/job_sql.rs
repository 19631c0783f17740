//! The job reads both stores send the same way (table `leasehold_jobs`):
//! one job by id, one by idempotency key, and a page in id order, written
//! once in a [`Dialect`]'s placeholder style and run on either driver.
//!
//! Each store keeps its own error mapping (`map`): what a driver error
//! means (busy, unavailable, a conflict) differs between them.

use crate::column::SqlRow;
use crate::dialect::Dialect;
use crate::job_columns::{decode_job, to_i64, COLUMNS};
use leasehold_core::{JobId, JobRecord, ListRequest, StoreError};
use sqlx::{Database, Encode, Executor, IntoArguments, Type};

/// How a store maps a driver error to a [`StoreError`].
pub type MapError = fn(sqlx::Error) -> StoreError;

/// The job reads of one dialect. Build it once per store.
#[derive(Clone, Debug)]
pub struct JobSql {
    /// One job by id.
    by_id: String,
    /// One job by idempotency key.
    by_key: String,
    /// Up to a limit of jobs after an id, in id order.
    page: String,
}

impl JobSql {
    /// The reads in `dialect`.
    pub fn new(dialect: Dialect) -> Self {
        let p = |n| dialect.placeholder(n);
        JobSql {
            by_id: format!("SELECT {COLUMNS} FROM leasehold_jobs WHERE id = {}", p(1)),
            by_key: format!(
                "SELECT {COLUMNS} FROM leasehold_jobs WHERE idempotency_key = {}",
                p(1)
            ),
            page: format!(
                "SELECT {COLUMNS} FROM leasehold_jobs WHERE id > {} ORDER BY id LIMIT {}",
                p(1),
                p(2)
            ),
        }
    }

    /// Job `id`, if it exists.
    pub async fn by_id<'c, DB, E>(
        &self,
        exec: E,
        id: JobId,
        map: MapError,
    ) -> Result<Option<JobRecord>, StoreError>
    where
        DB: Database,
        DB::Row: SqlRow,
        E: Executor<'c, Database = DB>,
        for<'q> i64: Encode<'q, DB> + Type<DB>,
        for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
    {
        let row = sqlx::query(&self.by_id)
            .bind(to_i64(id.0)?)
            .fetch_optional(exec)
            .await
            .map_err(map)?;
        row.as_ref().map(decode_job).transpose()
    }

    /// The job enqueued under idempotency key `key`, if any.
    pub async fn by_key<'c, DB, E>(
        &self,
        exec: E,
        key: &str,
        map: MapError,
    ) -> Result<Option<JobRecord>, StoreError>
    where
        DB: Database,
        DB::Row: SqlRow,
        E: Executor<'c, Database = DB>,
        for<'q> &'q str: Encode<'q, DB> + Type<DB>,
        for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
    {
        let row = sqlx::query(&self.by_key)
            .bind(key)
            .fetch_optional(exec)
            .await
            .map_err(map)?;
        row.as_ref().map(decode_job).transpose()
    }

    /// Up to `req.limit` jobs after `req.after`, in id order.
    pub async fn page<'c, DB, E>(
        &self,
        exec: E,
        req: &ListRequest,
        map: MapError,
    ) -> Result<Vec<JobRecord>, StoreError>
    where
        DB: Database,
        DB::Row: SqlRow,
        E: Executor<'c, Database = DB>,
        for<'q> i64: Encode<'q, DB> + Type<DB>,
        for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
    {
        let after = req.after.map(|a| to_i64(a.0)).transpose()?.unwrap_or(0);
        let rows = sqlx::query(&self.page)
            .bind(after)
            .bind(i64::from(req.limit))
            .fetch_all(exec)
            .await
            .map_err(map)?;
        rows.iter().map(decode_job).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::JobSql;
    use crate::dialect::{POSTGRES, SQLITE};
    use crate::job_columns::COLUMNS;

    /// Each store sends exactly the text it sent before the reads were
    /// shared.
    #[test]
    fn each_dialect_gets_its_reads_to_the_letter() {
        let c = COLUMNS;
        let pg = JobSql::new(POSTGRES);
        assert_eq!(
            pg.by_id,
            format!("SELECT {c} FROM leasehold_jobs WHERE id = $1")
        );
        assert_eq!(
            pg.by_key,
            format!("SELECT {c} FROM leasehold_jobs WHERE idempotency_key = $1")
        );
        assert_eq!(
            pg.page,
            format!("SELECT {c} FROM leasehold_jobs WHERE id > $1 ORDER BY id LIMIT $2")
        );
        let lite = JobSql::new(SQLITE);
        assert_eq!(
            lite.by_id,
            format!("SELECT {c} FROM leasehold_jobs WHERE id = ?")
        );
        assert_eq!(
            lite.by_key,
            format!("SELECT {c} FROM leasehold_jobs WHERE idempotency_key = ?")
        );
        assert_eq!(
            lite.page,
            format!("SELECT {c} FROM leasehold_jobs WHERE id > ? ORDER BY id LIMIT ?")
        );
    }
}
