//! The core's `Pruner` over the memory store, under tokio's paused clock
//! (its own clock) and a manual store clock (the one that judges age).

use leasehold_core::worker::{Pruner, PrunerConfig};
use leasehold_core::{
    forward_store, shutdown_channel, CancelOutcome, JobId, ManualStoreClock, Millis, NewJob,
    Policy, PruneRequest, Store, StoreError, StoreTime, TokioRuntime, MIN_RETENTION,
};
use leasehold_memory::MemoryStore;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

const R: Millis = MIN_RETENTION;

fn store() -> (Arc<MemoryStore>, ManualStoreClock) {
    let clock = ManualStoreClock::new(StoreTime(1_000_000));
    (
        Arc::new(MemoryStore::with_clock(Policy::default(), clock.clone())),
        clock,
    )
}

/// `n` cancelled jobs, finished now.
async fn finished<S: Store>(s: &S, n: u8) -> Vec<JobId> {
    let mut ids = Vec::new();
    for i in 0..n {
        let id = s.enqueue(NewJob::new("q", vec![i])).await.unwrap();
        assert_eq!(s.cancel(id).await.unwrap(), CancelOutcome::Cancelled);
        ids.push(id);
    }
    ids
}

fn cfg(batch: u32, rounds: u32) -> PrunerConfig {
    PrunerConfig::builder()
        .retention(R)
        .batch(batch)
        .max_rounds(rounds)
        .period(Millis(10_000))
        .error_backoff(Millis(1_000))
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn one_wake_up_prunes_at_most_its_rounds_of_batches_and_only_old_jobs() {
    let (s, clock) = store();
    let old = finished(&*s, 5).await;
    clock.advance(R);
    let young = finished(&*s, 1).await;
    let p = Pruner::new(s.clone(), TokioRuntime::new(), cfg(2, 2));
    assert_eq!(p.prune_once().await.unwrap(), old[..4], "two rounds of two");
    assert_eq!(p.prune_once().await.unwrap(), old[4..], "then what is left");
    assert!(p.prune_once().await.unwrap().is_empty());
    let left: Vec<JobId> = s.rows().iter().map(|r| r.id).collect();
    assert_eq!(left, young, "a job finished less than R ago stays");
}

#[tokio::test(start_paused = true)]
async fn run_prunes_every_period_until_shutdown() {
    let (s, clock) = store();
    finished(&*s, 3).await;
    clock.advance(R);
    let (stop, sd) = shutdown_channel();
    let task = tokio::spawn(Pruner::new(s.clone(), TokioRuntime::new(), cfg(2, 1)).run(sd));
    // One round of two at start, the last one a period later.
    tokio::time::sleep(Millis(1).to_std()).await;
    assert_eq!(s.rows().len(), 1, "the first wake-up pruned one batch");
    tokio::time::sleep(Millis(10_000).to_std()).await;
    assert!(s.rows().is_empty(), "the next period pruned the rest");
    stop.shutdown();
    task.await.unwrap();
}

/// Fails its first `failing` prunes with an unknown outcome, recording
/// when (on tokio's clock) each prune came.
struct Flaky {
    inner: Arc<MemoryStore>,
    failing: AtomicU32,
    calls: Mutex<Vec<tokio::time::Instant>>,
}

forward_store! {
    impl[] Store for Flaky, |self| self.inner;
    except [prune] {
        async fn prune(&self, req: PruneRequest) -> Result<Vec<JobId>, StoreError> {
            self.calls.lock().unwrap().push(tokio::time::Instant::now());
            if self.failing.load(Ordering::SeqCst) > 0 {
                self.failing.fetch_sub(1, Ordering::SeqCst);
                return Err(StoreError::Unavailable("down".into()));
            }
            self.inner.prune(req).await
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_failing_store_is_retried_with_a_doubling_backoff_capped_at_the_period() {
    let (s, clock) = store();
    finished(&*s, 1).await;
    clock.advance(R);
    let flaky = Arc::new(Flaky {
        inner: s.clone(),
        failing: AtomicU32::new(5),
        calls: Mutex::new(Vec::new()),
    });
    let start = tokio::time::Instant::now();
    let (stop, sd) = shutdown_channel();
    let cfg = PrunerConfig::builder()
        .retention(R)
        .period(Millis(5_000))
        .error_backoff(Millis(1_000))
        .build()
        .unwrap();
    let task = tokio::spawn(Pruner::new(flaky.clone(), TokioRuntime::new(), cfg).run(sd));
    tokio::time::sleep(Millis(20_000).to_std()).await;
    stop.shutdown();
    task.await.unwrap();
    let at: Vec<u128> = flaky
        .calls
        .lock()
        .unwrap()
        .iter()
        .map(|t| (*t - start).as_millis())
        .collect();
    // Failures at 0, 1, 3, 7 and 12 s (waits 1, 2, 4, then 5 = the period,
    // not 8); the sixth call succeeds at 17 s and prunes.
    assert_eq!(at, [0, 1_000, 3_000, 7_000, 12_000, 17_000]);
    assert!(s.rows().is_empty(), "the job went once the store answered");
}
