//! The core's worker runtime (`Worker`, `Sweeper`) over the memory
//! adapter, under tokio's paused clock: time only moves when every task
//! waits, so each run is deterministic.

mod runtime_support;

use leasehold_core::worker::{BeliefEnd, RuntimeEvent, WorkerConfig, WorkerStats};
use leasehold_core::*;
use runtime_support::{bundle, bundle_with_one_job, recorded, Bundle, Flaky, Script, Scripted};
use std::sync::atomic::Ordering;

const LEASE: u64 = 1000;
const RENEW: u64 = 300;

/// Worker `w1` on `q` with the lease, renew interval, drift and fence
/// margin `SAFE` is computed from, giving up on a request after
/// `request_timeout` ms.
fn config(concurrency: u32, request_timeout: u64) -> WorkerConfig {
    WorkerConfig::builder("w1", "q")
        .concurrency(concurrency)
        .lease(Millis(LEASE))
        .renew_interval(Millis(RENEW))
        .max_drift_ppm(10_000)
        .fence_margin(Millis(100))
        .request_timeout(Millis(request_timeout))
        .poll_interval(Millis(50))
        .grace(Millis(500))
        .build()
        .unwrap()
}

/// The usual worker: requests time out after 200 ms.
fn cfg(concurrency: u32) -> WorkerConfig {
    config(concurrency, 200)
}

/// `L·(1−ρ)/(1+ρ) − margin` for the settings above.
const SAFE: u64 = 880;

#[tokio::test(start_paused = true)]
async fn handler_outliving_the_lease_keeps_it_by_heartbeats() {
    let b = bundle();
    let job = b.enqueue(NewJob::new("q", b"r".to_vec())).await;
    let handler = Scripted::new(Script::Work(5 * LEASE), &b.rt);
    let (stop, sd) = shutdown_channel();
    let w = b.spawn_observed(handler.clone(), cfg(1), sd.clone());
    let s = tokio::spawn(b.sweeper(100, 10).run(sd));

    let done = b.wait_state(job, JobState::Succeeded, 20 * LEASE).await;
    stop.shutdown();
    let stats = w.await.unwrap();
    s.await.unwrap();

    assert_eq!(
        done.token,
        Token(1),
        "never reclaimed: one lease for the whole run"
    );
    assert_eq!(done.result, Some(b"r".to_vec()));
    assert_eq!(stats.committed, 1);
    let renews = b
        .events()
        .iter()
        .filter(|e| matches!(e, RuntimeEvent::Renewed { .. }))
        .count();
    assert!(
        renews >= 15,
        "renewed about every {RENEW}ms over {}ms: {renews}",
        5 * LEASE
    );
    let swept = b
        .store
        .inner
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Swept { .. }))
        .count();
    assert_eq!(swept, 0, "no crash report for a live holder");
    assert_eq!(handler.trace().dropped.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn lost_lease_stops_the_handler() {
    let (b, job) = bundle_with_one_job().await;
    let handler = Scripted::new(Script::UntilStopped, &b.rt);
    let (stop, sd) = shutdown_channel();
    let w = b.spawn_observed(handler.clone(), cfg(1), sd);
    b.wait_state(job, JobState::Running, 1000).await;

    // The store's clock leaps past expiry and a sweep reclaims the job: the
    // next renew must answer Lost and the handler must be stopped.
    b.jump.store(10 * LEASE as i64, Ordering::SeqCst);
    let reports = b.store.sweep(SweepRequest { limit: 10 }).await.unwrap();
    assert_eq!(reports.len(), 1);
    let swept_at = b.rt.now().0;
    b.sleep(RENEW + 50).await;

    let trace = handler.trace();
    assert_eq!(
        trace.dropped.len(),
        1,
        "handler dropped once the renew said Lost"
    );
    assert!(
        trace.dropped[0] <= swept_at + RENEW + 1,
        "stopped at the next renew"
    );
    let lost = b.belief_ends().contains(&BeliefEnd::Lost);
    assert!(lost, "belief ended as Lost");
    stop.shutdown();
    let stats = w.await.unwrap();
    assert_eq!(stats.abandoned, 1);
}

#[tokio::test(start_paused = true)]
async fn release_after_the_lease_was_reclaimed_answers_lost() {
    let (b, job) = bundle_with_one_job().await;
    // Finishes at 700 ms, before the first renew at 750 ms.
    let handler = Scripted::new(Script::Work(700), &b.rt);
    let config = WorkerConfig {
        renew_interval: Millis(750),
        ..cfg(1)
    };
    let (stop, sd) = shutdown_channel();
    let w = b.spawn_observed(handler, config, sd);
    b.wait_state(job, JobState::Running, 1000).await;
    b.jump.store(10 * LEASE as i64, Ordering::SeqCst);
    assert_eq!(
        b.store
            .sweep(SweepRequest { limit: 10 })
            .await
            .unwrap()
            .len(),
        1
    );
    b.sleep(800).await;
    stop.shutdown();
    let stats = w.await.unwrap();

    let answers: Vec<_> = b
        .events()
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::Released { token, answer, .. } if *token == Token(1) => Some(*answer),
            _ => None,
        })
        .collect();
    assert_eq!(answers, vec![Some(Release::Lost)]);
    assert!(stats.release_lost >= 1);
    let row = b.row(job).await;
    assert_ne!(
        row.state,
        JobState::Succeeded,
        "a stale holder's success is not committed over the reclaim"
    );
}

#[tokio::test(start_paused = true)]
async fn cancel_reaches_a_running_handler() {
    let (stop, sd) = shutdown_channel();
    let (b, job) = bundle_with_one_job().await;
    let handler = Scripted::new(Script::UntilStopped, &b.rt);
    let w = b.spawn_worker(handler.clone(), cfg(1), sd);
    b.wait_state(job, JobState::Running, 1000).await;
    assert_eq!(b.store.cancel(job).await.unwrap(), CancelOutcome::Requested);
    let row = b.wait_state(job, JobState::Cancelled, 2 * LEASE).await;
    stop.shutdown();
    w.await.unwrap();
    assert_eq!(handler.trace().stop_reasons, vec![StopReason::Cancel]);
    assert_eq!(row.token, Token(1));
    assert_eq!(
        b.store.cancel(job).await.unwrap(),
        CancelOutcome::AlreadyTerminal(JobState::Cancelled)
    );
}

#[tokio::test(start_paused = true)]
async fn self_fencing_fires_when_renews_go_unanswered() {
    let (b, job) = bundle_with_one_job().await;
    let handler = Scripted::new(Script::Stubborn(10 * LEASE), &b.rt);
    let (stop, sd) = shutdown_channel();
    b.store.renew_down.store(true, Ordering::SeqCst);
    let w = b.spawn_observed(handler.clone(), cfg(1), sd);
    b.wait_state(job, JobState::Running, 1000).await;
    b.sleep(2 * LEASE).await;

    let trace = handler.trace();
    assert_eq!(trace.dropped.len(), 1, "handler stopped by the fence");
    let claimed_at = trace.started[0];
    let fenced_after = trace.dropped[0] - claimed_at;
    assert!(
        fenced_after <= SAFE,
        "stopped within the safe lease: {fenced_after}ms > {SAFE}ms"
    );
    assert!(
        fenced_after + 10 >= SAFE,
        "not long before it either: {fenced_after}ms"
    );
    assert!(
        fenced_after < LEASE,
        "before the store could reassign the lease"
    );
    let fenced = b.belief_ends().contains(&BeliefEnd::Fenced);
    assert!(fenced);
    // No release was sent: the row is left for the sweeper.
    assert_eq!(b.row(job).await.state, JobState::Running);
    stop.shutdown();
    w.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn heartbeat_survives_transient_renew_errors() {
    let (b, job) = bundle_with_one_job().await;
    let handler = Scripted::new(Script::Work(3 * LEASE), &b.rt);
    b.store.renew_failures.store(2, Ordering::SeqCst);
    let (stop, sd) = shutdown_channel();
    let sweeper = b.sweeper(50, 10);
    let s = tokio::spawn(sweeper.run(sd.clone()));
    let w = b.spawn_worker(handler, cfg(1), sd);
    let row = b.wait_state(job, JobState::Succeeded, 10 * LEASE).await;
    stop.shutdown();
    w.await.unwrap();
    s.await.unwrap();
    assert_eq!(
        row.token,
        Token(1),
        "two failed renews did not lose the lease"
    );
    assert_eq!(
        b.store.renew_failures.load(Ordering::SeqCst),
        0,
        "both injected failures were hit"
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_returns_running_leases() {
    let b = bundle();
    let coop = b.enqueue(NewJob::new("q", b"a".to_vec())).await;
    let stubborn = b.enqueue(NewJob::new("q", b"b".to_vec())).await;
    let (stop, sd) = shutdown_channel();
    let h1 = Scripted::new(Script::UntilStopped, &b.rt);
    let w1 = b.spawn_worker(h1.clone(), cfg(1), sd.clone());
    b.wait_state(coop, JobState::Running, 1000).await;
    let h2 = Scripted::new(Script::Stubborn(100 * LEASE), &b.rt);
    let config2 = WorkerConfig::builder("w2", "q")
        .lease(Millis(LEASE))
        .renew_interval(Millis(RENEW))
        .fence_margin(Millis(100))
        .grace(Millis(500))
        .build()
        .unwrap();
    let w2 = b.spawn_worker(h2.clone(), config2, sd);
    b.wait_state(stubborn, JobState::Running, 2000).await;
    let t0 = b.rt.now().0;
    stop.shutdown();
    let (s1, s2) = (w1.await.unwrap(), w2.await.unwrap());
    let took = b.rt.now().0 - t0;

    for id in [coop, stubborn] {
        let row = b.row(id).await;
        assert_eq!(row.state, JobState::Pending, "{id} returned");
        assert_eq!(row.attempt, 0, "{id}: a returned attempt is refunded");
    }
    assert_eq!(h1.trace().stop_reasons, vec![StopReason::Shutdown]);
    assert_eq!(
        h2.trace().dropped.len(),
        1,
        "the stubborn handler was dropped after the grace"
    );
    assert!(
        took <= 500 + 50,
        "shutdown bounded by the grace time: {took}ms"
    );
    assert_eq!((s1.committed, s2.committed), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn poison_payload_fails_the_job_for_good() {
    let b = bundle();
    let job = b
        .enqueue(NewJob::new("q", b"\xff".to_vec()).max_attempts(5))
        .await;
    let (stop, sd) = shutdown_channel();
    let w = b.spawn_worker(Scripted::new(Script::Poison, &b.rt), cfg(2), sd);
    let row = b.wait_state(job, JobState::Dead, 1000).await;
    stop.shutdown();
    w.await.unwrap();
    assert_eq!(row.attempt, 1, "not retried");
    assert!(row.error.unwrap().contains("poison"));
}

#[tokio::test(start_paused = true)]
async fn concurrency_limit_bounds_running_leases() {
    let b = bundle();
    for i in 0..10u8 {
        b.enqueue(NewJob::new("q", vec![i])).await;
    }
    let (stop, sd) = shutdown_channel();
    let w = b.spawn_worker(Scripted::new(Script::Work(200), &b.rt), cfg(3), sd);
    let mut max_running = 0;
    for _ in 0..200 {
        let rows = list_all(&*b.store).await.unwrap();
        let running = rows.iter().filter(|r| r.state == JobState::Running).count();
        max_running = max_running.max(running);
        if rows.iter().all(|r| r.state == JobState::Succeeded) {
            break;
        }
        b.sleep(10).await;
    }
    stop.shutdown();
    let stats = w.await.unwrap();
    assert_eq!(stats.committed, 10);
    assert_eq!(max_running, 3);
}

/// Two handlers finish together, so their releases share a batch; the
/// store never answers the first. The second must still reach the store
/// and commit: sent one after the other, it waited behind the hung one on
/// every retry, its lease went silent and was reclaimed as if the worker
/// had crashed (found by a madsim swarm seed).
#[tokio::test(start_paused = true)]
async fn a_release_that_is_never_answered_does_not_hold_back_its_batch() {
    let b = bundle();
    let mut jobs = Vec::new();
    for payload in [b"a", b"b"] {
        jobs.push(b.enqueue(NewJob::new("q", payload.to_vec())).await);
    }
    b.store.hang_first_release.store(true, Ordering::SeqCst);
    let handler = Scripted::new(Script::Work(100), &b.rt);
    let (stop, sd) = shutdown_channel();
    let w = b.spawn_worker(handler, cfg(2), sd);
    for &job in &jobs {
        b.wait_state(job, JobState::Running, 1000).await;
    }
    // Well within one lease of the handlers' end.
    b.sleep(100 + LEASE / 2).await;
    let hung = b
        .store
        .hung_job
        .lock()
        .unwrap()
        .expect("a release was hung");
    let other = *jobs.iter().find(|&&j| j != hung).unwrap();
    let sent = recorded(&b.store.releases_sent);
    assert!(
        sent.contains(&other),
        "{other}'s release was never sent: {sent:?}"
    );
    let row = b.row(other).await;
    assert_eq!(
        row.state,
        JobState::Succeeded,
        "{other} committed its result"
    );
    stop.shutdown();
    w.await.unwrap();
}

/// Runs a worker with `cfg` whose handler follows `script` until `job`
/// reaches `state` (at most `10 * LEASE`), then shuts it down; the row
/// then, and the worker's stats.
async fn run_until(
    b: &Bundle,
    cfg: WorkerConfig,
    script: Script,
    job: JobId,
    state: JobState,
) -> (JobRecord, WorkerStats) {
    let handler = Scripted::new(script, &b.rt);
    let (stop, sd) = shutdown_channel();
    let w = b.spawn_worker(handler, cfg, sd);
    let row = b.wait_state(job, state, 10 * LEASE).await;
    stop.shutdown();
    (row, w.await.unwrap())
}

/// Runs one job to success with `cfg(1)` on a store that `fail` set up to
/// fail; the worker's stats.
async fn one_job_when(fail: impl FnOnce(&Flaky)) -> WorkerStats {
    let (b, job) = bundle_with_one_job().await;
    fail(&b.store);
    let (_, stats) = run_until(&b, cfg(1), Script::Work(10), job, JobState::Succeeded).await;
    stats
}

/// `cfg(1)` with time for a release slower than a renew interval.
fn patient() -> WorkerConfig {
    config(1, 600)
}

/// A `Worker` hands its releases to its loop, which sends them in its
/// batches; none goes to the store alone while the loop runs.
#[tokio::test(start_paused = true)]
async fn releases_travel_in_the_workers_batches() {
    let b = bundle();
    let mut jobs = Vec::new();
    for _ in 0..5 {
        jobs.push(b.one_job().await);
    }
    let handler = Scripted::new(Script::Work(10), &b.rt);
    let (stop, sd) = shutdown_channel();
    let w = b.spawn_worker(handler, cfg(2), sd);
    for &job in &jobs {
        b.wait_state(job, JobState::Succeeded, 10 * LEASE).await;
    }
    let sent = b.store.releases_sent.lock().unwrap().len();
    let batched = b.store.releases_in_batches.load(Ordering::SeqCst) as usize;
    stop.shutdown();
    assert_eq!(w.await.unwrap().committed, 5);
    assert_eq!(sent, 5, "one release per job");
    assert_eq!(batched, sent, "every release went in a batch");
}

/// A release slower than the renew interval: the heartbeat renews the
/// lease while it waits, so the lease never lapses before the result is in.
#[tokio::test(start_paused = true)]
async fn a_release_slower_than_the_renew_interval_is_covered_by_renews() {
    let (b, job) = bundle_with_one_job().await;
    // The handler ends before the first renew is due (RENEW), and its
    // release takes well past it.
    b.store.release_delay_ms.store(400, Ordering::SeqCst);
    let work = Script::Work(RENEW - 50);
    let (row, stats) = run_until(&b, patient(), work, job, JobState::Succeeded).await;
    assert_eq!(stats.committed, 1);
    assert_eq!(row.token, Token(1), "the lease was never lost");
    let renews = recorded(&b.store.renews_sent);
    // The release runs from RENEW - 50 to about RENEW + 350: the renews
    // due at RENEW and 2 * RENEW both go out during it.
    assert_eq!(
        renews,
        vec![job, job],
        "renews every interval while the release was on its way"
    );
}

/// A renew refused for good while the release is on its way ends the
/// heartbeat: it is not sent again (only unknown outcomes and conflicts
/// are).
#[tokio::test(start_paused = true)]
async fn a_renew_refused_while_releasing_is_not_sent_again() {
    let (b, job) = bundle_with_one_job().await;
    b.store.release_delay_ms.store(400, Ordering::SeqCst);
    b.store.renews_rejected.store(true, Ordering::SeqCst);
    let work = Script::Work(RENEW - 50);
    run_until(&b, patient(), work, job, JobState::Succeeded).await;
    let renews = recorded(&b.store.renews_sent);
    assert_eq!(renews, vec![job], "the refused renew was sent once");
}

/// A release refused for good (not an unknown outcome, not a conflict) is
/// not sent again: the lease is left to expire and be swept.
#[tokio::test(start_paused = true)]
async fn a_release_refused_for_good_is_not_sent_again() {
    let (b, job) = bundle_with_one_job().await;
    b.store.releases_rejected.store(1, Ordering::SeqCst);
    let handler = Scripted::new(Script::Work(10), &b.rt);
    let (stop, sd) = shutdown_channel();
    let w = b.spawn_worker(handler, patient(), sd);
    b.wait_state(job, JobState::Running, LEASE).await;
    // Long enough for every retry a retried release would get.
    b.sleep(5 * LEASE).await;
    stop.shutdown();
    let stats = w.await.unwrap();
    assert_eq!(stats.committed, 0);
    assert_eq!(stats.release_unknown, 1, "the release gave up: {stats:?}");
    assert_eq!(b.store.releases_rejected.load(Ordering::SeqCst), 0);
    let sent = recorded(&b.store.releases_sent);
    assert_eq!(sent, vec![job], "the refused release was sent once");
    let row = b.row(job).await;
    assert_eq!(row.state, JobState::Running, "left for the sweeper");
}

/// A release answered `Conflict` applied nothing: it is sent again, and
/// commits.
#[tokio::test(start_paused = true)]
async fn a_release_answered_conflict_is_sent_again_and_commits() {
    let (b, job) = bundle_with_one_job().await;
    b.store.release_conflicts.store(1, Ordering::SeqCst);
    let (row, stats) = run_until(&b, patient(), Script::Work(10), job, JobState::Succeeded).await;
    assert_eq!(stats.committed, 1);
    assert_eq!(row.token, Token(1));
    let sent = recorded(&b.store.releases_sent);
    assert_eq!(sent, vec![job, job], "sent again after the conflict");
}

/// A store that never announces work (the default `work_available`): an
/// idle worker still polls, and takes a job enqueued while it idles
/// within about one poll interval.
#[tokio::test(start_paused = true)]
async fn an_idle_worker_polls_a_store_that_never_wakes_it() {
    let b = bundle();
    let handler = Scripted::new(Script::Work(10), &b.rt);
    let (stop, sd) = shutdown_channel();
    let w = b.spawn_worker(handler, cfg(1), sd);
    b.sleep(500).await;
    let job = b.one_job().await;
    // The poll interval is 50 ms: well within 10 of them.
    b.wait_state(job, JobState::Succeeded, 500).await;
    stop.shutdown();
    assert_eq!(w.await.unwrap().committed, 1);
}

/// One sweep call reclaims every expired lease, a batch at a time, up to
/// its rounds: a full batch means there may be more.
#[tokio::test(start_paused = true)]
async fn one_sweep_reclaims_every_expired_lease_batch_by_batch() {
    let b = bundle();
    for _ in 0..5 {
        b.one_job().await;
    }
    assert_eq!(b.claim_as_gone(LEASE, 5).await, 5);
    b.jump.fetch_add(2 * LEASE as i64, Ordering::SeqCst);
    let sweeper = b.sweeper(50, 2);
    let reports = sweeper.sweep_once().await.unwrap();
    assert_eq!(reports.len(), 5, "batches of 2, 2 and 1");
}

/// While a release goes unanswered and every renew fails with an unknown
/// outcome, the heartbeat keeps trying until the fence, and not after:
/// past it the store may have let the lease go.
#[tokio::test(start_paused = true)]
async fn the_heartbeat_of_an_unanswered_release_stops_at_the_fence() {
    let (b, job) = bundle_with_one_job().await;
    b.store.hang_first_release.store(true, Ordering::SeqCst);
    b.store.renew_failures.store(1_000, Ordering::SeqCst);
    let handler = Scripted::new(Script::Work(RENEW - 50), &b.rt);
    let (stop, sd) = shutdown_channel();
    let w = b.spawn_worker(handler, patient(), sd);
    b.wait_state(job, JobState::Running, LEASE).await;
    b.sleep(4 * LEASE).await;
    let renews = recorded(&b.store.renew_times_ms);
    stop.shutdown();
    w.await.unwrap();
    assert!(renews.len() >= 2, "the heartbeat retried: {renews:?}");
    assert!(
        renews.iter().all(|&t| t < SAFE),
        "a renew after the fence ({SAFE} ms): {renews:?}"
    );
}

/// A release answered `Conflict` is retried after a pause that doubles
/// (200 ms, then 400 ms capped at the renew interval), not at once.
#[tokio::test(start_paused = true)]
async fn release_retries_back_off() {
    let (b, job) = bundle_with_one_job().await;
    b.store.release_conflicts.store(2, Ordering::SeqCst);
    run_until(&b, patient(), Script::Work(10), job, JobState::Succeeded).await;
    let t = recorded(&b.store.release_times_ms);
    assert_eq!(t.len(), 3, "{t:?}");
    assert!(t[1] - t[0] >= 200 && t[2] - t[1] >= RENEW, "{t:?}");
}

/// A running `Sweeper` reclaims a lease whose holder went silent, with a
/// crash report, and stops on shutdown.
#[tokio::test(start_paused = true)]
async fn a_running_sweeper_reclaims_an_expired_lease() {
    let (b, job) = bundle_with_one_job().await;
    assert_eq!(b.claim_as_gone(LEASE, 1).await, 1);
    let (stop, sd) = shutdown_channel();
    let sweeper = b.sweeper(50, 10).with_observer(b.observer());
    let s = tokio::spawn(sweeper.run(sd));
    b.jump.fetch_add(2 * LEASE as i64, Ordering::SeqCst);
    let row = b.wait_state(job, JobState::Pending, LEASE).await;
    stop.shutdown();
    s.await.unwrap();
    assert_eq!(row.token, Token(1));
    let reports = b
        .events()
        .iter()
        .filter(|e| matches!(e, RuntimeEvent::CrashReported { .. }))
        .count();
    assert_eq!(reports, 1);
}

/// A failed claim is counted, and the worker claims again at its next poll.
#[tokio::test(start_paused = true)]
async fn a_failed_claim_is_counted_and_claimed_again() {
    let stats = one_job_when(|s| s.claim_failures.store(2, Ordering::SeqCst)).await;
    assert_eq!(stats.claim_errors, 2);
    assert_eq!(stats.committed, 1);
}

/// An idle worker on a store that announces new work (the memory store
/// wakes the workers of its process) takes a job at once, long before its
/// poll interval.
#[tokio::test(start_paused = true)]
async fn an_idle_worker_wakes_for_new_work_before_its_poll() {
    let rt = TokioRuntime::new();
    let store = std::sync::Arc::new(leasehold_memory::MemoryStore::new(Policy::default()));
    let cfg = WorkerConfig::builder("w1", "q")
        .poll_interval(Millis(60_000))
        .build()
        .unwrap();
    let handler = Scripted::new(Script::Work(10), &rt);
    let (stop, sd) = shutdown_channel();
    let w = tokio::spawn(Worker::new(store.clone(), handler.clone(), rt.clone(), cfg).run(sd));
    rt.sleep(Millis(1_000)).await;
    let job = store
        .enqueue(NewJob::new("q", b"x".to_vec()))
        .await
        .unwrap();
    rt.sleep(Millis(100)).await;
    let started = handler.trace().started;
    assert_eq!(started.len(), 1, "not woken: {started:?}");
    assert!(started[0] < 1_100, "started at {} ms", started[0]);
    stop.shutdown();
    w.await.unwrap();
    let row = store.get(job).await.unwrap().unwrap();
    assert_eq!(row.state, JobState::Succeeded);
}

/// A handler that ignores a cancel is dropped after the grace, and the
/// cancel is acknowledged (the job ends `Cancelled`), not returned as on a
/// shutdown.
#[tokio::test(start_paused = true)]
async fn a_handler_ignoring_a_cancel_is_dropped_after_the_grace_and_the_job_cancelled() {
    let (b, job) = bundle_with_one_job().await;
    let handler = Scripted::new(Script::Stubborn(100 * LEASE), &b.rt);
    let (stop, sd) = shutdown_channel();
    let w = b.spawn_observed(handler.clone(), cfg(1), sd);
    b.wait_state(job, JobState::Running, LEASE).await;
    assert_eq!(b.store.cancel(job).await.unwrap(), CancelOutcome::Requested);
    let row = b.wait_state(job, JobState::Cancelled, 4 * LEASE).await;
    stop.shutdown();
    w.await.unwrap();
    assert_eq!(row.token, Token(1));
    assert_eq!(handler.trace().dropped.len(), 1, "dropped after the grace");
    assert_eq!(b.belief_ends(), [BeliefEnd::CancelTimeout]);
}

/// A batch that fails whole counts each claim it carried as a claim
/// error; the worker claims again and the job runs.
#[tokio::test(start_paused = true)]
async fn a_failed_batch_counts_its_claims_as_claim_errors() {
    let stats = one_job_when(|s| s.batch_failures.store(1, Ordering::SeqCst)).await;
    assert_eq!(stats.claim_errors, 1);
    assert_eq!(stats.committed, 1);
}
