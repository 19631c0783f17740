//! The job reads both stores send the same way (table `leasehold_jobs`):
//! one job by id, many by id ([`MAX_IDS_PER_READ`] a statement), one by
//! idempotency key, a page in id order, the
//! running jobs of a queue counted, every queue's jobs counted by state
//! ([`COUNTS`]), and the oldest prunable jobs offered to the core's prune,
//! written once in a [`Dialect`]'s placeholder style and run on either
//! driver.
//!
//! Each store keeps its own error mapping (`map`): what a driver error
//! means (busy, unavailable, a conflict) differs between them.

use crate::column::{Column, SqlRow};
use crate::dialect::Dialect;
use crate::job_columns::{decode_job, to_i64, COLUMNS};
use crate::prune_sql;
use leasehold_core::job_counts::CountsBuilder;
use leasehold_core::transition::{self, PrunePlan};
use leasehold_core::{JobCounts, JobId, JobRecord, JobState, ListRequest};
use leasehold_core::{PruneRequest, StoreError, StoreTime};
use sqlx::{Database, Encode, Executor, IntoArguments, Type};
use std::marker::PhantomData;

/// Every queue's jobs counted by state, with the earliest enqueue time and
/// lease expiry of each group: one scan of the table whatever its size,
/// for `Store::count_jobs`. The pending group's earliest enqueue is the
/// oldest pending job's; the running group's earliest expiry the nearest.
pub const COUNTS: &str = "SELECT queue, state, COUNT(*), MIN(created_at), MIN(expires_at) \
     FROM leasehold_jobs GROUP BY queue, state";

/// Most ids [`JobSql::many`] sends in one statement: a longer list is
/// read in several, each one snapshot.
pub const MAX_IDS_PER_READ: usize = 1_000;

/// How a store maps a driver error to a [`StoreError`].
pub type MapError = fn(sqlx::Error) -> StoreError;

/// The job reads in driver `DB`'s dialect. Build it once per store.
#[derive(Debug)]
pub struct JobSql<DB> {
    /// One job by id.
    by_id: String,
    /// Jobs by id, the ids as one JSON array.
    by_ids: String,
    /// One job by idempotency key.
    by_key: String,
    /// Up to a limit of jobs after an id, in id order.
    page: String,
    /// How many jobs of a queue are running.
    running: String,
    /// The oldest prunable jobs ([`prune_sql::scan`]).
    prunable: String,
    /// The store's own error mapping.
    map: MapError,
    driver: PhantomData<DB>,
}

impl<DB> JobSql<DB> {
    /// The reads in `dialect` (the dialect of `DB`), reporting driver
    /// errors through `map`.
    pub fn new(dialect: Dialect, map: MapError) -> Self {
        let p = |n| dialect.placeholder(n);
        JobSql {
            by_id: format!("SELECT {COLUMNS} FROM leasehold_jobs WHERE id = {}", p(1)),
            by_ids: format!(
                "SELECT {COLUMNS} FROM leasehold_jobs WHERE id IN {}",
                dialect.json_ids(1)
            ),
            by_key: format!(
                "SELECT {COLUMNS} FROM leasehold_jobs WHERE idempotency_key = {}",
                p(1)
            ),
            page: format!(
                "SELECT {COLUMNS} FROM leasehold_jobs WHERE id > {} ORDER BY id LIMIT {}",
                p(1),
                p(2)
            ),
            running: format!(
                "SELECT COUNT(*) FROM leasehold_jobs WHERE queue = {} AND state = 'running'",
                p(1)
            ),
            prunable: prune_sql::scan(dialect),
            map,
            driver: PhantomData,
        }
    }
}

// What the reads need of a driver, said once for all of them.
impl<DB> JobSql<DB>
where
    DB: Database<Row: SqlRow>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
{
    /// The job `by` names, if it exists (an id too large to be stored
    /// names none, as in [`JobSql::many`]).
    pub async fn find<'c>(&self, e: impl Exec<'c, DB>, by: FindJob<'_>) -> Found {
        let q = match by {
            FindJob::Id(id) => match to_i64(id.0) {
                Ok(id) => sqlx::query(&self.by_id).bind(id),
                Err(_) => return Ok(None),
            },
            FindJob::Key(key) => sqlx::query(&self.by_key).bind(key),
        };
        let row = q.fetch_optional(e).await.map_err(self.map)?;
        row.as_ref().map(decode_job).transpose()
    }

    /// The jobs `ids` name, one entry per id in the order given (`None`
    /// for an unknown id, or one too large to be stored), in statements of
    /// at most [`MAX_IDS_PER_READ`] ids, on `conn`: `Store::get_many`.
    pub async fn many(
        &self,
        conn: &mut DB::Connection,
        ids: &[JobId],
    ) -> Result<Vec<Option<JobRecord>>, StoreError>
    where
        for<'q> String: Encode<'q, DB> + Type<DB>,
        for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    {
        let mut wanted: Vec<i64> = ids.iter().filter_map(|id| to_i64(id.0).ok()).collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut rows = Vec::with_capacity(wanted.len());
        // Bounded: one statement per MAX_IDS_PER_READ ids.
        for chunk in wanted.chunks(MAX_IDS_PER_READ) {
            let json = serde_json::to_string(chunk)
                .map_err(|e| StoreError::Corrupt(format!("id list encoding: {e}")))?;
            let found = sqlx::query(&self.by_ids)
                .bind(json)
                .fetch_all(&mut *conn)
                .await
                .map_err(self.map)?;
            for row in &found {
                rows.push(decode_job(row)?);
            }
        }
        Ok(leasehold_core::in_asked_order(ids, rows))
    }

    /// Up to `req.limit` jobs after `req.after`, in id order.
    pub async fn page<'c>(&self, e: impl Exec<'c, DB>, req: &ListRequest) -> Page {
        let after = req.after.map(|a| to_i64(a.0)).transpose()?.unwrap_or(0);
        let q = sqlx::query(&self.page).bind(after);
        let rows = q.bind(i64::from(req.limit)).fetch_all(e).await;
        rows.map_err(self.map)?.iter().map(decode_job).collect()
    }

    /// Every queue's jobs counted by state ([`COUNTS`]), in one statement:
    /// a consistent count.
    pub async fn counts<'c>(&self, e: impl Exec<'c, DB>) -> Result<JobCounts, StoreError> {
        let rows = sqlx::query(COUNTS).fetch_all(e).await.map_err(self.map)?;
        let mut counts = CountsBuilder::default();
        for row in &rows {
            let queue: String = row.column(0)?;
            let state: String = row.column(1)?;
            let state = JobState::parse(&state)
                .ok_or_else(|| StoreError::Corrupt(format!("job state {state:?}")))?;
            let n: i64 = row.column(2)?;
            let n = u64::try_from(n).map_err(|_| StoreError::Corrupt(format!("count {n}")))?;
            let created: Option<i64> = row.column(3)?;
            let expires: Option<i64> = row.column(4)?;
            counts
                .queue(&queue)
                .add(state, n, created.map(StoreTime), expires.map(StoreTime));
        }
        Ok(counts.finish(true))
    }

    /// How many jobs of `queue` are running (a count past `u32::MAX` reads
    /// as `u32::MAX`: any limit is reached).
    pub async fn running<'c>(&self, e: impl Exec<'c, DB>, queue: &str) -> Result<u32, StoreError> {
        let row = sqlx::query(&self.running)
            .bind(queue)
            .fetch_one(e)
            .await
            .map_err(self.map)?;
        let n: i64 = row.column(0)?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// What a prune by `req` at store time `now` deletes: the core's
    /// [`transition::prune`] over the rows [`prune_sql::scan`] offers.
    pub async fn prune_plan<'c>(
        &self,
        e: impl Exec<'c, DB>,
        req: &PruneRequest,
        now: StoreTime,
    ) -> Result<PrunePlan, StoreError> {
        let rows = sqlx::query(&self.prunable)
            .bind(req.cutoff(now).0)
            .bind(i64::from(req.limit))
            .fetch_all(e)
            .await
            .map_err(self.map)?;
        let loaded = rows.iter().map(decode_job).collect::<Result<Vec<_>, _>>()?;
        Ok(transition::prune(&loaded, req, now)?)
    }
}

/// What names the one job [`JobSql::find`] reads.
#[derive(Clone, Copy, Debug)]
pub enum FindJob<'a> {
    /// The job with this id.
    Id(JobId),
    /// The job enqueued under this idempotency key.
    Key(&'a str),
}

/// [`JobSql::find`]'s answer.
type Found = Result<Option<JobRecord>, StoreError>;
/// [`JobSql::page`]'s answer.
type Page = Result<Vec<JobRecord>, StoreError>;

/// An executor of driver `DB`'s statements (a pool or a connection): a
/// shorter name for what every shared operation runs on.
pub trait Exec<'c, DB: Database>: Executor<'c, Database = DB> {}

impl<'c, DB: Database, E: Executor<'c, Database = DB>> Exec<'c, DB> for E {}

#[cfg(test)]
pub(crate) mod tests {
    use super::JobSql;
    use leasehold_core::StoreError;

    /// The statements' text does not depend on the error mapping.
    pub(crate) fn no_map(e: sqlx::Error) -> StoreError {
        StoreError::Unavailable(e.to_string())
    }
    use crate::dialect::{POSTGRES, SQLITE};
    use crate::job_columns::COLUMNS;
    use sqlx::{Postgres, Sqlite};

    /// Each store sends exactly the text it sent before the reads were
    /// shared: (by id, by key, page, running count) per dialect.
    #[test]
    fn each_dialect_gets_its_reads_to_the_letter() {
        let pg = JobSql::<Postgres>::new(POSTGRES, no_map);
        let lite = JobSql::<Sqlite>::new(SQLITE, no_map);
        let sent = [
            (&pg.by_id, &pg.by_ids, &pg.by_key, &pg.page, &pg.running),
            (
                &lite.by_id,
                &lite.by_ids,
                &lite.by_key,
                &lite.page,
                &lite.running,
            ),
        ];
        let want = [("$1", "$1", "$1", "$2"), ("?", "?", "?", "?")];
        for ((by_id, by_ids, by_key, page, running), (id, key, after, limit)) in
            sent.into_iter().zip(want)
        {
            let select = format!("SELECT {COLUMNS} FROM leasehold_jobs WHERE");
            assert_eq!(*by_id, format!("{select} id = {id}"));
            assert!(
                by_ids.starts_with(&format!("{select} id IN (SELECT ")),
                "{by_ids}"
            );
            assert_eq!(*by_key, format!("{select} idempotency_key = {key}"));
            assert_eq!(
                *page,
                format!("{select} id > {after} ORDER BY id LIMIT {limit}")
            );
            assert_eq!(
                *running,
                format!(
                    "SELECT COUNT(*) FROM leasehold_jobs WHERE queue = {id} AND state = 'running'"
                )
            );
        }
    }
}
