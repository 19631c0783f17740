//! A merged batch's transaction runs off the caller's runtime threads
//! (`batch_thread.rs`): it commits while they are busy. A dropped call on
//! that path is `tests/tests/commit_point_faults.rs`'s SQLite case (a
//! multi-thread runtime).

use crate::close_tests::temp_dir;
use crate::SqliteStore;
use leasehold_core::{
    BatchRequest, ClaimRequest, JobId, JobState, Millis, NewJob, Policy, Store, WorkerId,
};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest a test waits for something that takes milliseconds.
const PATIENCE: Duration = Duration::from_secs(10);

fn claim_one() -> BatchRequest {
    BatchRequest {
        releases: Vec::new(),
        claims: vec![ClaimRequest {
            worker: WorkerId::new("w"),
            queue: "q".into(),
            lease: Millis(30_000),
            max: 1,
        }],
    }
}

/// The runtime of a process of `Worker`s, with one worker thread: a task
/// that blocks it leaves no runtime thread to poll anything else.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Whether `job` in the file at `path` reaches `Running` within
/// [`PATIENCE`], seen through a store of its own on a thread and runtime of
/// its own (so that it sees commits while the test's runtime is blocked).
fn watch_for_claim(path: &Path, job: JobId) -> std::thread::JoinHandle<bool> {
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("watcher's runtime");
        rt.block_on(async move {
            let store = SqliteStore::builder(&path).open().await.expect("open");
            let deadline = Instant::now() + PATIENCE;
            let mut seen = false;
            while !seen && Instant::now() < deadline {
                let row = store.get(job).await.expect("get");
                seen = row.is_some_and(|r| r.state == JobState::Running);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            store.close().await;
            seen
        })
    })
}

#[test]
fn a_merged_batch_commits_while_its_callers_runtime_thread_is_busy() {
    let dir = temp_dir("batch-thread-busy");
    let path = dir.join("jobs.db");
    let rt = runtime();
    let store = Arc::new(
        rt.block_on(SqliteStore::open(&path, Policy::default()))
            .expect("open"),
    );
    let job = rt
        .block_on(store.enqueue(NewJob::new("q", b"x".to_vec())))
        .expect("enqueue");
    rt.block_on(async {
        // Spawned from outside the runtime, both tasks queue in order: the
        // call starts its transaction, then the second task blocks the
        // runtime's only thread, as handlers keep a busy runtime's threads,
        // until the job is seen claimed. Polled there, the transaction
        // could not move.
        let caller = store.clone();
        let call = tokio::spawn(async move { caller.batch(claim_one()).await });
        let watched = path.clone();
        let busy = tokio::spawn(async move { watch_for_claim(&watched, job).join() });
        let claimed = busy.await.expect("busy task").expect("watcher");
        assert!(
            claimed,
            "the batch did not commit while its caller's runtime thread was busy"
        );
        let answer = call.await.expect("task").expect("batch");
        assert_eq!(answer.claims.len(), 1);
        let leases = answer.claims[0].as_ref().expect("claim");
        assert_eq!(leases.iter().map(|l| l.job).collect::<Vec<_>>(), [job]);
    });
    rt.block_on(store.close());
    let _ = std::fs::remove_dir_all(&dir);
}
