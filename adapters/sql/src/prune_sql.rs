//! The statements of prune both stores send alike, in a [`Dialect`]'s
//! placeholder style: the per-schedule mark of the latest pruned plan time
//! (table `leasehold_pruned_plan_times`, a migration of each store), and
//! the scan, and the bounds of the audit prune. The scan and the marks
//! run as [`JobSql::prune_plan`](crate::job_sql::JobSql::prune_plan) and
//! [`ScheduleSql::raise_marks`](crate::schedule_sql::ScheduleSql::raise_marks);
//! how the rows and the audit are deleted differs between the stores and
//! stays in each.
//!
//! Why a mark: a plan time's job holds the key that makes a second fire of
//! it answer that job; once the job is pruned the key is gone, and the
//! mark is what refuses the fire instead
//! (`leasehold_core::transition::refuse_pruned_plan_time`).

use crate::dialect::Dialect;
use crate::job_columns::COLUMNS;
use leasehold_core::{PruneRequest, StoreError, StoreTime};
use sqlx::{Database, Encode, Executor, IntoArguments, Type};

/// The states a prune may delete, as an SQL list.
pub const TERMINAL_STATES: &str = "('succeeded', 'dead', 'cancelled')";

/// The latest pruned plan time of a schedule (`name` bound first).
pub fn pruned_plan_time(d: Dialect) -> String {
    format!(
        "SELECT plan_time FROM leasehold_pruned_plan_times WHERE name = {}",
        d.placeholder(1)
    )
}

/// Raises a schedule's mark to a plan time (`name`, then `plan_time`);
/// never lowers it.
pub fn raise_plan_time(d: Dialect) -> String {
    format!(
        "INSERT INTO leasehold_pruned_plan_times (name, plan_time) VALUES ({}) \
         ON CONFLICT (name) DO UPDATE SET plan_time = excluded.plan_time \
         WHERE excluded.plan_time > leasehold_pruned_plan_times.plan_time",
        d.placeholders(1, 2)
    )
}

/// The filter of the prune scan: terminal, finished at or before the
/// cutoff (bound at `n`).
pub fn prunable_filter(d: Dialect, n: usize) -> String {
    format!(
        "state IN {TERMINAL_STATES} AND updated_at <= {}",
        d.placeholder(n)
    )
}

/// The prune scan: the oldest prunable rows (cutoff bound first, then the
/// limit), oldest finish first; locked where the dialect locks rows, a row
/// another transaction holds passed over (it goes in a later call).
pub fn scan(d: Dialect) -> String {
    format!(
        "SELECT {COLUMNS} FROM leasehold_jobs WHERE {} ORDER BY updated_at, id LIMIT {}{}",
        prunable_filter(d, 1),
        d.placeholder(2),
        d.skip_locked()
    )
}

/// The most audit events one prune call reads and deletes, as a bound
/// parameter: the core's `PruneRequest::audit_budget` (`limit ×`
/// `AUDIT_EVENTS_PER_JOB`, ten per job), the same bound as the memory
/// store's.
pub fn audit_budget(req: &PruneRequest) -> i64 {
    i64::from(req.audit_budget())
}

/// Runs a store's own audit prune `sql`, which reads and deletes at most
/// [`audit_budget`] audit events from the oldest, those written at or
/// before the audit cutoff (bound in that order): the tables differ
/// between the stores, the bounds do not.
///
/// (Spelled without `job_sql`'s `Exec` and `MapError`: `job_sql` builds
/// its prune scan from this file, and files here import one way.)
pub async fn prune_audit<'c, DB>(
    e: impl Executor<'c, Database = DB>,
    sql: &str,
    req: &PruneRequest,
    now: StoreTime,
    map: fn(sqlx::Error) -> StoreError,
) -> Result<(), StoreError>
where
    DB: Database,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
{
    sqlx::query(sql)
        .bind(audit_budget(req))
        .bind(req.audit_cutoff(now).0)
        .execute(e)
        .await
        .map_err(map)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{POSTGRES, SQLITE};

    /// The bound each store binds is the core's, ten events per job.
    #[test]
    fn the_audit_budget_is_the_cores() {
        let req = |limit| PruneRequest::new(leasehold_core::MIN_RETENTION, limit).unwrap();
        assert_eq!(audit_budget(&req(1)), 10);
        assert_eq!(audit_budget(&req(1_000)), 10_000);
        assert_eq!(audit_budget(&req(leasehold_core::MAX_PRUNE_LIMIT)), 100_000);
    }

    /// The text each store sends: a change here is a change to both.
    #[test]
    fn each_dialect_gets_its_placeholders() {
        assert_eq!(
            pruned_plan_time(POSTGRES),
            "SELECT plan_time FROM leasehold_pruned_plan_times WHERE name = $1"
        );
        assert!(pruned_plan_time(SQLITE).ends_with("name = ?"));
        assert!(raise_plan_time(POSTGRES).contains("VALUES ($1, $2)"));
        assert!(raise_plan_time(SQLITE).contains("VALUES (?, ?)"));
        assert_eq!(
            prunable_filter(POSTGRES, 1),
            "state IN ('succeeded', 'dead', 'cancelled') AND updated_at <= $1"
        );
        let filter = "state IN ('succeeded', 'dead', 'cancelled') AND updated_at <=";
        assert_eq!(
            scan(POSTGRES),
            format!(
                "SELECT {COLUMNS} FROM leasehold_jobs WHERE {filter} $1 \
                 ORDER BY updated_at, id LIMIT $2 FOR UPDATE SKIP LOCKED"
            )
        );
        assert_eq!(
            scan(SQLITE),
            format!(
                "SELECT {COLUMNS} FROM leasehold_jobs WHERE {filter} ? \
                 ORDER BY updated_at, id LIMIT ?"
            )
        );
    }
}
