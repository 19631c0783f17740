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
use leasehold_tests::{database_url, pg_store, poll};
use sqlx::Connection;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the other session holds the table.
const HOLD: Duration = Duration::from_millis(1_000);
/// An answer from a read, whoever holds the table: slack for a loaded
/// machine, far below the hold.
const READ_LIMIT: Duration = Duration::from_millis(250);

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

    let mut other = sqlx::PgConnection::connect(&url).await.expect("connect");
    sqlx::query("BEGIN")
        .execute(&mut other)
        .await
        .expect("begin");
    sqlx::query(&format!(
        "LOCK TABLE \"{schema}\".leasehold_jobs IN EXCLUSIVE MODE"
    ))
    .execute(&mut other)
    .await
    .expect("the other session locks the table");
    let held_at = Instant::now();

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
    let Ok((lone, lone_took, batch, batch_took, many, many_took)) =
        tokio::time::timeout(HOLD / 2, idle).await
    else {
        sqlx::query("ROLLBACK")
            .execute(&mut other)
            .await
            .expect("unlock");
        panic!("an idle poll waited for the table for {:?}", HOLD / 2);
    };
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
    let busy = tokio::spawn({
        let store = store.clone();
        async move {
            let got = store.claim(poll("busy")).await;
            (got, Instant::now())
        }
    });
    tokio::time::sleep(HOLD.saturating_sub(held_at.elapsed())).await;
    let released_at = Instant::now();
    sqlx::query("COMMIT")
        .execute(&mut other)
        .await
        .expect("unlock");
    let (got, answered_at) = busy.await.expect("claim task");
    let got = got.expect("claim of the due job");
    assert_eq!(
        got.iter().map(|l| l.job).collect::<Vec<_>>(),
        vec![due],
        "the due job is granted once the table is free"
    );
    assert!(
        answered_at >= released_at,
        "a claim that takes a job answered while another session locked the table"
    );
    let _ = other.close().await;
}
