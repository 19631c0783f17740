//! Loading the rows an operation works on: locked (`FOR UPDATE`) or read
//! for a version-checked write, with the store time read after them.

use crate::clock::LIVE_CLOCK;
use crate::{error, PgStore};
use leasehold_core::{InputError, JobId, JobRecord, StoreError, StoreTime};
use leasehold_sql::job_columns::{decode_job, to_i64, COLUMNS};
use sqlx::postgres::{PgArguments, PgConnection, PgRow};
use sqlx::query::Query;
use sqlx::{Postgres, Row};

/// Rows loaded under lock, and the store time read after the locks were held.
pub(crate) struct Locked {
    pub(crate) rows: Vec<JobRecord>,
    pub(crate) now: Option<StoreTime>,
}

/// Runs `q`, a statement selecting the job [`COLUMNS`] followed by the
/// clock, and decodes its rows with the clock they carry. `locks`: the
/// statement locks its rows (`FOR UPDATE`), so its gate is a decision
/// (`tx::decides`): once it holds them no other commit changes what the
/// transaction decides on them (a `SKIP LOCKED` scan of another skips
/// them), so under the simulator it takes effect there.
pub(crate) async fn fetch_locked(
    conn: &mut PgConnection,
    q: Query<'_, Postgres, PgArguments>,
    locks: bool,
) -> Result<Locked, StoreError> {
    if locks {
        crate::tx::decides("lock rows").await;
    } else {
        crate::tx::gate("select rows").await;
    }
    let rows = q.fetch_all(&mut *conn).await.map_err(error::map)?;
    decode_locked(&rows)
}

/// Which gate precedes a `FOR UPDATE SKIP LOCKED` scan ([`fetch_scan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScanGate {
    /// A claim's scan (`tx::claims`).
    Claim,
    /// A sweep's scan (`tx::decides`).
    Sweep,
    /// None: the statement just before it, with no gate between, was the
    /// decision's gate (a limited queue's count).
    None,
}

/// Runs `q`, a `FOR UPDATE SKIP LOCKED` scan the transaction decides on
/// (a claim's or a sweep's candidates), and decodes its rows as
/// [`fetch_locked`] does. Its gate is a decision, `gate` says which.
pub(crate) async fn fetch_scan(
    conn: &mut PgConnection,
    q: Query<'_, Postgres, PgArguments>,
    gate: ScanGate,
) -> Result<Locked, StoreError> {
    match gate {
        ScanGate::Claim => crate::tx::claims("scan").await,
        ScanGate::Sweep => crate::tx::decides("sweep scan").await,
        ScanGate::None => {}
    }
    let rows = q.fetch_all(&mut *conn).await.map_err(error::map)?;
    decode_locked(&rows)
}

/// Decodes rows of the job [`COLUMNS`] followed by the clock (column 20);
/// the store time is the latest clock read.
fn decode_locked(rows: &[PgRow]) -> Result<Locked, StoreError> {
    let mut out = Locked {
        rows: Vec::with_capacity(rows.len()),
        now: None,
    };
    for r in rows {
        out.rows.push(decode_job(r)?);
        let t: i64 = r.try_get(20).map_err(error::map)?;
        out.now = Some(
            out.now
                .map_or(StoreTime(t), |n: StoreTime| n.max(StoreTime(t))),
        );
    }
    Ok(out)
}

impl PgStore {
    /// Locks the rows of `ids` (in id order) and reads the clock after.
    pub(crate) async fn lock_rows(
        &self,
        conn: &mut PgConnection,
        ids: &[JobId],
    ) -> Result<Locked, StoreError> {
        let ids: Vec<i64> = ids
            .iter()
            .map(|id| to_i64(id.0))
            .collect::<Result<_, _>>()?;
        let sql = format!(
            "SELECT c.*, {LIVE_CLOCK} FROM (SELECT {COLUMNS} FROM leasehold_jobs \
             WHERE id = ANY($2) ORDER BY id FOR UPDATE) c"
        );
        self.read_rows(conn, &sql, ids, true).await
    }

    /// Reads the rows of `ids` without locking them, and the clock after
    /// the statement's snapshot: the write that follows checks each row's
    /// version, so a row changed meanwhile is a conflict (the transaction
    /// retries), never a lost update. Saves a row lock (and its WAL
    /// record) per job on the release path.
    pub(crate) async fn load_rows(
        &self,
        conn: &mut PgConnection,
        ids: &[JobId],
    ) -> Result<Locked, StoreError> {
        // An id too large to be stored has no row: it is answered unknown.
        let ids: Vec<i64> = ids.iter().filter_map(|id| to_i64(id.0).ok()).collect();
        let sql = format!("SELECT {COLUMNS}, {LIVE_CLOCK} FROM leasehold_jobs WHERE id = ANY($2)");
        self.read_rows(conn, &sql, ids, false).await
    }

    /// Runs `sql` (the clock parameter as `$1`, `ids` as `$2`) and decodes
    /// its rows with the clock they carry: what [`Self::lock_rows`] and
    /// [`Self::load_rows`] share, whether or not their rows are locked
    /// (`locks`).
    async fn read_rows(
        &self,
        conn: &mut PgConnection,
        sql: &str,
        ids: Vec<i64>,
        locks: bool,
    ) -> Result<Locked, StoreError> {
        let q = sqlx::query(sql).bind(self.clock_param()).bind(ids);
        fetch_locked(conn, q, locks).await
    }

    pub(crate) async fn one_row(
        &self,
        conn: &mut PgConnection,
        id: JobId,
    ) -> Result<(JobRecord, StoreTime), StoreError> {
        let locked = self.lock_rows(conn, &[id]).await?;
        match (locked.rows.into_iter().next(), locked.now) {
            (Some(r), Some(now)) => Ok((r, now)),
            _ => Err(StoreError::Input(InputError::UnknownJob(id))),
        }
    }
}
