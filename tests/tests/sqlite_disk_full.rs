//! The SQLite store on a file system that fills up mid-run (issue 27).
//!
//! The store's file lives on a small disk (`leasehold_tests::small_disk`:
//! a `tmpfs` where the test may mount one, else a file-size limit). A real
//! `Worker` and `Sweeper` run jobs; once some have succeeded the disk
//! fills while the worker holds leases whose handlers are about to finish.
//! Then every write fails with a clear error (`Unavailable`, "disk full",
//! or "disk I/O error" under a file-size limit), fast and without a panic;
//! what committed before is still there with its results; and once the
//! space is freed the run heals by itself: every job succeeds and the file
//! passes `PRAGMA integrity_check`. Where the disk is a tmpfs, the test
//! then runs itself again in a child under the file-size limit, so both
//! errors are checked. This binary holds one test: the file-size limit
//! holds for the whole process.

use leasehold_core::{
    list_all, shutdown_channel, ClaimRequest, Handler, HandlerError, JobId, JobRecord, JobState,
    Lease, Millis, NewJob, Outcome, Policy, ReleaseRequest, RenewRequest, Rule, Schedule,
    StopSignal, Store, StoreError, SweepRequest, Sweeper, SweeperConfig, TokioRuntime, Worker,
    WorkerConfig, WorkerId,
};
use leasehold_sqlite::SqliteStore;
use leasehold_tests::small_disk::{self, SmallDisk};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The file system's size: room for the schema, the WAL of this run and
/// not much more.
const DISK_BYTES: u64 = 4 * 1024 * 1024;
/// Jobs that succeed before the disk fills.
const BEFORE: usize = 8;
/// Jobs whose handlers run while the disk fills.
const DURING: usize = 24;
/// The worker's slots: all of them hold a gated lease when the disk fills.
const CONCURRENCY: u32 = 4;
/// Jobs in the one `enqueue_many` sent on the full disk, and each one's
/// payload (the default cap): 4 MiB, twice SQLite's default page cache.
const SPILL_JOBS: u8 = 4;
const SPILL_PAYLOAD: usize = 1 << 20;
/// A failing write must answer within this (not hang).
const ANSWER_LIMIT: Duration = Duration::from_secs(5);
/// How long the disk stays full while the worker keeps trying.
const FULL_FOR: Duration = Duration::from_millis(1_500);
/// Every job must be done this long after the space is freed.
const HEAL_LIMIT: Duration = Duration::from_secs(30);

/// Answers `done:<payload>`; jobs of the second batch wait for the gate.
struct Gated(watch::Receiver<bool>);

impl Handler for Gated {
    async fn handle(&self, lease: Lease, _stop: StopSignal) -> Result<Vec<u8>, HandlerError> {
        if lease.payload.starts_with(b"during") {
            let mut gate = self.0.clone();
            gate.wait_for(|open| *open)
                .await
                .map_err(|_| HandlerError::retryable("gate dropped"))?;
        }
        Ok([b"done:".as_slice(), &lease.payload].concat())
    }
}

/// Asserts `answer` is the store's clear error naming `cause`, in time.
fn assert_fails<T: std::fmt::Debug>(
    what: &str,
    cause: &str,
    answer: Result<Result<T, StoreError>, tokio::time::error::Elapsed>,
) {
    let answer = answer.unwrap_or_else(|_| panic!("{what} hung on a full disk"));
    match answer {
        Err(StoreError::Unavailable(m)) if m.contains(cause) => {
            eprintln!("{what}: {m}");
        }
        other => panic!("{what} on a full disk answered {other:?}, not {cause:?}"),
    }
}

/// A lease and a pending job of the test's own, for direct calls.
struct Direct {
    held: Lease,
    pending: JobId,
}

impl Direct {
    async fn new(store: &SqliteStore) -> Direct {
        store
            .enqueue(NewJob::new("direct", "held"))
            .await
            .expect("enqueue");
        let mut held = store.claim(claim(Millis(600_000))).await.expect("claim");
        assert_eq!(held.len(), 1);
        let pending = store
            .enqueue(NewJob::new("direct", "pending"))
            .await
            .expect("enqueue");
        Direct {
            held: held.remove(0),
            pending,
        }
    }

    fn release(&self) -> ReleaseRequest {
        ReleaseRequest {
            job: self.held.job,
            token: self.held.token,
            outcome: Outcome::Succeeded(b"direct".to_vec()),
        }
    }

    /// Every kind of write on the full disk fails with `cause`, at once.
    async fn every_write_fails(&self, store: &SqliteStore, cause: &str) {
        let enqueue = store.enqueue(NewJob::new("jobs", "refused"));
        assert_fails(
            "enqueue",
            cause,
            tokio::time::timeout(ANSWER_LIMIT, enqueue).await,
        );
        // Larger than the page cache: the rows spill to the WAL while they
        // are inserted, so the insert itself (not only the commit) fails.
        let big: Vec<NewJob> = (0..SPILL_JOBS)
            .map(|i| NewJob::new("jobs", vec![i; SPILL_PAYLOAD]))
            .collect();
        assert_fails(
            "enqueue_many",
            cause,
            tokio::time::timeout(ANSWER_LIMIT, store.enqueue_many(&big)).await,
        );
        assert_fails(
            "claim",
            cause,
            tokio::time::timeout(ANSWER_LIMIT, store.claim(claim(Millis(60_000)))).await,
        );
        let renew = RenewRequest {
            job: self.held.job,
            token: self.held.token,
            lease: Millis(600_000),
        };
        assert_fails(
            "renew",
            cause,
            tokio::time::timeout(ANSWER_LIMIT, store.renew(renew)).await,
        );
        assert_fails(
            "release",
            cause,
            tokio::time::timeout(ANSWER_LIMIT, store.release(self.release())).await,
        );
        assert_fails(
            "cancel",
            cause,
            tokio::time::timeout(ANSWER_LIMIT, store.cancel(self.pending)).await,
        );
        let schedule = Schedule::new("nightly", "jobs", "payload", Rule::every(Millis(60_000)));
        assert_fails(
            "put_schedule",
            cause,
            tokio::time::timeout(ANSWER_LIMIT, store.put_schedule(schedule)).await,
        );
        // A sweep with nothing to reclaim writes nothing and may succeed.
        match tokio::time::timeout(ANSWER_LIMIT, store.sweep(SweepRequest { limit: 10 })).await {
            Ok(Ok(reports)) => assert!(reports.is_empty(), "a sweep reclaimed: {reports:?}"),
            other => assert_fails("sweep", cause, other),
        }
    }
}

fn claim(lease: Millis) -> ClaimRequest {
    ClaimRequest {
        worker: WorkerId::new("direct-caller"),
        queue: "direct".into(),
        lease,
        max: 1,
    }
}

async fn wait_until(
    store: &SqliteStore,
    limit: Duration,
    done: impl Fn(&[JobRecord]) -> bool,
) -> Vec<JobRecord> {
    let start = Instant::now();
    // Bounded by `limit`.
    loop {
        let rows = list_all(store).await.expect("list");
        if done(&rows) || start.elapsed() > limit {
            return rows;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn succeeded(rows: &[JobRecord], payload_prefix: &[u8]) -> usize {
    rows.iter()
        .filter(|r| r.payload.starts_with(payload_prefix) && r.state == JobState::Succeeded)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_writes_clearly_keeps_commits_and_heals() {
    let disk = SmallDisk::new(DISK_BYTES).expect("small disk");
    eprintln!("the disk fills by {}", disk.describe());
    let store = SqliteStore::builder(disk.path().join("jobs.db"))
        .policy(Policy::default())
        .busy_timeout(Duration::from_secs(2))
        .open()
        .await
        .expect("open");
    store.migrate().await.expect("migrate");
    let store = Arc::new(store);
    let direct = Direct::new(&store).await;

    let (open_gate, gate) = watch::channel(false);
    let (stop, shutdown) = shutdown_channel();
    let config = WorkerConfig::builder(format!("disk-full-{}", std::process::id()), "jobs")
        .concurrency(CONCURRENCY)
        .poll_interval(Millis(20))
        .lease(Millis(3_000))
        .renew_interval(Millis(500))
        .request_timeout(Millis(1_000))
        .release_retry_delay(Millis(50))
        .build()
        .expect("worker config");
    let worker = Worker::new(store.clone(), Gated(gate), TokioRuntime::new(), config);
    let sweeper_config = SweeperConfig::new(Millis(200), 100).expect("sweeper config");
    let sweeper = Sweeper::new(store.clone(), TokioRuntime::new(), sweeper_config);
    let running = tokio::spawn(worker.run(shutdown.clone()));
    let sweeping = tokio::spawn(sweeper.run(shutdown));

    // Jobs that commit before the disk fills.
    enqueue(&store, "before", BEFORE).await;
    let committed = wait_until(&store, HEAL_LIMIT, |rows| {
        succeeded(rows, b"before") == BEFORE
    })
    .await;
    assert_eq!(
        succeeded(&committed, b"before"),
        BEFORE,
        "the first jobs did not finish"
    );

    // The worker leases jobs whose handlers wait at the gate; the disk
    // fills; the handlers finish and their releases meet the full disk.
    let during = enqueue(&store, "during", DURING).await;
    wait_until(&store, HEAL_LIMIT, |rows| {
        rows.iter()
            .filter(|r| r.payload.starts_with(b"during") && r.state == JobState::Running)
            .count()
            == CONCURRENCY as usize
    })
    .await;
    disk.fill().expect("fill the disk");
    open_gate.send_replace(true);
    let started = Instant::now();
    direct.every_write_fails(&store, disk.cause()).await;
    eprintln!(
        "seven calls on the full disk answered in {:?}",
        started.elapsed()
    );

    // Reads still work, and everything committed is still there as it was.
    tokio::time::sleep(FULL_FOR).await;
    let mid = list_all(&*store).await.expect("list on a full disk");
    for before in &committed {
        assert_eq!(
            mid.iter().find(|r| r.id == before.id),
            Some(before),
            "a committed row changed"
        );
    }
    assert_eq!(
        succeeded(&mid, b"during"),
        0,
        "a release committed on a full disk"
    );
    assert!(
        mid.iter().all(|r| r.payload != b"refused"),
        "a refused enqueue committed"
    );

    // Free the space: the worker's retries, the sweeper and new claims
    // finish every job without help.
    disk.free().expect("free the disk");
    let freed = Instant::now();
    let rows = wait_until(&store, HEAL_LIMIT, |rows| {
        succeeded(rows, b"during") == DURING
    })
    .await;
    eprintln!(
        "every job done {:?} after the space was freed",
        freed.elapsed()
    );
    for id in &during {
        let row = rows.iter().find(|r| r.id == *id).expect("job kept");
        assert_eq!(row.state, JobState::Succeeded, "{row:?}");
        let expected = [b"done:".as_slice(), &row.payload].concat();
        assert_eq!(row.result.as_deref(), Some(expected.as_slice()));
    }
    for before in &committed {
        assert_eq!(
            rows.iter().find(|r| r.id == before.id),
            Some(before),
            "a committed row changed"
        );
    }
    store
        .release(direct.release())
        .await
        .expect("a direct write heals too");
    stop.shutdown();
    running.await.expect("worker");
    sweeping.await.expect("sweeper");
    let check: String = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_one(store.pool())
        .await
        .expect("integrity check");
    assert_eq!(check, "ok");
    store.close().await;
    if !disk.uses_size_limit() {
        the_size_limit_way_passes_too();
    }
}

/// Runs this test again in a child process with the disk filled by the
/// file-size limit, so both ways of failing (`SQLITE_FULL` on a tmpfs,
/// `SQLITE_IOERR` under the limit) are checked wherever a tmpfs can be
/// mounted. A child, because the limit holds for the whole process.
fn the_size_limit_way_passes_too() {
    let exe = std::env::current_exe().expect("test binary");
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "a_full_disk_fails_writes_clearly_keeps_commits_and_heals",
            "--nocapture",
        ])
        .env(small_disk::FORCE_LIMIT, "limit")
        .output()
        .expect("run the size-limit child");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "under a file-size limit: {}\n{}{stderr}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        stderr.contains("RLIMIT_FSIZE"),
        "the child did not fill by the limit:\n{stderr}"
    );
}

async fn enqueue(store: &SqliteStore, prefix: &str, n: usize) -> Vec<JobId> {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let job = NewJob::new("jobs", format!("{prefix}-{i}"));
        ids.push(store.enqueue(job).await.expect("enqueue"));
    }
    ids
}
