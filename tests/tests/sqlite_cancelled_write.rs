//! A write cancelled while SQLite is still executing it must not leave the
//! database write-locked.
//!
//! Found by the chaos test (`leasehold chaos --store sqlite --seed 12
//! --faults pause`): a worker resumed after `SIGSTOP` dropped its overdue
//! store calls; one was dropped while its `BEGIN IMMEDIATE` waited for the
//! lock, SQLite then took the lock for a transaction nobody owned, the
//! connection went back to the pool still inside it, and every writer of
//! every process stalled. Here the same thing happens on purpose, twice:
//! once with another connection (standing in for another process) holding
//! the lock while the store's enqueue is given up, and once with many
//! writers given up at varying times. Before `WriteConn` the second test
//! failed every time with `database is locked` (a pooled connection still
//! inside a transaction whose caller was gone); the first passed on sqlx's
//! own handling of a cancelled `BEGIN` and guards that path.

use leasehold_core::{NewJob, Policy, Store, StoreError};
use leasehold_sqlite::SqliteStore;
use std::time::Duration;

/// Long enough that the cancelled BEGIN is still waiting when we give up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the enqueue is allowed before the caller gives up on it.
const GIVE_UP_AFTER: Duration = Duration::from_millis(300);

async fn open(path: &std::path::Path) -> SqliteStore {
    let store = SqliteStore::builder(path)
        .policy(Policy::default())
        .busy_timeout(BUSY_TIMEOUT)
        .open()
        .await
        .expect("open");
    store.migrate().await.expect("migrate");
    store
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_cancelled_while_waiting_for_the_lock_does_not_keep_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jobs.db");
    let store = open(&path).await;
    let other_process = open(&path).await;

    // Another writer takes the database lock and keeps it for a while.
    let holder = other_process
        .pool()
        .begin_with("BEGIN IMMEDIATE")
        .await
        .expect("lock");

    // Our enqueue waits for that lock inside BEGIN IMMEDIATE; give up on it.
    let gave_up = tokio::time::timeout(GIVE_UP_AFTER, store.enqueue(NewJob::new("q", "lost")))
        .await
        .is_err();
    assert!(
        gave_up,
        "the enqueue finished while another writer held the lock"
    );

    // Free the lock: SQLite now completes the abandoned BEGIN on our
    // connection, for a transaction whose caller is gone.
    holder.rollback().await.expect("rollback");
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Both a writer in this process and one in the other must get through
    // well within one busy timeout.
    let ours = tokio::time::timeout(2 * BUSY_TIMEOUT, store.enqueue(NewJob::new("q", "ours")))
        .await
        .expect("a writer in the same process stalled");
    let id = ours.expect("a writer in the same process failed");
    let theirs: Result<_, StoreError> = tokio::time::timeout(
        2 * BUSY_TIMEOUT,
        other_process.enqueue(NewJob::new("q", "theirs")),
    )
    .await
    .expect("a writer in another process stalled");
    let their_id = theirs.expect("a writer in another process was locked out");
    assert_ne!(id, their_id);

    // Nothing of the abandoned enqueue was half-written: whatever it did is
    // either a whole job or nothing, and the two later jobs are whole.
    let rows = leasehold_core::list_all(&other_process)
        .await
        .expect("list");
    assert!(rows.iter().any(|r| r.id == id && r.payload == b"ours"));
    assert!(rows
        .iter()
        .any(|r| r.id == their_id && r.payload == b"theirs"));
    assert!(rows.len() <= 3, "unexpected rows: {}", rows.len());
}

/// Many writers in one process, each given up after a short, varying time,
/// so cancellations land at every stage of a write (waiting for the
/// in-process writer queue, inside `BEGIN IMMEDIATE`, between statements,
/// inside `COMMIT`). Afterwards the file must still accept writes from this
/// process and from another one, well within one busy timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_cancelled_at_every_stage_leave_the_file_writable() {
    const WRITERS: u64 = 16;
    const ROUNDS: u64 = 200;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jobs.db");
    let store = std::sync::Arc::new(open(&path).await);
    let other_process = open(&path).await;

    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            // A fixed-seed LCG: the spread of give-up times, not randomness,
            // is what matters here.
            let mut x = w.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1);
            let mut gave_up = 0u64;
            for r in 0..ROUNDS {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let limit = Duration::from_micros((x >> 33) % 4_000);
                let job = NewJob::new("q", format!("{w}-{r}"));
                if tokio::time::timeout(limit, store.enqueue(job))
                    .await
                    .is_err()
                {
                    gave_up += 1;
                }
            }
            gave_up
        }));
    }
    let mut gave_up = 0;
    for t in tasks {
        gave_up += t.await.expect("writer task");
    }
    assert!(
        gave_up > 0,
        "no write was cancelled; the test proves nothing"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;

    let ours = tokio::time::timeout(2 * BUSY_TIMEOUT, store.enqueue(NewJob::new("q", "ours")))
        .await
        .expect("a writer in the same process stalled");
    ours.expect("a writer in the same process failed");
    let theirs = tokio::time::timeout(
        2 * BUSY_TIMEOUT,
        other_process.enqueue(NewJob::new("q", "theirs")),
    )
    .await
    .expect("a writer in another process stalled");
    theirs.expect("a writer in another process was locked out");
}
