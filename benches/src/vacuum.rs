//! `--vacuum-every`: a task that vacuums `leasehold_jobs` on a fixed
//! period while the PostgreSQL drains run, and counts what it did.
//!
//! Why: a claim leaves its row's entry in the partial claim index until a
//! vacuum removes it, and every later claim scan steps over such entries
//! (`migrations/postgres/0004_leasehold_jobs_autovacuum.sql`). The server's
//! autovacuum looks at most once a `autovacuum_naptime` (a minute by
//! default), longer than a drain; this shows what a vacuum as often as the
//! period would give. The task holds one connection of its own, outside
//! the store's pool, so it takes no connection from the workers.

use sqlx::Connection;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Counts of the vacuums run so far.
#[derive(Default)]
pub struct Tally {
    runs: AtomicU64,
    micros: AtomicU64,
    failed: AtomicU64,
}

impl Tally {
    /// One line for the report.
    pub fn line(&self, every: u64) -> String {
        let runs = self.runs.load(Ordering::Relaxed);
        let micros = self.micros.load(Ordering::Relaxed);
        let failed = self.failed.load(Ordering::Relaxed);
        let mean = micros.checked_div(runs).unwrap_or(0) as f64 / 1000.0;
        format!(
            "vacuum every {every} ms: {runs} run(s), {mean:.1} ms each on average, {failed} failed"
        )
    }
}

/// Vacuums `leasehold_jobs` in `schema` every `every` ms until the
/// returned handle is dropped or aborted.
pub async fn start(
    url: &str,
    schema: &str,
    every: u64,
) -> Result<(tokio::task::JoinHandle<()>, Arc<Tally>), sqlx::Error> {
    let mut conn = sqlx::PgConnection::connect(url).await?;
    // The schema name was made by the bench (`lh_bench_<pid>`).
    sqlx::query(&format!("SET search_path TO \"{schema}\""))
        .execute(&mut conn)
        .await?;
    let tally = Arc::new(Tally::default());
    let t = tally.clone();
    let handle = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(every));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let started = Instant::now();
            // SKIP_LOCKED: never wait behind the server's own autovacuum.
            match sqlx::query("VACUUM (SKIP_LOCKED) leasehold_jobs")
                .execute(&mut conn)
                .await
            {
                Ok(_) => {
                    t.runs.fetch_add(1, Ordering::Relaxed);
                    t.micros
                        .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
                }
                Err(_) => {
                    t.failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    });
    Ok((handle, tally))
}

#[cfg(test)]
mod tests {
    use super::Tally;
    use crate::args::Settings;
    use clap::Parser;
    use std::sync::atomic::Ordering;

    #[test]
    fn the_period_is_checked_when_parsed() {
        let ok = Settings::try_parse_from(["leasehold-bench", "--vacuum-every", "500"]);
        assert_eq!(ok.expect("500 ms is a period").vacuum_every, Some(500));
        for bad in ["5", "0", "600001", "soon"] {
            let e = Settings::try_parse_from(["leasehold-bench", "--vacuum-every", bad]);
            assert!(e.is_err(), "--vacuum-every {bad} must be refused");
        }
        let unset = Settings::try_parse_from(["leasehold-bench"]).expect("defaults");
        assert_eq!(unset.vacuum_every, None, "no vacuum unless asked");
    }

    #[test]
    fn the_line_gives_runs_mean_and_failures() {
        let t = Tally::default();
        assert_eq!(
            t.line(250),
            "vacuum every 250 ms: 0 run(s), 0.0 ms each on average, 0 failed"
        );
        t.runs.store(4, Ordering::Relaxed);
        t.micros.store(10_000, Ordering::Relaxed);
        t.failed.store(1, Ordering::Relaxed);
        assert_eq!(
            t.line(250),
            "vacuum every 250 ms: 4 run(s), 2.5 ms each on average, 1 failed"
        );
    }
}
