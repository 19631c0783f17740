//! The schedule statements (table `leasehold_schedules`), written once in
//! a [`Dialect`]'s placeholder style, and the binding of a put's values.
//!
//! The text each dialect gets is fixed by the test below: a change to it
//! is a change to what both stores send.

use crate::affected::RowsAffected;
use crate::column::{Column, SqlRow};
use crate::dialect::Dialect;
use crate::job_sql::{Exec, FindJob, JobSql, MapError};
use crate::prune_sql;
use crate::schedule_columns::{decode_schedule, ScheduleColumns, SCHEDULE_COLUMNS};
use leasehold_core::transition::{self, PrunePlan, PutPlan};
use leasehold_core::{
    FireRequest, JobId, JobRecord, ListSchedulesRequest, Policy, Schedule, ScheduleRecord,
    StoreError, StoreTime,
};
use sqlx::query::Query;
use sqlx::{Database, Encode, Executor, IntoArguments, Type};
use std::marker::PhantomData;

/// Columns an update of a schedule writes (all but the name it is found
/// by and `created_at`), in bind order.
const UPDATED: [&str; 11] = [
    "queue",
    "payload",
    "rule_kind",
    "cron_expr",
    "time_zone",
    "interval_ms",
    "catch_up_max",
    "jitter_ms",
    "max_attempts",
    "version",
    "updated_at",
];

/// The schedule statements in driver `DB`'s dialect. Build it once per
/// store.
#[derive(Debug)]
pub struct ScheduleSql<DB> {
    /// One schedule by name (`name` bound first).
    select: String,
    /// One schedule by name, its row locked to the transaction.
    select_locked: String,
    /// Up to a limit of schedules named after a name, in byte order
    /// (`after`, then `limit`).
    list: String,
    /// Removes a schedule by name.
    delete: String,
    /// Inserts a schedule (see [`ScheduleSql::put`]).
    insert: String,
    /// Writes a schedule over the version it was loaded at (see
    /// [`ScheduleSql::put`]).
    update: String,
    /// The latest pruned plan time of a schedule
    /// ([`prune_sql::pruned_plan_time`]).
    pruned: String,
    /// Raises that mark ([`prune_sql::raise_plan_time`]).
    raise: String,
    /// The store's own error mapping.
    map: MapError,
    driver: PhantomData<DB>,
}

impl<DB> ScheduleSql<DB> {
    /// The statements in `dialect` (the dialect of `DB`), reporting
    /// driver errors through `map`.
    pub fn new(dialect: Dialect, map: MapError) -> Self {
        let p = |n| dialect.placeholder(n);
        let select = format!(
            "SELECT {SCHEDULE_COLUMNS} FROM leasehold_schedules WHERE name = {}",
            p(1)
        );
        let order = format!("name{}", dialect.byte_order());
        let sets: Vec<String> = UPDATED
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} = {}", p(i + 1)))
            .collect();
        let n = UPDATED.len();
        ScheduleSql {
            select_locked: format!("{select}{}", dialect.row_lock()),
            list: format!(
                "SELECT {SCHEDULE_COLUMNS} FROM leasehold_schedules \
                 WHERE {order} > {} ORDER BY {order} LIMIT {}",
                p(1),
                p(2)
            ),
            delete: format!("DELETE FROM leasehold_schedules WHERE name = {}", p(1)),
            insert: format!(
                "INSERT INTO leasehold_schedules ({SCHEDULE_COLUMNS}) VALUES ({})",
                dialect.placeholders(1, 13)
            ),
            update: format!(
                "UPDATE leasehold_schedules SET {} WHERE name = {} AND version = {}",
                sets.join(", "),
                p(n + 1),
                p(n + 2)
            ),
            pruned: prune_sql::pruned_plan_time(dialect),
            raise: prune_sql::raise_plan_time(dialect),
            select,
            map,
            driver: PhantomData,
        }
    }
}

// What the schedule operations need of a driver, said once for all.
impl<DB> ScheduleSql<DB>
where
    DB: Database<Row: SqlRow, QueryResult: RowsAffected>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> String: Encode<'q, DB> + Type<DB>,
    for<'q> Vec<u8>: Encode<'q, DB> + Type<DB>,
    for<'q> Option<String>: Encode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB> + Type<DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
{
    /// Schedule `name`, if it exists; its row locked to the transaction
    /// when `lock` is set (where the dialect locks rows).
    pub async fn load<'c>(&self, e: impl Exec<'c, DB>, name: &str, lock: bool) -> Loaded {
        let sql = if lock {
            &self.select_locked
        } else {
            &self.select
        };
        let row = sqlx::query(sql).bind(name).fetch_optional(e).await;
        row.map_err(self.map)?
            .as_ref()
            .map(decode_schedule)
            .transpose()
    }

    /// Removes schedule `name`; whether it existed.
    pub async fn remove<'c>(&self, e: impl Exec<'c, DB>, name: &str) -> Result<bool, StoreError> {
        let res = sqlx::query(&self.delete).bind(name).execute(e).await;
        Ok(res.map_err(self.map)?.rows_affected() > 0)
    }

    /// Up to `req.limit` schedules named after `req.after`, in byte order
    /// (as every store lists names).
    pub async fn page<'c>(&self, e: impl Exec<'c, DB>, req: &ListSchedulesRequest) -> Listed {
        let after = req.after.as_deref().unwrap_or("");
        let q = sqlx::query(&self.list).bind(after);
        let rows = q.bind(i64::from(req.limit)).fetch_all(e).await;
        rows.map_err(self.map)?
            .iter()
            .map(decode_schedule)
            .collect()
    }

    /// What a fire reads before the core decides it: schedule `req.name`
    /// (a fire locks no schedule row) and the job already enqueued under
    /// the plan time's key, if any. A bad name is refused before any read;
    /// with no job under the key, a plan time at or before the schedule's
    /// latest pruned one is refused after them
    /// ([`transition::refuse_pruned_plan_time`]): its job was pruned.
    pub async fn fire_reads(
        &self,
        conn: &mut DB::Connection,
        jobs: &JobSql<DB>,
        req: &FireRequest,
    ) -> Result<(Option<ScheduleRecord>, Option<JobRecord>), StoreError>
    where
        for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    {
        leasehold_core::schedule::check_name(&req.name)?;
        let schedule = self.load(&mut *conn, &req.name, false).await?;
        let key = transition::fire_key(req);
        let existing = jobs.find(&mut *conn, FindJob::Key(&key)).await?;
        if existing.is_none() {
            let q = sqlx::query(&self.pruned).bind(req.name.as_str());
            let row = q.fetch_optional(&mut *conn).await.map_err(self.map)?;
            let through: Option<i64> = row.map(|r| r.column(0)).transpose()?;
            transition::refuse_pruned_plan_time(req, through.map(StoreTime))?;
        }
        Ok((schedule, existing))
    }

    /// Raises each schedule's mark of its latest pruned plan time to the
    /// one `plan` prunes; a mark is never lowered.
    pub async fn raise_marks(
        &self,
        conn: &mut DB::Connection,
        plan: &PrunePlan,
    ) -> Result<(), StoreError>
    where
        for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    {
        for (name, t) in &plan.plan_times {
            let q = sqlx::query(&self.raise).bind(name.as_str()).bind(t.0);
            q.execute(&mut *conn).await.map_err(self.map)?;
        }
        Ok(())
    }

    /// Puts `spec` as the core decides over `old`, the schedule's row as
    /// loaded, at store time `now`: nothing when the core leaves it as it
    /// is, else its row written ([`ScheduleSql::write`], `map` seeing the
    /// driver errors).
    pub async fn put_schedule<'c>(
        &self,
        e: impl Exec<'c, DB>,
        spec: &Schedule,
        old: Option<&ScheduleRecord>,
        policy: &Policy,
        now: StoreTime,
        map: impl FnOnce(sqlx::Error) -> StoreError,
    ) -> Result<(), StoreError> {
        let PutPlan::Write(rec) = transition::put_schedule(spec, old, policy, now)? else {
            return Ok(());
        };
        let c = ScheduleColumns::of(&rec)?;
        self.write(e, &c, old.map(|o| o.version), map).await
    }

    /// Writes `c` ([`ScheduleSql::put`]) over the row loaded at
    /// `loaded_version`. A write that changed no row lost to a concurrent
    /// writer: [`StoreError::Conflict`], which the store's transaction
    /// retries. `map` sees every driver error in place of the store's
    /// own mapping (a store may read a unique violation of a first put as
    /// that conflict too).
    async fn write<'c>(
        &self,
        e: impl Exec<'c, DB>,
        c: &ScheduleColumns,
        loaded_version: Option<u64>,
        map: impl FnOnce(sqlx::Error) -> StoreError,
    ) -> Result<(), StoreError> {
        let res = self.put(c, loaded_version).execute(e).await.map_err(map)?;
        if res.rows_affected() != 1 {
            return Err(StoreError::Conflict(JobId(0)));
        }
        Ok(())
    }

    /// The statement writing `c`, with its values bound: an insert when
    /// the schedule had no row (`loaded_version` is `None`), else an
    /// update of the row loaded at `loaded_version`. Either writes one row,
    /// or none when a concurrent writer won.
    fn put<'q>(
        &'q self,
        c: &'q ScheduleColumns,
        loaded_version: Option<u64>,
    ) -> Query<'q, DB, <DB as Database>::Arguments<'q>> {
        let q = match loaded_version {
            None => sqlx::query(&self.insert).bind(&c.name),
            Some(_) => sqlx::query(&self.update),
        };
        let q = q
            .bind(&c.queue)
            .bind(&c.payload)
            .bind(&c.rule_kind)
            .bind(&c.cron_expr)
            .bind(&c.time_zone)
            .bind(c.interval_ms)
            .bind(c.catch_up_max)
            .bind(c.jitter_ms)
            .bind(c.max_attempts)
            .bind(c.version);
        match loaded_version {
            None => q.bind(c.created_at).bind(c.updated_at),
            // Stored versions fit an i64 (`ScheduleColumns::of`).
            Some(old) => q.bind(c.updated_at).bind(&c.name).bind(old as i64),
        }
    }
}

/// [`ScheduleSql::load`]'s answer.
type Loaded = Result<Option<ScheduleRecord>, StoreError>;
/// [`ScheduleSql::page`]'s answer.
type Listed = Result<Vec<ScheduleRecord>, StoreError>;

#[cfg(test)]
mod tests {
    use super::ScheduleSql;
    use crate::dialect::{POSTGRES, SQLITE};
    use crate::job_sql::tests::no_map;
    use crate::schedule_columns::SCHEDULE_COLUMNS;
    use sqlx::{Postgres, Sqlite};

    /// Each store sends exactly the text it sent before the statements
    /// were shared.
    #[test]
    fn each_dialect_gets_its_statements_to_the_letter() {
        let c = SCHEDULE_COLUMNS;
        let pg = ScheduleSql::<Postgres>::new(POSTGRES, no_map);
        assert_eq!(
            pg.select,
            format!("SELECT {c} FROM leasehold_schedules WHERE name = $1")
        );
        assert_eq!(
            pg.select_locked,
            format!("SELECT {c} FROM leasehold_schedules WHERE name = $1 FOR UPDATE")
        );
        assert_eq!(
            pg.list,
            format!(
                "SELECT {c} FROM leasehold_schedules \
                 WHERE name COLLATE \"C\" > $1 ORDER BY name COLLATE \"C\" LIMIT $2"
            )
        );
        assert_eq!(pg.delete, "DELETE FROM leasehold_schedules WHERE name = $1");
        assert_eq!(
            pg.insert,
            format!(
                "INSERT INTO leasehold_schedules ({c}) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
            )
        );
        assert_eq!(
            pg.update,
            "UPDATE leasehold_schedules SET queue = $1, payload = $2, rule_kind = $3, \
             cron_expr = $4, time_zone = $5, interval_ms = $6, catch_up_max = $7, \
             jitter_ms = $8, max_attempts = $9, version = $10, updated_at = $11 \
             WHERE name = $12 AND version = $13"
        );
        assert_eq!(
            pg.pruned,
            "SELECT plan_time FROM leasehold_pruned_plan_times WHERE name = $1"
        );

        let lite = ScheduleSql::<Sqlite>::new(SQLITE, no_map);
        let select = format!("SELECT {c} FROM leasehold_schedules WHERE name = ?");
        assert_eq!(lite.select, select);
        assert_eq!(lite.select_locked, select, "SQLite locks the file instead");
        assert_eq!(
            lite.list,
            format!("SELECT {c} FROM leasehold_schedules WHERE name > ? ORDER BY name LIMIT ?")
        );
        assert_eq!(
            lite.delete,
            "DELETE FROM leasehold_schedules WHERE name = ?"
        );
        assert_eq!(
            lite.insert,
            format!(
                "INSERT INTO leasehold_schedules ({c}) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            )
        );
        assert_eq!(
            lite.update,
            "UPDATE leasehold_schedules SET queue = ?, payload = ?, rule_kind = ?, \
             cron_expr = ?, time_zone = ?, interval_ms = ?, catch_up_max = ?, jitter_ms = ?, \
             max_attempts = ?, version = ?, updated_at = ? WHERE name = ? AND version = ?"
        );
        assert_eq!(
            lite.pruned,
            "SELECT plan_time FROM leasehold_pruned_plan_times WHERE name = ?"
        );
    }
}
