//! `leasehold show JOB`: one job's row, its result or error, and its audit
//! trail (at most `--events`, default [`DEFAULT_SHOW_EVENTS`]); or `--json`.

use super::format::{bytes, event_line, JobView};
use super::job_arg::parse_job;
use super::target::{Open, OpsStore, TargetArgs};
use super::{on_store, with_store};
use crate::cli::ExitCode;
use clap::Args;
use leasehold_core::{Event, JobId, Store};
use serde::Serialize;

/// Audit events `show` prints unless told otherwise.
pub const DEFAULT_SHOW_EVENTS: u32 = 100;
/// Most audit events one `show` prints.
pub const MAX_SHOW_EVENTS: u32 = 10_000;

/// `leasehold show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The store.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The job's id (`42` or `job-42`).
    #[arg(value_parser = parse_job)]
    pub job: JobId,
    /// At most this many audit events, oldest first (1 to 10000).
    #[arg(long, default_value_t = DEFAULT_SHOW_EVENTS,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_SHOW_EVENTS)))]
    pub events: u32,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// What `show --json` prints.
#[derive(Debug, Serialize)]
pub struct Shown {
    /// The row.
    pub job: JobView,
    /// Its audit events, oldest first.
    pub events: Vec<Event>,
}

/// Runs the command.
pub fn run(args: &ShowArgs) -> ExitCode {
    let (job, limit, json) = (args.job, args.events, args.json);
    with_store(&args.target, Open::Existing, |store| async move {
        let result = show(&store, job, limit, json).await;
        (store, result)
    })
}

async fn show(store: &OpsStore, job: JobId, limit: u32, json: bool) -> Result<(), String> {
    let row = on_store!(store, |s| s.get(job).await).map_err(|e| format!("read {job}: {e}"))?;
    let Some(row) = row else {
        return Err(format!("unknown job {job}"));
    };
    let events = on_store!(store, |s| s.job_events(job, limit).await)
        .map_err(|e| format!("read the audit trail of {job}: {e}"))?;
    if json {
        let shown = Shown {
            job: JobView::of(&row),
            events,
        };
        println!("{}", serde_json::to_string(&shown).unwrap_or_default());
        return Ok(());
    }
    println!("{job} on {}: {}", row.queue, row.state);
    println!("  attempt {}/{}", row.attempt, row.max_attempts);
    println!("  priority {}, run_at @{}ms", row.priority, row.run_at.0);
    println!("  token {}, version {}", row.token, row.version);
    if let (Some(h), Some(e)) = (&row.holder, row.expires_at) {
        println!("  held by {h} until @{}ms", e.0);
    }
    if row.cancel_requested {
        println!("  cancel requested");
    }
    if let Some(k) = &row.idempotency_key {
        println!("  idempotency key {k}");
    }
    println!("  payload {}", bytes(&row.payload));
    if let Some(r) = &row.result {
        println!("  result {}", bytes(r));
    }
    if let Some(e) = &row.error {
        println!("  error {e}");
    }
    println!(
        "  created @{}ms, updated @{}ms",
        row.created_at.0, row.updated_at.0
    );
    println!("audit trail ({} event(s)):", events.len());
    for e in &events {
        println!("{}", event_line(e));
    }
    if events.len() == limit as usize {
        println!("(stopped at {limit} events: --events N shows more)");
    }
    Ok(())
}
