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
use leasehold_core::{QueueCounts, StateCounts, Store, StoreTime};
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
#[derive(Debug, Serialize)]
pub struct QueueStatus {
    /// Queue name.
    pub queue: String,
    /// Its jobs in each state, the store's count (`leasehold retry` takes
    /// a dead one back); in the JSON, fields of this object.
    #[serde(flatten)]
    pub by_state: StateCounts,
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
        by_state: q.by_state,
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
        let n = &q.by_state;
        println!(
            "{:<16} {:>8} {:>8} {:>10} {:>6} {:>10}  {:<15} {}",
            q.queue,
            n.pending,
            n.running,
            n.succeeded,
            n.dead,
            n.cancelled,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The counts come from the core's type, flattened: `status --json`
    /// prints the same object, field for field and in the same order, as
    /// when the CLI spelled the five counts out itself.
    #[test]
    fn a_queue_prints_the_same_json_object_as_before() {
        let q = QueueCounts {
            queue: "mail".into(),
            by_state: StateCounts {
                pending: 1,
                running: 2,
                succeeded: 3,
                dead: 4,
                cancelled: 5,
            },
            oldest_pending: Some(StoreTime(400)),
            nearest_expiry: None,
        };
        let text = serde_json::to_string(&of(&q, StoreTime(1_000))).unwrap();
        assert_eq!(
            text,
            "{\"queue\":\"mail\",\"pending\":1,\"running\":2,\"succeeded\":3,\"dead\":4,\
             \"cancelled\":5,\"oldest_pending_age_ms\":600,\"nearest_expiry_in_ms\":null}"
        );
    }
}
