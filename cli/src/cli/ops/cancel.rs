//! `leasehold cancel JOB`: cancels a job through `Store::cancel` (the
//! core's transition): a pending job is cancelled, a running one asked to
//! stop, a finished one left as it is; prints the answer.

use super::job_arg::JobArgs;
use super::target::Open;
use super::{on_store, with_store};
use crate::cli::ExitCode;
use leasehold_core::{CancelOutcome, Store};

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
