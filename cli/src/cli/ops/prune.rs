//! `leasehold prune --older-than D`: deletes finished jobs that finished at
//! or before `now − D` on the store's clock, with their audit events,
//! through `Store::prune` (the core's `prune` transition: a pending or
//! running job, or one finished less than `D` ago, is never deleted).
//!
//! It prunes in rounds of at most `--batch` jobs, each its own short
//! transaction, so a large backlog never holds a long lock; it stops at the
//! first round that finds fewer than a full batch, or after `--max-rounds`
//! (a bound: it then says how far it got, and a second run goes on).

use super::target::{Open, TargetArgs};
use super::{on_store, with_store};
use crate::cli::ExitCode;
use clap::Args;
use leasehold_core::{Millis, PruneRequest, Store, MAX_PRUNE_LIMIT};

/// Jobs per round unless `--batch` says otherwise.
pub const DEFAULT_PRUNE_BATCH: u32 = 1_000;
/// Rounds unless `--max-rounds` says otherwise.
pub const DEFAULT_MAX_ROUNDS: u32 = 1_000;

/// `leasehold prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// The store.
    #[command(flatten)]
    pub target: TargetArgs,
    /// Retention `R`: prune jobs that finished at least this long ago on
    /// the store's clock (`168h`, `30m`; at least the core's minimum).
    #[arg(long, value_parser = parse_millis)]
    pub older_than: Millis,
    /// Audit events' retention (at least `--older-than`; default: the
    /// same).
    #[arg(long, value_parser = parse_millis)]
    pub audit_older_than: Option<Millis>,
    /// Most jobs (and audit rows) one round deletes.
    #[arg(long, default_value_t = DEFAULT_PRUNE_BATCH)]
    pub batch: u32,
    /// Most rounds this run makes.
    #[arg(long, default_value_t = DEFAULT_MAX_ROUNDS)]
    pub max_rounds: u32,
}

fn parse_millis(s: &str) -> Result<Millis, String> {
    leasehold_model::duration::parse_ms(s)
        .map(Millis)
        .map_err(|e| e.to_string())
}

impl PruneArgs {
    /// The request each round sends, checked before the store is opened.
    fn request(&self) -> Result<PruneRequest, String> {
        let req = PruneRequest::new(self.older_than, self.batch)
            .map_err(|e| format!("prune: {e} (--batch is 1..={MAX_PRUNE_LIMIT})"))?;
        match self.audit_older_than {
            Some(audit) => req
                .with_audit_retention(audit)
                .map_err(|e| format!("prune: {e}")),
            None => Ok(req),
        }
    }
}

/// Runs the command.
pub fn run(args: &PruneArgs) -> ExitCode {
    let req = match args.request() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("leasehold: {e}");
            return ExitCode::Input;
        }
    };
    if args.max_rounds == 0 {
        eprintln!("leasehold: prune: --max-rounds must be at least 1");
        return ExitCode::Input;
    }
    let (rounds, batch) = (args.max_rounds, args.batch as usize);
    with_store(&args.target, Open::Existing, |store| async move {
        let mut total = 0usize;
        let mut result = Ok(());
        let mut finished = false;
        for round in 1..=rounds {
            match on_store!(&store, |s| s.prune(req).await) {
                Ok(ids) => {
                    total += ids.len();
                    if ids.len() < batch {
                        finished = true;
                        break;
                    }
                    if round % 10 == 0 {
                        eprintln!("prune: {total} jobs pruned after {round} rounds");
                    }
                }
                Err(e) => {
                    result = Err(format!("prune: after {total} jobs pruned: {e}"));
                    break;
                }
            }
        }
        if result.is_ok() {
            if finished {
                println!("pruned {total} jobs (none left older than the retention)");
            } else {
                println!(
                    "pruned {total} jobs in {rounds} rounds (--max-rounds); more may be left: run it again"
                );
            }
        }
        (store, result)
    })
}
