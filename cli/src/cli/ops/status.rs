//! `leasehold status`: per queue, the jobs in each state, the age of the
//! oldest pending job, the running leases and how close the nearest is to
//! expiry (store clock); a table, or `--json`. Reads at most
//! [`STATUS_SCAN_CAP`] rows and says so when it stopped there.

use super::format::duration;
use super::target::{Open, TargetArgs};
use super::{on_store, with_store};
use crate::cli::ExitCode;
use clap::Args;
use leasehold_core::{JobRecord, JobState, ListRequest, Store, StoreTime};
use serde::Serialize;
use std::collections::BTreeMap;

/// Most rows `status` reads (in pages of [`STATUS_PAGE`]).
pub const STATUS_SCAN_CAP: usize = 1_000_000;
/// Rows read per page.
pub const STATUS_PAGE: u32 = 1_000;

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
    /// Rows read.
    pub scanned: usize,
    /// Whether every row was read (false: stopped at the scan cap).
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

/// Reads the store's jobs, page by page up to the cap, and sums them up.
pub async fn status<S: Store>(s: &S) -> Result<Status, String> {
    let now = s.now().await.map_err(|e| format!("store clock: {e}"))?;
    let mut queues: BTreeMap<String, QueueStatus> = BTreeMap::new();
    let mut after = None;
    let mut scanned = 0;
    let mut complete = false;
    while scanned < STATUS_SCAN_CAP {
        let page = s
            .list(ListRequest {
                after,
                limit: STATUS_PAGE,
            })
            .await
            .map_err(|e| format!("list jobs: {e}"))?;
        scanned += page.len();
        after = page.last().map(|r| r.id);
        for r in &page {
            add(queues.entry(r.queue.clone()).or_default(), r, now);
        }
        if page.len() < STATUS_PAGE as usize {
            complete = true;
            break;
        }
    }
    let queues = queues
        .into_iter()
        .map(|(name, mut q)| {
            q.queue = name;
            q
        })
        .collect();
    Ok(Status {
        now: now.0,
        scanned,
        complete,
        queues,
    })
}

fn add(q: &mut QueueStatus, r: &JobRecord, now: StoreTime) {
    match r.state {
        JobState::Pending => {
            q.pending += 1;
            let age = now.0 - r.created_at.0;
            q.oldest_pending_age_ms = Some(q.oldest_pending_age_ms.map_or(age, |a| a.max(age)));
        }
        JobState::Running => {
            q.running += 1;
            if let Some(e) = r.expires_at {
                let left = e.0 - now.0;
                q.nearest_expiry_in_ms = Some(q.nearest_expiry_in_ms.map_or(left, |l| l.min(left)));
            }
        }
        JobState::Succeeded => q.succeeded += 1,
        JobState::Dead => q.dead += 1,
        JobState::Cancelled => q.cancelled += 1,
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
            "(counted the first {} jobs only: the scan stops at {STATUS_SCAN_CAP})",
            st.scanned
        );
    }
}
