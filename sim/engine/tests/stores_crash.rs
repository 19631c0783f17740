//! A store crash under simulation on the SQL stores: the crash closes every
//! pooled connection, what committed survives, and the restart reopens the
//! same database (a fresh one per seed, removed at the end).

use leasehold_core::{NewJob, Policy, Store};
use leasehold_sim::runner::Backend;
use leasehold_sim::stores::driver::ready_now;
use leasehold_sim::stores::{PostgresFactory, SeedContext, SqliteFactory, StoreFactory};
use std::sync::Arc;

fn ctx(seed: u64) -> SeedContext {
    SeedContext {
        scenario: "crash".into(),
        seed,
        policy: Policy::default(),
        variant: None,
        interleave: false,
        differential: false,
    }
}

/// Opens, commits a job, crashes, reopens: the job is there. Answers
/// whether the crashed store's connections were closed.
fn crash_and_reopen<F: StoreFactory>(
    factory: F,
    closed: impl Fn(&F::Store) -> bool,
) -> Result<(), String> {
    let b = Backend::create(Arc::new(factory), ctx(7)).map_err(|e| e.to_string())?;
    let first = ready_now(b.open())
        .expect("a driver call finishes in place")
        .map_err(|e| e.to_string())?;
    let s = first.clone();
    let id = b
        .block_on(async move { s.enqueue(NewJob::new("q", "committed")).await })
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    b.close();
    assert!(closed(&first), "the crash closes the store's connections");
    let again = ready_now(b.open())
        .expect("in place")
        .map_err(|e| e.to_string())?;
    let row = b
        .block_on(async move { again.get(id).await })
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    assert_eq!(
        row.map(|r| r.payload),
        Some(b"committed".to_vec()),
        "committed work survives the crash"
    );
    b.destroy();
    Ok(())
}

#[test]
fn sqlite_crash_closes_connections_and_keeps_commits() {
    let dir = tempfile::tempdir().unwrap();
    crash_and_reopen(SqliteFactory::new(Some(dir.path().into())), |s| {
        s.pool().is_closed()
    })
    .unwrap();
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "the seed's database is removed at the end");
}

#[test]
fn postgres_crash_closes_connections_and_keeps_commits() {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("DATABASE_URL is not set: skipping (scripts/test.sh sets it)");
        return;
    };
    let prefix = format!("lh_crash_{}", std::process::id());
    let f = PostgresFactory::new(url, Some(prefix)).unwrap();
    crash_and_reopen(f, |s| s.pool().is_closed()).unwrap();
}
