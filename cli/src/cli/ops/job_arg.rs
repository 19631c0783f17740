//! The job a command names: `leasehold cancel JOB`, `retry JOB` (and the
//! ids `show` and `list --after` take), as `42` or as printed, `job-42`.

use super::target::TargetArgs;
use clap::Args;
use leasehold_core::JobId;

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
