//! A worker batch cancelled by its caller while the SQL adapter is inside
//! its transaction, and PostgreSQL's own serialization and deadlock
//! failures, raised at the commit point (the faults the simulator arms,
//! `leasehold_core::tx_faults`).
//!
//! Cancelled: the batch's future is dropped once every statement ran and
//! before its commit. Nothing of it may commit (the release's row keeps its
//! version, the claimed job stays pending), and later writers, in the same
//! store and after it, get through at once: no lock is left behind.
//! Failures (PostgreSQL only): one deadlock is retried by the adapter and
//! the answer is the same; serialization failures on every try end in
//! `Conflict` with nothing applied. Postgres needs `DATABASE_URL`.

use leasehold_core::tx_faults::TxFaults;
use leasehold_core::{
    BatchRequest, JobId, JobRecord, JobState, ManualStoreClock, Millis, NewJob, Outcome, Policy,
    Release, ReleaseRequest, Store, StoreError, Token,
};
use leasehold_postgres::PgStore;
use leasehold_tests::requests::claim_q as claim;
use leasehold_tests::{database_url, pg_store, sqlite_store, Guarded, SchemaGuard, MANUAL_EPOCH};
use std::time::Duration;

/// Far longer than any healthy write here; a writer blocked by a leaked
/// lock waits out its busy timeout or stalls for good.
const LATER_WRITER_LIMIT: Duration = Duration::from_secs(2);

/// One running job (`held`, with its token) and one pending (`free`).
async fn setup<S: Store>(store: &S) -> (JobId, Token, JobId) {
    let held = store
        .enqueue(NewJob::new("q", "held"))
        .await
        .expect("enqueue");
    let leases = store.claim(claim("w1", 1)).await.expect("claim");
    assert_eq!(leases.len(), 1);
    assert_eq!(leases[0].job, held);
    let free = store
        .enqueue(NewJob::new("q", "free"))
        .await
        .expect("enqueue");
    (held, leases[0].token, free)
}

fn batch(held: JobId, token: Token) -> BatchRequest {
    BatchRequest {
        releases: vec![ReleaseRequest {
            job: held,
            token,
            outcome: Outcome::Succeeded(b"done".to_vec()),
        }],
        claims: vec![claim("w2", 1)],
    }
}

async fn row<S: Store>(store: &S, job: JobId) -> JobRecord {
    store.get(job).await.expect("get").expect("row exists")
}

async fn cancelled_batch_commits_nothing<S: Store>(store: &S, faults: &TxFaults) {
    let (held, token, free) = setup(store).await;
    let (before_held, before_free) = (row(store, held).await, row(store, free).await);

    let reached = faults.arm_stall();
    let finished = tokio::select! {
        biased;
        _ = reached => false,
        _ = store.batch(batch(held, token)) => true,
    };
    faults.disarm();
    assert!(
        !finished,
        "the batch ended without reaching its commit point"
    );

    assert_eq!(
        row(store, held).await,
        before_held,
        "the cancelled release committed"
    );
    assert_eq!(
        row(store, free).await,
        before_free,
        "the cancelled claim committed"
    );

    // The same batch again, as the worker retries it: it gets through at
    // once and commits, so nothing of the dropped transaction holds a lock.
    let again = tokio::time::timeout(LATER_WRITER_LIMIT, store.batch(batch(held, token)))
        .await
        .expect("a later writer stalled behind the cancelled transaction")
        .expect("the retried batch");
    assert_eq!(again.releases, vec![Ok(Release::Committed)]);
    let granted = again.claims[0].as_ref().expect("claim answered");
    assert_eq!(granted.len(), 1);
    assert_eq!(granted[0].job, free);
    assert_eq!(row(store, held).await.state, JobState::Succeeded);
    assert_eq!(row(store, free).await.state, JobState::Running);
    let other = tokio::time::timeout(LATER_WRITER_LIMIT, store.enqueue(NewJob::new("q", "next")))
        .await
        .expect("a later enqueue stalled");
    other.expect("a later enqueue failed");
}

/// A fresh PostgreSQL store on a manual clock.
async fn pg_on_manual_clock(url: &str) -> Guarded<PgStore, SchemaGuard> {
    pg_store(
        url,
        Policy::default(),
        Some(ManualStoreClock::new(MANUAL_EPOCH)),
    )
    .await
}

/// On a multi-thread runtime, where the store runs a merged batch's
/// transaction on a thread of the blocking pool (`batch_thread.rs`). The
/// runtime is shut down with a bound before a failure is reported: a
/// transaction that outlived its dropped caller would otherwise hold the
/// runtime's drop, and the test would hang instead of failing.
#[test]
fn sqlite_batch_cancelled_mid_transaction_commits_nothing() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async {
            let store = sqlite_store(Policy::default(), ManualStoreClock::new(MANUAL_EPOCH)).await;
            cancelled_batch_commits_nothing(&store, store.inner().tx_faults()).await;
        })
    }));
    rt.shutdown_timeout(LATER_WRITER_LIMIT);
    if let Err(failure) = outcome {
        std::panic::resume_unwind(failure);
    }
}

/// Many rounds, a fresh store each: the retried claim must find the job the
/// cancelled batch had locked every time, not only when the pool's return
/// task happened to send sqlx's queued `ROLLBACK` first. (Before the store
/// waited for its own rollbacks, 1 run in 30 of one round failed on a
/// loaded machine, CI's among them.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_batch_cancelled_mid_transaction_commits_nothing() {
    const ROUNDS: usize = 30;
    let Some(url) = database_url() else { return };
    for _ in 0..ROUNDS {
        let store = pg_on_manual_clock(&url).await;
        cancelled_batch_commits_nothing(&store, store.inner().tx_faults()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_retries_a_deadlock_and_answers_conflict_after_serialization_failures() {
    let Some(url) = database_url() else { return };
    let store = pg_on_manual_clock(&url).await;
    let faults = store.inner().tx_faults();
    let (held, token, free) = setup(&store).await;
    let (before_held, before_free) = (row(&store, held).await, row(&store, free).await);

    // Serialization failures on every try: the adapter gives up with
    // `Conflict`, and nothing was applied.
    faults.arm_failures(None, "40001");
    let answer = store.batch(batch(held, token)).await;
    faults.disarm();
    assert!(
        matches!(answer, Err(StoreError::Conflict(_))),
        "expected Conflict, got {answer:?}"
    );
    assert_eq!(row(&store, held).await, before_held);
    assert_eq!(row(&store, free).await, before_free);
    faults.arm_failures(None, "40P01");
    let renew = store
        .renew(leasehold_core::RenewRequest {
            job: held,
            token,
            lease: Millis(60_000),
        })
        .await;
    faults.disarm();
    assert!(matches!(renew, Err(StoreError::Conflict(_))), "{renew:?}");
    assert_eq!(row(&store, held).await, before_held);

    // One deadlock: retried inside the adapter, answered as if none.
    faults.arm_failures(Some(1), "40P01");
    let answer = store
        .batch(batch(held, token))
        .await
        .expect("retried batch");
    faults.disarm();
    assert_eq!(answer.releases, vec![Ok(Release::Committed)]);
    assert_eq!(answer.claims[0].as_ref().expect("claim").len(), 1);
    assert_eq!(row(&store, held).await.state, JobState::Succeeded);
    assert_eq!(row(&store, held).await.version, before_held.version + 1);
}
