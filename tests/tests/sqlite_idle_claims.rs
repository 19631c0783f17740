//! An idle worker's poll never takes SQLite's write lock, and a poll
//! with a due job among its queues always does.
//!
//! Another connection (standing in for another process) holds the write
//! lock. A claim, and a batch of claims, of a queue with no due job (whose
//! last claim took nothing) must answer empty at once from a read
//! (`adapters/sqlite/src/claim_probe.rs`), as a read does. A claim of a queue with a due job still needs the lock:
//! it waits for it, and answers the job once the lock comes back. Without
//! the probe every poll queued on the lock for up to the busy timeout.

use leasehold_core::{BatchRequest, Millis, NewJob, Policy, Store};
use leasehold_sqlite::{Durability, SqliteStore};
use leasehold_tests::poll;
use std::time::{Duration, Instant};

/// How long the other process holds the write lock.
const HOLD: Duration = Duration::from_millis(1_000);
/// An answer from a read, whoever holds the write lock: slack for a loaded
/// machine, far below the hold.
const READ_LIMIT: Duration = Duration::from_millis(250);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_of_idle_queues_answer_while_another_process_holds_the_write_lock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jobs.db");
    let store = SqliteStore::builder(&path)
        .policy(Policy::default())
        .durability(Durability::Normal)
        .open()
        .await
        .expect("open");
    store.migrate().await.expect("migrate");
    let store = std::sync::Arc::new(store);
    let due = store
        .enqueue(NewJob::new("busy", "due"))
        .await
        .expect("enqueue");
    // A job not yet due leaves its queue idle.
    let later = NewJob::new("idle", "later").delay(Millis(3_600_000));
    store.enqueue(later).await.expect("enqueue later");
    let other = SqliteStore::builder(&path)
        .open()
        .await
        .expect("open other");

    // A first poll of each queue takes the write path and finds nothing:
    // from then on the store probes them (`leasehold_sql::idle_queues`).
    for q in ["idle", "empty"] {
        assert!(store.claim(poll(q)).await.expect("first poll").is_empty());
    }

    let holder = other
        .pool()
        .begin_with("BEGIN IMMEDIATE")
        .await
        .expect("the other process takes the write lock");
    let held_at = Instant::now();

    let started = Instant::now();
    let lone = store.claim(poll("idle")).await.expect("idle claim");
    let lone_took = started.elapsed();
    let started = Instant::now();
    let batch = store
        .batch(BatchRequest {
            releases: Vec::new(),
            claims: vec![poll("idle"), poll("empty")],
        })
        .await
        .expect("idle batch");
    let batch_took = started.elapsed();
    assert!(lone.is_empty(), "nothing is due on `idle`: {lone:?}");
    assert!(
        batch
            .claims
            .iter()
            .all(|c| matches!(c, Ok(l) if l.is_empty())),
        "nothing is due on `idle` or `empty`: {:?}",
        batch.claims
    );
    assert!(
        lone_took < READ_LIMIT && batch_took < READ_LIMIT,
        "idle polls waited for the write lock: claim {lone_took:?}, batch {batch_took:?}"
    );

    // A queue with a due job needs the lock: the claim waits for it.
    let busy = tokio::spawn({
        let store = store.clone();
        async move {
            let got = store.claim(poll("busy")).await;
            (got, Instant::now())
        }
    });
    tokio::time::sleep(HOLD.saturating_sub(held_at.elapsed())).await;
    let released_at = Instant::now();
    holder.rollback().await.expect("release the lock");
    let (got, answered_at) = busy.await.expect("claim task");
    let got = got.expect("claim of the due job");
    assert_eq!(
        got.iter().map(|l| l.job).collect::<Vec<_>>(),
        vec![due],
        "the due job is granted once the lock is free"
    );
    assert!(
        answered_at >= released_at,
        "a claim that takes a job answered while another process held the write lock"
    );
}

/// One probe answers for every queue of a batch: a due job in any of them
/// sends the whole batch to the write path, which waits for the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_with_one_due_queue_among_idle_ones_waits_for_the_write_lock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jobs.db");
    let store = SqliteStore::builder(&path)
        .policy(Policy::default())
        .durability(Durability::Normal)
        .open()
        .await
        .expect("open");
    store.migrate().await.expect("migrate");
    let store = std::sync::Arc::new(store);
    let other = SqliteStore::builder(&path)
        .open()
        .await
        .expect("open other");
    for q in ["a-idle", "m-due", "z-idle"] {
        assert!(store.claim(poll(q)).await.expect("first poll").is_empty());
    }
    // Enqueued by the other process: this store's idle marks stay, so only
    // the probe can see the job.
    let due = other
        .enqueue(NewJob::new("m-due", "due"))
        .await
        .expect("enqueue");

    let holder = other
        .pool()
        .begin_with("BEGIN IMMEDIATE")
        .await
        .expect("the other process takes the write lock");
    let held_at = Instant::now();
    let batch = tokio::spawn({
        let store = store.clone();
        async move {
            let got = store
                .batch(BatchRequest {
                    releases: Vec::new(),
                    claims: vec![poll("a-idle"), poll("m-due"), poll("z-idle")],
                })
                .await;
            (got, Instant::now())
        }
    });
    tokio::time::sleep(HOLD.saturating_sub(held_at.elapsed())).await;
    let released_at = Instant::now();
    holder.rollback().await.expect("release the lock");
    let (got, answered_at) = batch.await.expect("batch task");
    let got = got.expect("batch");
    let granted: Vec<Vec<_>> = got
        .claims
        .iter()
        .map(|c| c.as_ref().expect("claim").iter().map(|l| l.job).collect())
        .collect();
    assert_eq!(granted, vec![vec![], vec![due], vec![]]);
    assert!(
        answered_at >= released_at,
        "a batch with a due queue was answered from the probe while another process held the write lock"
    );
}
