//! An idle worker's poll never takes SQLite's write lock, and a poll
//! with a due job among its queues always does.
//!
//! Another connection (standing in for another process) holds the write
//! lock. A claim, and a batch of claims, of a queue with no due job (whose
//! last claim took nothing) must answer empty at once from a read
//! (`adapters/sqlite/src/claim_probe.rs`), as a read does. A claim of a
//! queue with a due job still needs the lock: it waits for it, and answers
//! the job once the lock comes back. Without the probe every poll queued
//! on the lock for up to the busy timeout.

use leasehold_core::{BatchRequest, Millis, NewJob, Store};
use leasehold_tests::poll;
use leasehold_tests::write_lock::{hold_write_lock, two_processes, READ_LIMIT};
use std::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_of_idle_queues_answer_while_another_process_holds_the_write_lock() {
    let p = two_processes(None).await;
    let store = p.store.clone();
    let due = store
        .enqueue(NewJob::new("busy", "due"))
        .await
        .expect("enqueue");
    // A job not yet due leaves its queue idle.
    let later = NewJob::new("idle", "later").delay(Millis(3_600_000));
    store.enqueue(later).await.expect("enqueue later");

    // A first poll of each queue takes the write path and finds nothing:
    // from then on the store probes them (`leasehold_sql::idle_queues`).
    for q in ["idle", "empty"] {
        assert!(store.claim(poll(q)).await.expect("first poll").is_empty());
    }

    let held = hold_write_lock(&p.other).await;
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
    let (got, waited) = held
        .release(async move { store.claim(poll("busy")).await })
        .await;
    let got = got.expect("claim of the due job");
    assert_eq!(
        got.iter().map(|l| l.job).collect::<Vec<_>>(),
        vec![due],
        "the due job is granted once the lock is free"
    );
    assert!(
        waited,
        "a claim that takes a job answered while another process held the write lock"
    );
}

/// One probe answers for every queue of a batch: a due job in any of them
/// sends the whole batch to the write path, which waits for the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_with_one_due_queue_among_idle_ones_waits_for_the_write_lock() {
    let p = two_processes(None).await;
    let store = p.store.clone();
    for q in ["a-idle", "m-due", "z-idle"] {
        assert!(store.claim(poll(q)).await.expect("first poll").is_empty());
    }
    // Enqueued by the other process: this store's idle marks stay, so only
    // the probe can see the job.
    let due = p
        .other
        .enqueue(NewJob::new("m-due", "due"))
        .await
        .expect("enqueue");

    let held = hold_write_lock(&p.other).await;
    let (got, waited) = held
        .release(async move {
            store
                .batch(BatchRequest {
                    releases: Vec::new(),
                    claims: vec![poll("a-idle"), poll("m-due"), poll("z-idle")],
                })
                .await
        })
        .await;
    let got = got.expect("batch");
    let granted: Vec<Vec<_>> = got
        .claims
        .iter()
        .map(|c| c.as_ref().expect("claim").iter().map(|l| l.job).collect())
        .collect();
    assert_eq!(granted, vec![vec![], vec![due], vec![]]);
    assert!(
        waited,
        "a batch with a due queue was answered from the probe while another process held the write lock"
    );
}
