//! One job's audit trail as both SQL adapters read it for an operator's
//! `leasehold show`: a store's own trail statement, bound and run alike,
//! and the events decoded from their stored JSON text.

use crate::job_columns::to_i64;
use crate::job_sql::{Exec, MapError};
use leasehold_core::{Event, JobId, StoreError};
use sqlx::{Database, Encode, FromRow, IntoArguments, Type};

/// Up to `limit` audit events of `job`, read by `sql`: a store's own
/// statement, which takes the job id and then the limit and answers each
/// event's JSON text, in the store's order.
pub async fn read_trail<'c, DB>(
    e: impl Exec<'c, DB>,
    sql: &str,
    job: JobId,
    limit: u32,
    map: MapError,
) -> Result<Vec<Event>, StoreError>
where
    DB: Database,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
    for<'r> (String,): FromRow<'r, DB::Row>,
{
    let texts: Vec<String> = sqlx::query_scalar(sql)
        .bind(to_i64(job.0)?)
        .bind(i64::from(limit))
        .fetch_all(e)
        .await
        .map_err(map)?;
    decode_trail(job, &texts)
}

/// The events of `job`, from the JSON text each was stored as.
fn decode_trail(job: JobId, texts: &[String]) -> Result<Vec<Event>, StoreError> {
    texts
        .iter()
        .map(|t| {
            serde_json::from_str(t).map_err(|e| StoreError::Corrupt(format!("event of {job}: {e}")))
        })
        .collect()
}
