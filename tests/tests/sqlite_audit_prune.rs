//! The SQLite audit log stays bounded under pruning (issue 44): a prune
//! call deletes up to ten audit events per job of its limit, so the
//! `Pruner`, which makes one call per full batch of jobs and one more,
//! deletes the events of the jobs it prunes. With a bound of `limit`
//! events a call deleted a third of what a job writes, and a 1,000,000-job
//! soak left 1.96 million events behind.

use leasehold_core::{
    ClaimRequest, Millis, NewJob, Outcome, Policy, Pruner, PrunerConfig, Release, ReleaseRequest,
    Store, TokioRuntime, WorkerId, MIN_RETENTION,
};
use leasehold_sqlite::SqliteStore;
use leasehold_tests::{sqlite_store, MANUAL_EPOCH};
use std::sync::Arc;

const R: Millis = MIN_RETENTION;
const JOBS_PER_CYCLE: usize = 250;
const CYCLES: usize = 4;

/// `n` jobs enqueued, claimed and released: three events each.
async fn run_jobs<S: Store>(s: &S, n: usize) {
    for i in 0..n {
        s.enqueue(NewJob::new("q", i.to_string().into_bytes()))
            .await
            .expect("enqueue");
    }
    let claim = ClaimRequest {
        worker: WorkerId::new("w"),
        queue: "q".into(),
        lease: Millis(60_000),
        max: n as u32,
    };
    let leases = s.claim(claim).await.expect("claim");
    assert_eq!(leases.len(), n);
    for l in leases {
        let r = ReleaseRequest {
            job: l.job,
            token: l.token,
            outcome: Outcome::Succeeded(Vec::new()),
        };
        assert_eq!(s.release(r).await.expect("release"), Release::Committed);
    }
}

async fn events(s: &SqliteStore) -> usize {
    s.events().await.expect("events").len()
}

/// Each cycle runs 250 jobs (750 events), lets them age past `R` and runs
/// one `Pruner` wake-up of batch 100: the jobs go in three calls and their
/// events with them, every cycle, so the log never holds more than the
/// events of the jobs not yet prunable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_is_bounded_after_pruning_n_jobs() {
    let clock = leasehold_core::ManualStoreClock::new(MANUAL_EPOCH);
    let g = Arc::new(sqlite_store(Policy::default(), clock.clone()).await);
    let cfg = PrunerConfig::builder()
        .retention(R)
        .batch(100)
        .max_rounds(10)
        .build()
        .expect("config");
    let pruner = Pruner::new(g.clone(), TokioRuntime::new(), cfg);
    let mut pruned = 0;
    for cycle in 1..=CYCLES {
        run_jobs(&*g, JOBS_PER_CYCLE).await;
        assert_eq!(events(g.inner()).await, 3 * JOBS_PER_CYCLE, "cycle {cycle}");
        clock.advance(R);
        let ids = pruner.prune_once().await.expect("prune");
        assert_eq!(ids.len(), JOBS_PER_CYCLE, "cycle {cycle}: every job went");
        pruned += ids.len();
        assert_eq!(
            events(g.inner()).await,
            0,
            "cycle {cycle}: the pruned jobs' events went with them ({pruned} jobs pruned)"
        );
    }
}
