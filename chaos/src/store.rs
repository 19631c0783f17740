//! The orchestrator's own connection to the store under test: set up,
//! enqueue, watch progress, export the audit log and final rows, and (on
//! PostgreSQL) terminate a worker's backends.

use crate::error::ChaosError;
use leasehold_core::{list_all, Event, JobId, JobRecord, NewJob, Policy, StoreError};
use leasehold_postgres::PgStore;
use leasehold_sqlite::SqliteStore;
use sqlx::Row;
use std::path::Path;

/// The store of a run.
pub enum RunStore {
    /// PostgreSQL, in the run's own schema.
    Postgres(Box<PgStore>),
    /// A SQLite file.
    Sqlite(Box<SqliteStore>),
}

/// Jobs not yet in a terminal state.
const UNFINISHED_SQL: &str =
    "SELECT COUNT(*) FROM leasehold_jobs WHERE state IN ('pending', 'running')";

/// `$1`'s LISTEN backends: connections whose last statement was `LISTEN`
/// (each with `true`, to share the row shape of the next one).
const LISTENER_PIDS_SQL: &str = "SELECT pid, true FROM pg_stat_activity \
     WHERE application_name = $1 AND query ILIKE 'LISTEN %' AND pid <> pg_backend_pid()";
/// Terminates them, each with whether it was. In the select list, not the
/// `WHERE`: the list is evaluated only for rows that passed the filter,
/// while `AND`'s evaluation order is the planner's to choose.
const TERMINATE_LISTENER_SQL: &str = "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity \
     WHERE application_name = $1 AND query ILIKE 'LISTEN %' AND pid <> pg_backend_pid()";

impl RunStore {
    /// Connects to PostgreSQL in `schema` (created and migrated).
    pub async fn postgres(url: &str, schema: &str) -> Result<RunStore, ChaosError> {
        let store = PgStore::builder(url)
            .schema(schema)
            .policy(Policy::default())
            .application_name("leasehold-chaos")
            .max_connections(4)
            .connect()
            .await
            .map_err(|e| ChaosError::store("connect", e))?;
        store
            .migrate()
            .await
            .map_err(|e| ChaosError::store("migrate", e))?;
        Ok(RunStore::Postgres(Box::new(store)))
    }

    /// Opens (creating and migrating) the SQLite file at `path`.
    pub async fn sqlite(path: &Path) -> Result<RunStore, ChaosError> {
        let store = SqliteStore::open(path, Policy::default())
            .await
            .map_err(|e| ChaosError::store("open", e))?;
        Ok(RunStore::Sqlite(Box::new(store)))
    }

    /// Enqueues a batch in one transaction; answers the ids in order.
    pub async fn enqueue_many(&self, jobs: &[NewJob]) -> Result<Vec<JobId>, StoreError> {
        match self {
            RunStore::Postgres(s) => s.enqueue_many(jobs).await,
            RunStore::Sqlite(s) => s.enqueue_many(jobs).await,
        }
    }

    /// How many jobs are pending or running.
    pub async fn unfinished(&self) -> Result<u64, StoreError> {
        let n: i64 = match self {
            RunStore::Postgres(s) => sqlx::query(UNFINISHED_SQL)
                .fetch_one(s.pool())
                .await
                .and_then(|r| r.try_get(0)),
            RunStore::Sqlite(s) => sqlx::query(UNFINISHED_SQL)
                .fetch_one(s.pool())
                .await
                .and_then(|r| r.try_get(0)),
        }
        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// The audit log, in commit order.
    pub async fn events(&self) -> Result<Vec<Event>, ChaosError> {
        match self {
            RunStore::Postgres(s) => s.events().await,
            RunStore::Sqlite(s) => s.events().await,
        }
        .map_err(|e| ChaosError::store("export the audit log", e))
    }

    /// Every job row, in id order.
    pub async fn rows(&self) -> Result<Vec<JobRecord>, ChaosError> {
        match self {
            RunStore::Postgres(s) => list_all(s.as_ref()).await,
            RunStore::Sqlite(s) => list_all(s.as_ref()).await,
        }
        .map_err(|e| ChaosError::store("read the final rows", e))
    }

    /// Terminates every PostgreSQL backend whose `application_name` is
    /// `app` (a worker's identity); answers how many. Never touches
    /// another program's connections.
    pub async fn terminate_backends(&self, app: &str) -> Result<u64, StoreError> {
        let RunStore::Postgres(s) = self else {
            return Ok(0);
        };
        let n: i64 = sqlx::query(
            "SELECT COUNT(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE application_name = $1 AND pid <> pg_backend_pid()",
        )
        .bind(app)
        .fetch_one(s.pool())
        .await
        .and_then(|r| r.try_get(0))
        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// The PostgreSQL backends of `app`'s LISTEN connection (a worker
    /// process's identity), as pids.
    ///
    /// The store's wake listener connects with the pool's options (so it
    /// reports the process's `application_name`) and, once listening, runs
    /// nothing else: its backend is the one whose last statement was
    /// `LISTEN`. Pool connections never run `LISTEN`.
    pub async fn listener_backends(&self, app: &str) -> Result<Vec<i32>, StoreError> {
        self.listener_query(app, LISTENER_PIDS_SQL).await
    }

    /// Terminates `app`'s LISTEN backends (see
    /// [`RunStore::listener_backends`]); answers the pids terminated.
    pub async fn terminate_listener(&self, app: &str) -> Result<Vec<i32>, StoreError> {
        self.listener_query(app, TERMINATE_LISTENER_SQL).await
    }

    async fn listener_query(&self, app: &str, sql: &str) -> Result<Vec<i32>, StoreError> {
        let RunStore::Postgres(s) = self else {
            return Ok(Vec::new());
        };
        let rows = sqlx::query(sql)
            .bind(app)
            .fetch_all(s.pool())
            .await
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        let mut pids = Vec::new();
        for r in &rows {
            let pid: i32 = r
                .try_get(0)
                .map_err(|e| StoreError::Unavailable(e.to_string()))?;
            let hit: bool = r
                .try_get(1)
                .map_err(|e| StoreError::Unavailable(e.to_string()))?;
            if hit {
                pids.push(pid);
            }
        }
        Ok(pids)
    }

    /// Drops the run's schema (PostgreSQL) and closes the connections.
    pub async fn close(&self, drop_schema: Option<&str>) {
        match self {
            RunStore::Postgres(s) => {
                if let Some(schema) = drop_schema {
                    // The name was made by the orchestrator: letters, digits, `_`.
                    let sql = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
                    if let Err(e) = sqlx::query(&sql).execute(s.pool()).await {
                        tracing::warn!(%schema, error = %e, "could not drop the run's schema");
                    }
                }
                s.close().await;
            }
            RunStore::Sqlite(s) => s.close().await,
        }
    }
}
