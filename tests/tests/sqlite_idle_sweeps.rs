//! A sweep that finds no expired lease never takes SQLite's write lock.
//!
//! Another connection (standing in for another process) holds the write
//! lock. A sweep while no lease has expired must answer "nothing
//! reclaimed" at once from a read (`adapters/sqlite/src/sweep_probe.rs`),
//! as a read does. Once the lease has expired the sweep needs the lock: it
//! waits for it, and reclaims the lease once the lock comes back. Without
//! the probe every sweep queued on the lock for up to the busy timeout.

use leasehold_core::{ManualStoreClock, Millis, NewJob, Policy, Store, SweepRequest};
use leasehold_sqlite::{Durability, SqliteStore};
use leasehold_tests::{poll, MANUAL_EPOCH};
use std::time::{Duration, Instant};

/// How long the other process holds the write lock.
const HOLD: Duration = Duration::from_millis(1_000);
/// An answer from a read, whoever holds the write lock: slack for a loaded
/// machine, far below the hold.
const READ_LIMIT: Duration = Duration::from_millis(250);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweeps_without_expired_leases_answer_while_another_process_holds_the_write_lock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jobs.db");
    let clock = ManualStoreClock::new(MANUAL_EPOCH);
    let store = SqliteStore::builder(&path)
        .policy(Policy::default())
        .clock(clock.clone())
        .durability(Durability::Normal)
        .open()
        .await
        .expect("open");
    store.migrate().await.expect("migrate");
    let store = std::sync::Arc::new(store);
    let job = store
        .enqueue(NewJob::new("q", "held"))
        .await
        .expect("enqueue");
    let lease = poll("q").lease;
    let granted = store.claim(poll("q")).await.expect("claim");
    assert_eq!(granted.iter().map(|l| l.job).collect::<Vec<_>>(), vec![job]);
    let other = SqliteStore::builder(&path)
        .clock(clock.clone())
        .open()
        .await
        .expect("open other");

    let holder = other
        .pool()
        .begin_with("BEGIN IMMEDIATE")
        .await
        .expect("the other process takes the write lock");
    let held_at = Instant::now();

    // The lease runs until `MANUAL_EPOCH + lease`: a millisecond before,
    // nothing has expired.
    clock.advance(Millis(lease.0 - 1));
    let started = Instant::now();
    let swept = store
        .sweep(SweepRequest { limit: 10 })
        .await
        .expect("sweep before expiry");
    let took = started.elapsed();
    assert!(swept.is_empty(), "no lease has expired: {swept:?}");
    assert!(
        took < READ_LIMIT,
        "a sweep with nothing to reclaim waited for the write lock: {took:?}"
    );

    // At its end the lease has expired: the sweep needs the lock.
    clock.advance(Millis(1));
    let sweep = tokio::spawn({
        let store = store.clone();
        async move {
            let got = store.sweep(SweepRequest { limit: 10 }).await;
            (got, Instant::now())
        }
    });
    tokio::time::sleep(HOLD.saturating_sub(held_at.elapsed())).await;
    let released_at = Instant::now();
    holder.rollback().await.expect("release the lock");
    let (got, answered_at) = sweep.await.expect("sweep task");
    let got = got.expect("sweep after expiry");
    assert_eq!(
        got.iter().map(|r| r.job).collect::<Vec<_>>(),
        vec![job],
        "the expired lease is reclaimed once the lock is free"
    );
    assert!(
        answered_at >= released_at,
        "a sweep that reclaims a lease answered while another process held the write lock"
    );
}
