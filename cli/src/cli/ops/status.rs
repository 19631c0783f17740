//! `leasehold status`: per queue, the jobs in each state, the age of the
//! oldest pending job, the running leases and how close the nearest is to
//! expiry (store clock); a table, or `--json`. The store counts
//! (`Store::count_jobs`: one `GROUP BY queue, state` on SQLite and
//! PostgreSQL), whatever its size; a store without a count of its own is
//! counted by listing, which says so if it stopped at its cap.

use super::format::duration;
use super::target::{Open, TargetArgs};
use super::{on_store, with_store};
use crate::cli::ExitCode;
use clap::Args;
use leasehold_core::{QueueCounts, Store, StoreTime};
use serde::Serialize;

/// `leasehold status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The store.
    #[command(flatten)]
    pub target: TargetArgs,
    /// One JSON object on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One queue's figures.
#[derive(Debug, Default, Serialize)]
pub struct QueueStatus {
    /// Queue name.
    pub queue: String,
    /// Jobs waiting (due or not).
    pub pending: u64,
    /// Jobs leased: the running leases.
    pub running: u64,
    /// Finished with a result.
    pub succeeded: u64,
    /// Attempts spent or failed for good (`leasehold retry` takes one back).
    pub dead: u64,
    /// Cancelled.
    pub cancelled: u64,
    /// Age of the oldest pending job (now − enqueue time), ms.
    pub oldest_pending_age_ms: Option<i64>,
    /// Time left on the running lease nearest to expiry, ms (negative: it
    /// has expired and waits for a sweep).
    pub nearest_expiry_in_ms: Option<i64>,
}

/// What `status --json` prints.
#[derive(Debug, Serialize)]
pub struct Status {
    /// The store's clock, ms.
    pub now: i64,
    /// Whether every job was counted (false only for a store counted by
    /// listing that stopped at `LIST_ALL_MAX_ROWS`).
    pub complete: bool,
    /// Per queue, in name order.
    pub queues: Vec<QueueStatus>,
}

/// Runs the command.
pub fn run(args: &StatusArgs) -> ExitCode {
    let json = args.json;
    with_store(&args.target, Open::Existing, |store| async move {
        let result = on_store!(&store, |s| status(s).await).map(|st| print(&st, json));
        (store, result)
    })
}

/// Asks the store for its counts, and turns times into ages against the
/// store's clock.
pub async fn status<S: Store>(s: &S) -> Result<Status, String> {
    let now = s.now().await.map_err(|e| format!("store clock: {e}"))?;
    let counts = s
        .count_jobs()
        .await
        .map_err(|e| format!("count jobs: {e}"))?;
    Ok(Status {
        now: now.0,
        complete: counts.complete,
        queues: counts.queues.iter().map(|q| of(q, now)).collect(),
    })
}

fn of(q: &QueueCounts, now: StoreTime) -> QueueStatus {
    QueueStatus {
        queue: q.queue.clone(),
        pending: q.pending,
        running: q.running,
        succeeded: q.succeeded,
        dead: q.dead,
        cancelled: q.cancelled,
        oldest_pending_age_ms: q.oldest_pending.map(|t| now.0 - t.0),
        nearest_expiry_in_ms: q.nearest_expiry.map(|t| t.0 - now.0),
    }
}

fn print(st: &Status, json: bool) {
    if json {
        println!("{}", serde_json::to_string(st).unwrap_or_default());
        return;
    }
    println!(
        "{:<16} {:>8} {:>8} {:>10} {:>6} {:>10}  {:<15} nearest expiry",
        "queue", "pending", "running", "succeeded", "dead", "cancelled", "oldest pending"
    );
    for q in &st.queues {
        println!(
            "{:<16} {:>8} {:>8} {:>10} {:>6} {:>10}  {:<15} {}",
            q.queue,
            q.pending,
            q.running,
            q.succeeded,
            q.dead,
            q.cancelled,
            q.oldest_pending_age_ms.map_or("-".into(), duration),
            q.nearest_expiry_in_ms.map_or("-".into(), |ms| if ms < 0 {
                format!("expired {} ago", duration(-ms))
            } else {
                format!("in {}", duration(ms))
            }),
        );
    }
    if st.queues.is_empty() {
        println!("(no jobs)");
    }
    if !st.complete {
        println!(
            "(counted the first {} jobs only: this store is counted by listing)",
            leasehold_core::LIST_ALL_MAX_ROWS
        );
    }
}
