//! Writes their callers gave up on, while another process held SQLite's
//! write lock, must not starve the store's other callers (issue 27).
//!
//! Another connection (standing in for another process) holds the write
//! lock for [`HOLD`]. Meanwhile [`WRITERS`] tasks of one `SqliteStore` keep
//! enqueueing, each call given up after [`GIVE_UP`], as a worker's request
//! timeout gives it up. Before the fix every given-up write went on waiting
//! in SQLite's busy handler (for up to the 10 s busy timeout) on a pooled
//! connection, so after four give-ups the pool was full of writes nobody
//! wanted: a read started halfway through the hold waited until the lock
//! came back (853–883 ms), and once it did the next writer waited behind
//! the abandoned writes' busy-handler sleeps (34–64 ms, median 37 ms). With
//! the fix a read answers in under 1 ms and the next writer in about 1 ms
//! (0.6–3.1 ms): a write waits in SQLite one short slice at a time, a
//! given-up write ends within that slice, and reads have a pool of their
//! own (`adapters/sqlite/src/busy.rs`).

use leasehold_core::{NewJob, Policy, Store};
use leasehold_sqlite::{Durability, SqliteStore, DEFAULT_BUSY_TIMEOUT};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the other process holds the write lock each round.
const HOLD: Duration = Duration::from_millis(1_500);
/// A caller's request timeout.
const GIVE_UP: Duration = Duration::from_millis(100);
/// Concurrent writers of the one store.
const WRITERS: usize = 6;
/// Hold-and-release rounds.
const ROUNDS: usize = 5;
/// A read answers from the WAL whoever holds the write lock: this is slack
/// for a loaded machine, not a wait.
const READ_LIMIT: Duration = Duration::from_millis(250);
/// Median time from the lock's release to the next writer's commit. The
/// store polls the lock every few milliseconds; this is slack for load.
const NEXT_WRITER_LIMIT: Duration = Duration::from_millis(20);

/// What one round measured.
struct Round {
    read_wait: Duration,
    next_writer_wait: Duration,
    gave_up: usize,
    committed_while_held: usize,
}

/// Writers that enqueue until `stop`, each call given up after [`GIVE_UP`];
/// answers (calls given up, calls committed).
fn spawn_writers(
    store: &Arc<SqliteStore>,
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<(usize, usize)>> {
    // Each writer gives up at most once per GIVE_UP: a bound on its loop.
    let max_calls = 4 * (HOLD.as_millis() / GIVE_UP.as_millis()) as usize;
    (0..WRITERS)
        .map(|w| {
            let (store, stop) = (store.clone(), stop.clone());
            tokio::spawn(async move {
                let (mut gave_up, mut committed) = (0, 0);
                for call in 0..max_calls {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let job = NewJob::new("q", format!("given-up-{w}-{call}"));
                    match tokio::time::timeout(GIVE_UP, store.enqueue(job)).await {
                        Err(_) => gave_up += 1,
                        Ok(Ok(_)) => committed += 1,
                        // A refusal is not what this test is about; the
                        // write still did not starve anyone.
                        Ok(Err(_)) => {}
                    }
                }
                (gave_up, committed)
            })
        })
        .collect()
}

async fn one_round(
    store: &Arc<SqliteStore>,
    other: &SqliteStore,
    seed: leasehold_core::JobId,
) -> Round {
    let holder = take_write_lock(other).await;
    let held_at = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let writers = spawn_writers(store, &stop);

    // Give the writers time to give up more calls than the pool has
    // connections, then read. The read runs beside the hold, which ends on
    // time whatever the read does.
    tokio::time::sleep(HOLD / 2).await;
    let reader = store.clone();
    let read = tokio::spawn(async move {
        let started = Instant::now();
        let row = tokio::time::timeout(2 * DEFAULT_BUSY_TIMEOUT, reader.get(seed)).await;
        (row, started.elapsed())
    });

    tokio::time::sleep(HOLD.saturating_sub(held_at.elapsed())).await;
    stop.store(true, Ordering::Relaxed);
    let (mut gave_up, mut committed_while_held) = (0, 0);
    for w in writers {
        let (g, c) = w.await.expect("writer task");
        gave_up += g;
        committed_while_held += c;
    }

    // The next writer asks while the lock is still held, with a limit far
    // above any healthy wait, and is timed from the release.
    let next_store = store.clone();
    let next = tokio::spawn(async move {
        let answer = tokio::time::timeout(
            2 * DEFAULT_BUSY_TIMEOUT,
            next_store.enqueue(NewJob::new("q", "next")),
        )
        .await;
        (answer, Instant::now())
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    holder.rollback().await.expect("the other process releases");
    let released_at = Instant::now();
    let (answer, done_at) = next.await.expect("next writer task");
    let (row, read_wait) = read.await.expect("reader task");
    let row = row.expect("a read stalled").expect("read");
    assert_eq!(row.map(|r| r.payload), Some(b"seed".to_vec()));
    answer
        .expect("the next writer stalled")
        .expect("the next writer failed");
    Round {
        read_wait,
        next_writer_wait: done_at.saturating_duration_since(released_at),
        gave_up,
        committed_while_held,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn given_up_writes_do_not_starve_the_next_writer_or_readers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jobs.db");
    // The default busy timeout (10 s): a given-up write could wait that
    // long. Commits without fsync, so the next writer's time is its wait
    // for the lock, not the disk's.
    let store = SqliteStore::builder(&path)
        .policy(Policy::default())
        .durability(Durability::Normal)
        .open()
        .await
        .expect("open");
    store.migrate().await.expect("migrate");
    let store = Arc::new(store);
    let other = SqliteStore::builder(&path)
        .open()
        .await
        .expect("open other");
    let seed = store.enqueue(NewJob::new("q", "seed")).await.expect("seed");

    let mut rounds = Vec::new();
    for _ in 0..ROUNDS {
        let r = one_round(&store, &other, seed).await;
        eprintln!(
            "read waited {:?}, next writer waited {:?} after the release; {} calls given up",
            r.read_wait, r.next_writer_wait, r.gave_up
        );
        rounds.push(r);
    }

    for r in &rounds {
        assert!(
            r.gave_up > 4,
            "too few give-ups ({}) to fill the pool",
            r.gave_up
        );
        assert_eq!(
            r.committed_while_held, 0,
            "a write committed under another's lock"
        );
    }
    let worst_read = rounds.iter().map(|r| r.read_wait).max().unwrap_or_default();
    let mut next_waits: Vec<Duration> = rounds.iter().map(|r| r.next_writer_wait).collect();
    next_waits.sort();
    let median_next = next_waits[ROUNDS / 2];
    assert!(
        worst_read < READ_LIMIT,
        "a read waited {worst_read:?} behind given-up writes"
    );
    assert!(
        median_next < NEXT_WRITER_LIMIT,
        "the next writer waited {median_next:?} (median) after the lock was released"
    );

    // Nothing a given-up write did committed: only the seed and each
    // round's next writer are in the file.
    let rows = leasehold_core::list_all(&*store).await.expect("list");
    let payloads: Vec<&[u8]> = rows.iter().map(|r| r.payload.as_slice()).collect();
    assert_eq!(rows.len(), 1 + ROUNDS, "rows: {payloads:?}");
    assert!(rows
        .iter()
        .all(|r| r.payload == b"seed" || r.payload == b"next"));
}

/// A write whose caller waits answers "database is locked" once the busy
/// timeout has passed (its tries are sliced, not endless, and not cut short).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_waits_out_the_busy_timeout_then_answers_locked() {
    const BUSY: Duration = Duration::from_millis(300);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jobs.db");
    let store = SqliteStore::builder(&path)
        .busy_timeout(BUSY)
        .open()
        .await
        .expect("open");
    store.migrate().await.expect("migrate");
    let other = SqliteStore::builder(&path)
        .open()
        .await
        .expect("open other");
    let holder = take_write_lock(&other).await;

    let started = Instant::now();
    let answer = tokio::time::timeout(10 * BUSY, store.enqueue(NewJob::new("q", "late")))
        .await
        .expect("the write outlived ten busy timeouts");
    let waited = started.elapsed();
    match answer {
        Err(leasehold_core::StoreError::Unavailable(m)) => {
            assert!(m.contains("database is locked"), "{m}")
        }
        other => panic!("expected a locked database, got {other:?}"),
    }
    assert!(
        waited >= BUSY,
        "gave up after {waited:?}, before the busy timeout"
    );
    assert!(
        waited < 3 * BUSY,
        "waited {waited:?} for a {BUSY:?} busy timeout"
    );

    // Once the lock is free the same store writes at once.
    holder.rollback().await.expect("release");
    let next = tokio::time::timeout(BUSY, store.enqueue(NewJob::new("q", "next")))
        .await
        .expect("the write after the release stalled");
    next.expect("the write after the release failed");
}

/// `other` (standing for another process) takes the database's write lock
/// and holds it until the returned transaction ends.
async fn take_write_lock(other: &SqliteStore) -> sqlx::Transaction<'static, sqlx::Sqlite> {
    other
        .pool()
        .begin_with("BEGIN IMMEDIATE")
        .await
        .expect("the other process takes the write lock")
}
