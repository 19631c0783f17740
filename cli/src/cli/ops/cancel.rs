//! `leasehold cancel JOB`: cancels a job through `Store::cancel` (the
//! core's transition): a pending job is cancelled, a running one asked to
//! stop, a finished one left as it is; prints the answer.

use super::target::{Open, TargetArgs};
use super::{on_store, with_store};
use crate::cli::ExitCode;
use clap::Args;
use leasehold_core::{CancelOutcome, JobId, Store};

/// `leasehold cancel` and `leasehold retry`: one job on one store.
#[derive(Debug, Args)]
pub struct JobArgs {
    /// The store.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The job's id (`42` or `job-42`).
    #[arg(value_parser = parse_job)]
    pub job: JobId,
}

/// A job id as the commands print it (`job-42`) or bare (`42`).
pub fn parse_job(s: &str) -> Result<JobId, String> {
    let digits = s.strip_prefix("job-").unwrap_or(s);
    digits
        .parse::<u64>()
        .map(JobId)
        .map_err(|_| format!("{s:?} is not a job id (a number, or job-NUMBER)"))
}

/// Runs the command.
pub fn run(args: &JobArgs) -> ExitCode {
    let job = args.job;
    with_store(&args.target, Open::Existing, |store| async move {
        let answer = on_store!(&store, |s| s.cancel(job).await);
        let result = match answer {
            Ok(CancelOutcome::Cancelled) => {
                println!("{job}: cancelled");
                Ok(())
            }
            Ok(CancelOutcome::Requested) => {
                println!("{job}: cancel requested (it is running; its worker stops it)");
                Ok(())
            }
            Ok(CancelOutcome::AlreadyTerminal(state)) => {
                println!("{job}: already {state}; nothing changed");
                Ok(())
            }
            Err(e) => Err(format!("cancel {job}: {e}")),
        };
        (store, result)
    })
}
