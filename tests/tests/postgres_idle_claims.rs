//! An idle worker's poll takes no transaction on PostgreSQL.
//!
//! Another session holds `leasehold_jobs` in `EXCLUSIVE` mode, which lets
//! plain reads through and blocks every row lock. A claim, a batch of
//! claims and `claim_many` of queues with no due job (whose last claim
//! took nothing) must answer empty at
//! once from one read (`adapters/postgres/src/claim_probe.rs`). A claim of
//! a queue with a due job still runs its `FOR UPDATE SKIP LOCKED` scan:
//! it waits for the table, and answers the job once the lock is gone.
//! Without the probe every poll waited behind the lock.

use leasehold_core::{BatchRequest, Millis, NewJob, Policy, Store};
use leasehold_tests::table_lock::{lock_jobs_table, READ_LIMIT};
use leasehold_tests::{database_url, pg_store, poll};
use std::sync::Arc;
use std::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_of_idle_queues_answer_while_another_session_locks_the_rows() {
    let Some(url) = database_url() else { return };
    let store = Arc::new(pg_store(&url, Policy::default(), None).await);
    let schema = store.inner().schema().expect("schema").to_string();
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

    let mut table = lock_jobs_table(&url, &schema).await;
    // Each idle poll is bounded: one that waits for the table is given up,
    // and the test fails after the lock is let go, instead of hanging.
    let idle = async {
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
        let started = Instant::now();
        let many = store
            .inner()
            .claim_many(&[poll("idle"), poll("empty")])
            .await
            .expect("idle claim_many");
        (lone, lone_took, batch, batch_took, many, started.elapsed())
    };
    let (lone, lone_took, batch, batch_took, many, many_took) = table.within_half_hold(idle).await;
    assert!(lone.is_empty(), "nothing is due on `idle`: {lone:?}");
    for answers in [&batch.claims, &many] {
        assert!(
            answers.iter().all(|c| matches!(c, Ok(l) if l.is_empty())),
            "nothing is due on `idle` or `empty`: {answers:?}"
        );
    }
    assert!(
        lone_took < READ_LIMIT && batch_took < READ_LIMIT && many_took < READ_LIMIT,
        "idle polls waited for the table: claim {lone_took:?}, batch {batch_took:?}, \
         claim_many {many_took:?}"
    );

    // A queue with a due job needs its row lock: the claim waits.
    let (got, waited) = table
        .release({
            let store = store.clone();
            async move { store.claim(poll("busy")).await }
        })
        .await;
    let got = got.expect("claim of the due job");
    assert_eq!(
        got.iter().map(|l| l.job).collect::<Vec<_>>(),
        vec![due],
        "the due job is granted once the table is free"
    );
    assert!(
        waited,
        "a claim that takes a job answered while another session locked the table"
    );
}

/// One probe answers for every queue of a batch: a due job in any of them
/// sends the whole batch to the write path, which waits for the table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_with_one_due_queue_among_idle_ones_waits_for_the_table() {
    let Some(url) = database_url() else { return };
    let store = Arc::new(pg_store(&url, Policy::default(), None).await);
    let schema = store.inner().schema().expect("schema").to_string();
    for q in ["a-idle", "m-due", "z-idle"] {
        assert!(store.claim(poll(q)).await.expect("first poll").is_empty());
    }
    // Enqueued by another process on the same schema: this store's idle
    // marks stay, so only the probe can see the job.
    let other = leasehold_postgres::PgStore::builder(&url)
        .schema(schema.clone())
        .connect()
        .await
        .expect("connect other");
    let due = other
        .enqueue(NewJob::new("m-due", "due"))
        .await
        .expect("enqueue");
    other.close().await;

    let table = lock_jobs_table(&url, &schema).await;
    let (got, waited) = table
        .release({
            let store = store.clone();
            async move {
                store
                    .batch(BatchRequest {
                        releases: Vec::new(),
                        claims: vec![poll("a-idle"), poll("m-due"), poll("z-idle")],
                    })
                    .await
            }
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
        "a batch with a due queue was answered from the probe while another session locked the table"
    );
}
