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

/// Answers its `n`th prune (from 1) with an unknown outcome, whatever
/// happened before; the others go to the store.
struct FailsCall {
    inner: Arc<MemoryStore>,
    n: u32,
    calls: AtomicU32,
}

forward_store! {
    impl[] Store for FailsCall, |self| self.inner;
    except [prune] {
        async fn prune(&self, req: PruneRequest) -> Result<Vec<JobId>, StoreError> {
            if self.calls.fetch_add(1, Ordering::SeqCst) + 1 == self.n {
                return Err(StoreError::Unavailable("down".into()));
            }
            self.inner.prune(req).await
        }
    }
}

/// A wake-up whose second call fails still names the jobs its first call
/// pruned: they are gone, and a caller told only the error could not
/// account for them.
#[tokio::test(start_paused = true)]
async fn a_wake_up_that_fails_part_way_reports_what_it_pruned_before() {
    let (s, clock) = store();
    let old = finished(&*s, 5).await;
    clock.advance(R);
    let store = Arc::new(FailsCall {
        inner: s.clone(),
        n: 2,
        calls: AtomicU32::new(0),
    });
    let p = Pruner::new(store.clone(), TokioRuntime::new(), cfg(2, 3));
    let failed = p.prune_once().await.expect_err("the second call fails");
    assert_eq!(
        failed.pruned,
        old[..2],
        "the first call's jobs are reported"
    );
    assert_eq!(failed.error, StoreError::Unavailable("down".into()));
    assert_eq!(store.calls.load(Ordering::SeqCst), 2, "no call after it");
    let left: Vec<JobId> = s.rows().iter().map(|r| r.id).collect();
    assert_eq!(left, old[2..], "exactly the reported jobs are gone");
    assert!(
        failed.to_string().contains("after 2 jobs pruned"),
        "{failed}"
    );
    // The next wake-up goes on from there.
    assert_eq!(p.prune_once().await.unwrap(), old[2..]);
}

/// A scheduler that starts after a plan time's job was pruned takes the
/// store's `PlanTimePruned` as "fired": it neither makes a second job nor
/// stops firing the schedule's later plan times.
#[tokio::test(start_paused = true)]
async fn a_scheduler_counts_a_pruned_plan_time_as_fired_and_goes_on() {
    use leasehold_core::schedule::{CatchUp, FireRequest, Rule, Schedule};
    use leasehold_core::{InputError, Scheduler, SchedulerConfig};
    let (s, clock) = store();
    let every = Millis(1_000);
    let sched = Schedule::new("tick", "q", "p", Rule::every(every)).catch_up(CatchUp::Latest);
    s.put_schedule(sched).await.unwrap();
    clock.advance(Millis(2_500));
    let now = s.now().await.unwrap();
    let p = StoreTime(now.0 - now.0.rem_euclid(every.0 as i64));
    let fire = FireRequest {
        name: "tick".into(),
        plan_time: p,
    };
    let job = s.fire(fire.clone()).await.unwrap();
    assert_eq!(s.cancel(job).await.unwrap(), CancelOutcome::Cancelled);
    clock.advance(R);
    let req = PruneRequest::new(R, 10).unwrap();
    assert_eq!(s.prune(req).await.unwrap(), vec![job]);
    assert_eq!(
        s.fire(fire).await,
        Err(StoreError::Input(InputError::PlanTimePruned {
            schedule: "tick".into(),
            plan_time: p,
            through: p,
        }))
    );
    // With a grace of 2R every plan time since the put is on time for a
    // new scheduler, p and the one before it included: the store answers
    // both `PlanTimePruned`, the scheduler counts them as fired (not
    // refused, which would stop the schedule's tick) and fires the rest.
    let cfg = SchedulerConfig::builder("s1")
        .misfire_grace(Millis(R.0 * 2))
        .build()
        .unwrap();
    let mut sch = Scheduler::new(s.clone(), TokioRuntime::new(), cfg);
    let report = sch.tick_once().await.unwrap();
    assert_eq!(report.refused, 0, "{report:?}");
    assert_eq!(report.unknown, 0, "{report:?}");
    assert!(!report.fired.is_empty(), "{report:?}");
    assert!(report.fired.iter().all(|(_, t, j)| *t > p && *j != job));
    let jobs_at_p = s
        .rows()
        .iter()
        .filter(|r| {
            r.idempotency_key.as_deref() == Some(&*leasehold_core::schedule::job_key("tick", p))
        })
        .count();
    assert_eq!(jobs_at_p, 0, "no second job for the pruned plan time");
}
