//! `leasehold list`: jobs in id order, filtered by `--queue` and
//! `--state`, at most `--limit` (default [`DEFAULT_LIST_LIMIT`], at most
//! [`MAX_LIST_LIMIT`]), from `--after ID` on; a table, or `--json`. Reads
//! at most [`LIST_SCAN_CAP`] rows per call and prints where to go on.

use super::format::{row_line, JobView};
use super::job_arg::parse_job;
use super::target::{Open, TargetArgs};
use super::{on_store, with_store};
use crate::cli::ExitCode;
use clap::Args;
use leasehold_core::{JobId, JobRecord, JobState, ListRequest, Store};
use serde::Serialize;

/// Rows `list` prints unless told otherwise.
pub const DEFAULT_LIST_LIMIT: u32 = 50;
/// Most rows one `list` prints.
pub const MAX_LIST_LIMIT: u32 = 1_000;
/// Most rows one `list` reads looking for matches.
pub const LIST_SCAN_CAP: usize = 100_000;
const PAGE: u32 = 1_000;

/// `leasehold list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// The store.
    #[command(flatten)]
    pub target: TargetArgs,
    /// Only this queue's jobs.
    #[arg(long)]
    pub queue: Option<String>,
    /// Only jobs in this state: pending, running, succeeded, dead, cancelled.
    #[arg(long, value_parser = parse_state)]
    pub state: Option<JobState>,
    /// At most this many jobs (1 to 1000).
    #[arg(long, default_value_t = DEFAULT_LIST_LIMIT,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_LIST_LIMIT)))]
    pub limit: u32,
    /// Only jobs with a greater id (the next page: the `next_after` printed).
    #[arg(long, value_parser = parse_job)]
    pub after: Option<JobId>,
    /// One JSON object on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
}

fn parse_state(s: &str) -> Result<JobState, String> {
    JobState::parse(s).ok_or_else(|| {
        format!("{s:?} is not a state: pending, running, succeeded, dead or cancelled")
    })
}

/// What `list --json` prints.
#[derive(Debug, Serialize)]
pub struct Listing {
    /// The store's clock, ms.
    pub now: i64,
    /// The matching jobs, in id order.
    pub jobs: Vec<JobView>,
    /// Where the next page starts (`--after`), when there may be more.
    pub next_after: Option<u64>,
}

/// Runs the command.
pub fn run(args: &ListArgs) -> ExitCode {
    let filter = Filter {
        queue: args.queue.clone(),
        state: args.state,
        limit: args.limit,
        after: args.after,
    };
    let json = args.json;
    with_store(&args.target, Open::Existing, |store| async move {
        let result = on_store!(&store, |s| list(s, &filter).await).map(|(now, rows, next)| {
            print(now, &rows, next, json);
        });
        (store, result)
    })
}

struct Filter {
    queue: Option<String>,
    state: Option<JobState>,
    limit: u32,
    after: Option<JobId>,
}

impl Filter {
    fn admits(&self, r: &JobRecord) -> bool {
        self.queue.as_ref().is_none_or(|q| *q == r.queue) && self.state.is_none_or(|s| s == r.state)
    }
}

/// The matching rows and where the next page starts.
async fn list<S: Store>(
    s: &S,
    f: &Filter,
) -> Result<(leasehold_core::StoreTime, Vec<JobRecord>, Option<JobId>), String> {
    let now = s.now().await.map_err(|e| format!("store clock: {e}"))?;
    let mut out = Vec::new();
    let mut after = f.after;
    let mut scanned = 0;
    while scanned < LIST_SCAN_CAP {
        let page = s
            .list(ListRequest { after, limit: PAGE })
            .await
            .map_err(|e| format!("list jobs: {e}"))?;
        scanned += page.len();
        let full = page.len() == PAGE as usize;
        for r in page {
            after = Some(r.id);
            if f.admits(&r) {
                out.push(r);
                if out.len() == f.limit as usize {
                    return Ok((now, out, after));
                }
            }
        }
        if !full {
            return Ok((now, out, None));
        }
    }
    Ok((now, out, after))
}

fn print(now: leasehold_core::StoreTime, rows: &[JobRecord], next: Option<JobId>, json: bool) {
    if json {
        let listing = Listing {
            now: now.0,
            jobs: rows.iter().map(JobView::of).collect(),
            next_after: next.map(|j| j.0),
        };
        println!("{}", serde_json::to_string(&listing).unwrap_or_default());
        return;
    }
    println!(
        "{:<10} {:<16} {:<10} {:>7} when",
        "id", "queue", "state", "attempt"
    );
    for r in rows {
        println!("{}", row_line(r, now));
    }
    if rows.is_empty() {
        println!("(no matching jobs)");
    }
    if let Some(n) = next {
        println!("(more may follow: --after {})", n.0);
    }
}
