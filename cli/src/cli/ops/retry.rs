//! `leasehold retry JOB`: a dead job back to pending with a fresh attempt
//! budget, through `Store::retry_dead` (the core's `retry` transition,
//! audited). A job that is not dead is refused (exit 2), nothing changed.

use super::job_arg::JobArgs;
use super::target::Open;
use super::{on_store, with_store};
use crate::cli::ExitCode;
use leasehold_core::{RetryOutcome, Store};

/// Runs the command.
pub fn run(args: &JobArgs) -> ExitCode {
    let job = args.job;
    with_store(&args.target, Open::Existing, |store| async move {
        let answer = on_store!(&store, |s| s.retry_dead(job).await);
        let result = match answer {
            Ok(RetryOutcome::Retried) => {
                println!("{job}: retried (pending, with a fresh attempt budget)");
                Ok(())
            }
            Ok(RetryOutcome::NotDead(state)) => Err(format!(
                "retry {job}: it is {state}, not dead; nothing changed"
            )),
            Err(e) => Err(format!("retry {job}: {e}")),
        };
        (store, result)
    })
}
