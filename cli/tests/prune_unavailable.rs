//! Prunes answered `Unavailable`, on every store: the pruning scenario
//! whose pruner is cut off from the store, loses answers and sees the
//! store crash passes on memory, SQLite and PostgreSQL (when
//! `DATABASE_URL` is set, as `scripts/with-postgres.sh` does), and its
//! histories hold both kinds of failed prune: one the store never applied
//! and one it committed whose answer was lost. The checker judged those
//! committed ones as served (the seed passes with them in it).

mod cli_support;

use leasehold_cli::cli::engine;
use leasehold_cli::cli::stores::{StoreArgs, Stores};
use leasehold_model::history::{Fate, History, Op, Record, Reply};
use leasehold_model::scenario::load_file;
use leasehold_model::store_kind::StoreKind;
use leasehold_sim::runner::PreparedConfig;
use std::collections::BTreeSet;
use std::path::Path;

const SCENARIO: &str =
    "prunes_answered_unavailable_are_retried_and_judged_as_the_store_served_them.toml";
/// Seeds run per store: enough for each kind of failed prune.
const SEEDS: u64 = 3;

/// The failed prunes of one history.
#[derive(Debug, Default)]
struct Failed {
    /// Prunes answered `Unavailable`.
    unavailable: usize,
    /// Of those, prunes the store never applied.
    not_applied: usize,
    /// Of those, prunes the store committed, deleting jobs, whose answer
    /// was lost.
    committed: usize,
}

fn failed_prunes(h: &History) -> Failed {
    let prunes: BTreeSet<(&str, u64)> = h
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Request {
                host,
                id,
                op: Op::Prune { .. },
                ..
            } => Some((host.as_str(), *id)),
            _ => None,
        })
        .collect();
    let unavailable: BTreeSet<(&str, u64)> = h
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Answer {
                host,
                id,
                reply: Reply::Unavailable(_),
                ..
            } if prunes.contains(&(host.as_str(), *id)) => Some((host.as_str(), *id)),
            _ => None,
        })
        .collect();
    let applied: BTreeSet<(&str, u64)> = h
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Served {
                host,
                id,
                fate: Fate::Answered | Fate::AnswerLost,
                ..
            } => Some((host.as_str(), *id)),
            _ => None,
        })
        .collect();
    let committed = h
        .records
        .iter()
        .filter(|r| match r {
            Record::Served {
                host,
                id,
                fate: Fate::AnswerLost,
                reply: Some(Reply::Pruned(jobs)),
                ..
            } => !jobs.is_empty() && unavailable.contains(&(host.as_str(), *id)),
            _ => false,
        })
        .count();
    Failed {
        unavailable: unavailable.len(),
        not_applied: unavailable.difference(&applied).count(),
        committed,
    }
}

fn passes_with_unavailable_prunes_on(args: StoreArgs) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(SCENARIO);
    let s = load_file(&path).unwrap_or_else(|e| panic!("{e}"));
    let valid = PreparedConfig::new(s.config).unwrap_or_else(|e| panic!("{e}"));
    let stores = Stores::new(&args);
    let mut total = Failed::default();
    for seed in 0..SEEDS {
        let (run, history) = engine::run_keep(&valid, seed, &path.to_string_lossy(), &stores)
            .unwrap_or_else(|e| panic!("harness error: {e}"));
        assert!(
            run.violations().is_empty(),
            "seed {seed} on {:?}: {:?}",
            args.store,
            run.found().iter().map(|f| &f.summary).collect::<Vec<_>>()
        );
        let f = failed_prunes(&history);
        eprintln!("{:?} seed {seed}: {f:?}", args.store);
        total.unavailable += f.unavailable;
        total.not_applied += f.not_applied;
        total.committed += f.committed;
    }
    assert!(
        total.not_applied > 0,
        "no prune lost before the store: {total:?}"
    );
    assert!(
        total.committed > 0,
        "no committed prune answered Unavailable: {total:?}"
    );
}

fn on(kind: StoreKind, database_url: Option<String>) -> StoreArgs {
    StoreArgs {
        store: Some(kind),
        database_url,
        ..StoreArgs::default()
    }
}

#[test]
fn prunes_answered_unavailable_pass_on_memory() {
    passes_with_unavailable_prunes_on(on(StoreKind::Memory, None));
}

#[test]
fn prunes_answered_unavailable_pass_on_sqlite() {
    passes_with_unavailable_prunes_on(on(StoreKind::Sqlite, None));
}

#[test]
fn prunes_answered_unavailable_pass_on_postgres() {
    let Some(url) = cli_support::database_url() else {
        return;
    };
    passes_with_unavailable_prunes_on(on(StoreKind::Postgres, Some(url)));
}
