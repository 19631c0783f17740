//! SQLite with several processes on one file: the parent and three child
//! processes (this test binary re-run as `child_claimer`) claim and release
//! from the same database at the same time; every job must be claimed
//! exactly once and finish with its claimer's result.

use leasehold_core::{
    ClaimRequest, JobId, JobState, Millis, NewJob, Outcome, Policy, Release, ReleaseRequest, Store,
    Token, WorkerId,
};
use leasehold_sqlite::SqliteStore;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_DB: &str = "LEASEHOLD_TEST_SQLITE_CHILD_DB";
const CHILD_NAME: &str = "LEASEHOLD_TEST_SQLITE_CHILD_NAME";
const CHILDREN: usize = 3;
const JOBS: usize = 1_500;
const GO_WAIT: Duration = Duration::from_secs(60);

/// Claims and releases until the queue is empty, printing `CLAIMED id token`
/// per lease. Answers the leases it committed.
async fn drain(store: &SqliteStore, name: &str) -> Vec<(JobId, Token)> {
    let mut mine = Vec::new();
    // Bounded: each non-empty claim takes at least one job.
    for _ in 0..=JOBS {
        let leases = store
            .claim(ClaimRequest {
                worker: WorkerId::new(name),
                queue: "shared".into(),
                lease: Millis(600_000),
                max: 4,
            })
            .await
            .expect("claim");
        if leases.is_empty() {
            break;
        }
        for l in leases {
            let req = ReleaseRequest {
                job: l.job,
                token: l.token,
                outcome: Outcome::Succeeded(name.as_bytes().to_vec()),
            };
            assert_eq!(
                store.release(req).await.expect("release"),
                Release::Committed
            );
            mine.push((l.job, l.token));
        }
    }
    mine
}

fn wait_for_go(db: &Path) {
    let go = db.with_extension("go");
    let started = Instant::now();
    while !go.exists() {
        assert!(started.elapsed() < GO_WAIT, "no go signal");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The child side: does nothing unless started by the parent test.
#[test]
fn child_claimer() {
    let (Ok(db), Ok(name)) = (std::env::var(CHILD_DB), std::env::var(CHILD_NAME)) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let store = SqliteStore::builder(&db).open().await.expect("open");
        wait_for_go(Path::new(&db));
        for (job, token) in drain(&store, &name).await {
            println!("CLAIMED {} {}", job.0, token.0);
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_processes_claim_each_job_of_one_file_exactly_once() {
    if std::env::var(CHILD_DB).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("shared.db");
    let store = SqliteStore::open(&db, Policy::default())
        .await
        .expect("open");
    for i in 0..JOBS {
        store
            .enqueue(NewJob::new("shared", i.to_string().into_bytes()))
            .await
            .expect("enqueue");
    }
    let exe = std::env::current_exe().expect("test binary");
    let mut children = Vec::new();
    for c in 0..CHILDREN {
        let child = Command::new(&exe)
            .args([
                "--exact",
                "child_claimer",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DB, &db)
            .env(CHILD_NAME, format!("child-{c}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn child");
        children.push(child);
    }
    std::fs::write(db.with_extension("go"), b"go").expect("go");
    let parent = drain(&store, "parent").await;

    let mut claims: Vec<(String, JobId, Token)> = parent
        .into_iter()
        .map(|(j, t)| ("parent".to_string(), j, t))
        .collect();
    for (c, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().expect("child output");
        assert!(out.status.success(), "child-{c} failed: {:?}", out.status);
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            // The test harness may print on the same line before ours.
            if let Some(at) = line.find("CLAIMED ") {
                let rest = &line[at + "CLAIMED ".len()..];
                let mut it = rest.split(' ');
                let job = it.next().and_then(|v| v.parse().ok()).expect("job");
                let token = it.next().and_then(|v| v.parse().ok()).expect("token");
                claims.push((format!("child-{c}"), JobId(job), Token(token)));
            }
        }
    }

    let mut by_job: BTreeMap<JobId, Vec<&str>> = BTreeMap::new();
    let mut per_process: BTreeMap<&str, usize> = BTreeMap::new();
    for (who, job, token) in &claims {
        assert_eq!(*token, Token(1), "{job} claimed with {token}");
        by_job.entry(*job).or_default().push(who);
        *per_process.entry(who).or_default() += 1;
    }
    eprintln!("claims per process: {per_process:?}");
    assert_eq!(by_job.len(), JOBS, "every job claimed");
    assert!(
        by_job.values().all(|w| w.len() == 1),
        "a job was claimed twice"
    );
    assert!(
        per_process.len() >= 2,
        "more than one process took part: {per_process:?}"
    );
    let rows = leasehold_core::list_all(&store).await.expect("list");
    assert_eq!(rows.len(), JOBS);
    for r in rows {
        assert_eq!(r.state, JobState::Succeeded, "{r:?}");
        let who = by_job[&r.id][0];
        assert_eq!(r.result.as_deref(), Some(who.as_bytes()), "{}", r.id);
    }
}
