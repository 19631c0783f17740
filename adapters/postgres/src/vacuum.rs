//! The store's own vacuums of `leasehold_jobs`, for a busy queue on a
//! server whose autovacuum looks too seldom (opt-in:
//! [`crate::PgStoreBuilder::vacuum_every`]).
//!
//! Why: a claim leaves the job's old entry in the claim index
//! `leasehold_jobs_pending` until a vacuum removes it, and every later claim
//! scan of the queue steps over it. Autovacuum looks at most once per
//! `autovacuum_naptime` (a minute by default), long enough for a busy queue
//! to pile up hundreds of thousands of such entries (`docs/PERFORMANCE.md`,
//! "The claim scan's share").
//!
//! What it does: one background task per store, on a connection of its own
//! (not one of the pool's), looks once per period at the table's dead rows
//! as the server counts them (`pg_stat_user_tables.n_dead_tup`, which every
//! process's writes feed, so stores in several processes see each other's
//! vacuums), and runs `VACUUM (SKIP_LOCKED) leasehold_jobs` when there are
//! at least [`VACUUM_MIN_DEAD_ROWS`]. An idle table is never vacuumed, and
//! a vacuum already running elsewhere is skipped, not waited for. The
//! server's count lags the writes: by about a second under load, and by up
//! to 10 s after the writing backends went idle (PostgreSQL's statistics
//! flush); a table not created yet counts as idle.
//!
//! Invariants:
//! - at most one vacuum of this store runs at a time, and a new one starts
//!   at least one period after the previous one started;
//! - a vacuum changes no row a reader can see, so no answer of the store
//!   depends on this task (the simulator does not run it);
//! - the task ends when the store is closed or dropped, and its connection
//!   with it: [`Vacuum::close`] waits at most [`VACUUM_CLOSE_WAIT`] for a
//!   vacuum in progress, then drops the connection.

use leasehold_core::{InputError, Millis};
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{ConnectOptions, Connection};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// Shortest period [`crate::PgStoreBuilder::vacuum_every`] accepts.
pub const MIN_VACUUM_PERIOD: Duration = Duration::from_millis(50);
/// Longest period [`crate::PgStoreBuilder::vacuum_every`] accepts (beyond
/// it, autovacuum does the same job).
pub const MAX_VACUUM_PERIOD: Duration = Duration::from_secs(3_600);
/// Dead rows the server must count before the store vacuums: the floor
/// migration 0004 gives autovacuum too.
pub const VACUUM_MIN_DEAD_ROWS: i64 = 1_000;
/// Longest [`crate::PgStore::close`] waits for a vacuum in progress.
pub const VACUUM_CLOSE_WAIT: Duration = Duration::from_secs(2);
/// Longest a connect of the vacuum connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

const _: () = assert!(MIN_VACUUM_PERIOD.as_millis() < MAX_VACUUM_PERIOD.as_millis());
// `check_period`'s message names these two bounds.
const _: () = assert!(MIN_VACUUM_PERIOD.as_millis() == 50 && MAX_VACUUM_PERIOD.as_secs() == 3_600);

/// What the store's vacuum task has done so far ([`crate::PgStore::vacuum_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VacuumStats {
    /// Vacuums run to the end.
    pub runs: u64,
    /// Periods that found fewer than [`VACUUM_MIN_DEAD_ROWS`] dead rows.
    pub idle: u64,
    /// Periods whose look or vacuum failed (the connection is made again
    /// at the next period).
    pub failed: u64,
    /// Time spent in the vacuums run to the end, in microseconds.
    pub micros: u64,
}

#[derive(Default)]
struct Counters {
    runs: AtomicU64,
    idle: AtomicU64,
    failed: AtomicU64,
    micros: AtomicU64,
}

/// The task and its controls, held by a [`crate::PgStore`].
pub(crate) struct Vacuum {
    counters: Arc<Counters>,
    stop: watch::Sender<bool>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Vacuum {
    /// Starts the task (inside the caller's tokio runtime).
    pub(crate) fn start(opts: PgConnectOptions, period: Duration) -> Self {
        let counters = Arc::new(Counters::default());
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(run(opts, period, counters.clone(), stopped));
        Vacuum {
            counters,
            stop,
            task: Mutex::new(Some(task)),
        }
    }

    pub(crate) fn stats(&self) -> VacuumStats {
        let c = &self.counters;
        VacuumStats {
            runs: c.runs.load(Ordering::Relaxed),
            idle: c.idle.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
            micros: c.micros.load(Ordering::Relaxed),
        }
    }

    /// Stops the task and closes its connection (see the module docs).
    pub(crate) async fn close(&self) {
        let _ = self.stop.send(true);
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        if let Some(mut task) = task {
            if tokio::time::timeout(VACUUM_CLOSE_WAIT, &mut task)
                .await
                .is_err()
            {
                task.abort();
                let _ = task.await;
            }
        }
    }
}

impl Drop for Vacuum {
    fn drop(&mut self) {
        if let Ok(mut t) = self.task.lock() {
            if let Some(task) = t.take() {
                task.abort();
            }
        }
    }
}

/// The task: one look per period, a vacuum when it finds enough dead rows.
/// Every pass waits a full tick or ends, so a database that stays down
/// costs one connect attempt per period.
async fn run(
    opts: PgConnectOptions,
    period: Duration,
    counters: Arc<Counters>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick completes at once: skip it, nothing has died yet.
    tick.tick().await;
    let mut conn: Option<PgConnection> = None;
    loop {
        tokio::select! {
            biased;
            // Closed, or the store dropped (the sender with it).
            _ = stopped.changed() => break,
            _ = tick.tick() => {}
        }
        // Not raced against the stop: `Vacuum::close` bounds its wait.
        if !one_pass(&opts, &mut conn, &counters).await {
            counters.failed.fetch_add(1, Ordering::Relaxed);
            conn = None;
        }
    }
    if let Some(c) = conn {
        let _ = c.close().await;
    }
}

/// One look, and a vacuum if the table has enough dead rows. `false` when
/// the connection or a statement failed.
async fn one_pass(
    opts: &PgConnectOptions,
    conn: &mut Option<PgConnection>,
    counters: &Counters,
) -> bool {
    if conn.is_none() {
        match tokio::time::timeout(CONNECT_TIMEOUT, opts.connect()).await {
            Ok(Ok(c)) => *conn = Some(c),
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "vacuum connection failed");
                return false;
            }
            Err(_) => return false,
        }
    }
    let Some(c) = conn.as_mut() else {
        return false;
    };
    let dead: Result<Option<i64>, sqlx::Error> = sqlx::query_scalar(
        // No row while the table does not exist yet (`migrate` not run).
        "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = to_regclass('leasehold_jobs')",
    )
    .fetch_optional(&mut *c)
    .await;
    match dead {
        Ok(Some(n)) if n >= VACUUM_MIN_DEAD_ROWS => {}
        Ok(_) => {
            counters.idle.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        Err(e) => {
            tracing::debug!(error = %e, "vacuum look failed");
            return false;
        }
    }
    let started = tokio::time::Instant::now();
    // SKIP_LOCKED: a vacuum running elsewhere (autovacuum, another store)
    // is doing this one's work; never wait behind it.
    match sqlx::query("VACUUM (SKIP_LOCKED) leasehold_jobs")
        .execute(&mut *c)
        .await
    {
        Ok(_) => {
            counters.runs.fetch_add(1, Ordering::Relaxed);
            let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            counters.micros.fetch_add(micros, Ordering::Relaxed);
            true
        }
        Err(e) => {
            tracing::debug!(error = %e, "vacuum failed");
            false
        }
    }
}

/// Checks a period given to [`crate::PgStoreBuilder::vacuum_every`].
pub(crate) fn check_period(period: Duration) -> Result<Duration, InputError> {
    if (MIN_VACUUM_PERIOD..=MAX_VACUUM_PERIOD).contains(&period) {
        Ok(period)
    } else {
        Err(InputError::BadDuration {
            what: "vacuum_every",
            value: Millis(u64::try_from(period.as_millis()).unwrap_or(u64::MAX)),
            reason: "must be between 50 ms and 1 h",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{check_period, MAX_VACUUM_PERIOD, MIN_VACUUM_PERIOD};
    use std::time::Duration;

    #[test]
    fn a_period_outside_the_bounds_is_refused_with_its_name_and_value() {
        assert_eq!(check_period(MIN_VACUUM_PERIOD), Ok(MIN_VACUUM_PERIOD));
        assert_eq!(check_period(MAX_VACUUM_PERIOD), Ok(MAX_VACUUM_PERIOD));
        assert_eq!(
            check_period(Duration::from_millis(500)),
            Ok(Duration::from_millis(500))
        );
        for bad in [
            Duration::ZERO,
            MIN_VACUUM_PERIOD - Duration::from_millis(1),
            MAX_VACUUM_PERIOD + Duration::from_millis(1),
        ] {
            let e = check_period(bad).expect_err("out of bounds").to_string();
            assert!(e.contains("vacuum_every"), "{e}");
            assert!(e.contains(&bad.as_millis().to_string()), "{e}");
        }
    }
}
