//! The worker runtime's metrics (`leasehold_core::worker::metrics`): a real
//! `Worker` and `Sweeper` on the memory store, recorded through the
//! `metrics` facade by a thread-local recorder, and every documented counter
//! checked against what the test made happen.

use leasehold_core::worker::metrics as names;
use leasehold_core::*;
use leasehold_memory::MemoryStore;
use metrics::{Counter, CounterFn, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata};
use metrics::{Recorder, SharedString, Unit};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod runtime_support;

use runtime_support::Bundle;

/// Counter totals and histogram samples by `name{label=value,...}`.
#[derive(Clone, Default)]
struct Tally(Arc<Mutex<BTreeMap<String, f64>>>);

struct Cell {
    tally: Tally,
    key: String,
}

impl CounterFn for Cell {
    fn increment(&self, value: u64) {
        *self
            .tally
            .0
            .lock()
            .unwrap()
            .entry(self.key.clone())
            .or_default() += value as f64;
    }
    fn absolute(&self, value: u64) {
        self.tally
            .0
            .lock()
            .unwrap()
            .insert(self.key.clone(), value as f64);
    }
}

impl HistogramFn for Cell {
    fn record(&self, value: f64) {
        let mut t = self.tally.0.lock().unwrap();
        *t.entry(format!("{}:count", self.key)).or_default() += 1.0;
        let max = t.entry(format!("{}:max", self.key)).or_default();
        *max = max.max(value);
    }
}

fn render(key: &Key) -> String {
    let mut labels: Vec<String> = key
        .labels()
        .map(|l| format!("{}={}", l.key(), l.value()))
        .collect();
    labels.sort();
    if labels.is_empty() {
        key.name().to_string()
    } else {
        format!("{}{{{}}}", key.name(), labels.join(","))
    }
}

impl Recorder for Tally {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(Cell {
            tally: self.clone(),
            key: render(key),
        }))
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(Arc::new(Cell {
            tally: self.clone(),
            key: render(key),
        }))
    }
}

impl Tally {
    fn get(&self, key: &str) -> f64 {
        self.0.lock().unwrap().get(key).copied().unwrap_or(0.0)
    }
}

/// Succeeds after `work`, or waits for its stop signal when the payload is `hold`.
struct Sleepy {
    work: Duration,
}

impl Handler for Sleepy {
    async fn handle(&self, lease: Lease, mut stop: StopSignal) -> Result<Vec<u8>, HandlerError> {
        if lease.payload == b"hold" {
            stop.stopped().await;
            return Err(HandlerError::retryable("stopped"));
        }
        tokio::time::sleep(self.work).await;
        Ok(b"done".to_vec())
    }
}

async fn wait_for(store: &MemoryStore, job: JobId, state: JobState) {
    for _ in 0..10_000 {
        if store
            .get(job)
            .await
            .unwrap()
            .is_some_and(|j| j.state == state)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("job {job} never reached {state:?}");
}

/// A worker `id` on queue `q`, polling every 10 ms, whose jobs take 25 s.
fn sleepy_worker<S: Store>(
    store: Arc<S>,
    rt: TokioRuntime,
    id: &str,
) -> Worker<S, Sleepy, TokioRuntime> {
    let config = WorkerConfig::builder(id, "q")
        .poll_interval(Millis(10))
        .build()
        .unwrap();
    let work = Duration::from_secs(25);
    Worker::new(store, Sleepy { work }, rt, config)
}

/// A memory store on a manual clock at 1,000 s, and the clock.
fn manual_store() -> (ManualStoreClock, Arc<MemoryStore>) {
    let clock = ManualStoreClock::new(StoreTime(1_000_000));
    let store = Arc::new(MemoryStore::with_clock(Policy::default(), clock.clone()));
    (clock, store)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn worker_and_sweeper_count_what_happened() {
    let tally = Tally::default();
    let _guard = metrics::set_default_local_recorder(&tally);
    let (clock, store) = manual_store();
    let (stop, shutdown) = shutdown_channel();
    let worker = sleepy_worker(store.clone(), TokioRuntime::new(), "metrics-worker");
    let running = tokio::spawn(worker.run(shutdown));

    // One job runs 25 s: two renews on the way (every 10 s), then a commit.
    let done = store.enqueue(NewJob::new("q", "work")).await.unwrap();
    wait_for(&store, done, JobState::Succeeded).await;
    assert_eq!(tally.get(names::CLAIMED), 1.0);
    assert_eq!(tally.get(names::RENEWED), 2.0);
    assert_eq!(tally.get(&format!("{}:count", names::RENEW_RTT)), 2.0);
    assert_eq!(
        tally.get(&format!(
            "{}{{answer=committed,outcome=succeeded}}",
            names::RELEASED
        )),
        1.0
    );

    // A held job whose lease the store lets expire: the sweeper reclaims it
    // (a crash report) and the holder's next renew answers Lost.
    let held = store.enqueue(NewJob::new("q", "hold")).await.unwrap();
    wait_for(&store, held, JobState::Running).await;
    clock.advance(Millis(31_000));
    let sweeper = Sweeper::new(
        store.clone(),
        TokioRuntime::new(),
        SweeperConfig::new(Millis(1_000), 10).unwrap(),
    );
    let reports = sweeper.sweep_once().await.unwrap();
    assert_eq!(reports.len(), 1, "the expired lease is reclaimed");
    assert_eq!(tally.get(names::CRASH_REPORTS), 1.0);
    assert!(tally.get(names::SWEEPS) >= 1.0);
    // The job is pending again and the worker claims it anew; meanwhile the
    // old holder's renew is answered Lost.
    for _ in 0..1_000 {
        if tally.get(&format!("{}{{op=renew}}", names::LOST)) >= 1.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(tally.get(&format!("{}{{op=renew}}", names::LOST)), 1.0);
    assert_eq!(tally.get(names::SELF_FENCED), 0.0);

    stop.shutdown();
    running.await.unwrap();
    // Shutdown returns the reclaimed job's new lease.
    assert_eq!(tally.get(names::CLAIMED), 3.0);
    assert_eq!(
        tally.get(&format!(
            "{}{{answer=committed,outcome=returned}}",
            names::RELEASED
        )),
        1.0
    );
}

#[test]
fn every_documented_name_is_prefixed_and_distinct() {
    let mut seen = std::collections::BTreeSet::new();
    for name in names::ALL {
        assert!(name.starts_with("leasehold_"), "{name}");
        assert!(seen.insert(name), "{name} twice");
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn scheduler_counts_its_fires() {
    let tally = Tally::default();
    let _guard = metrics::set_default_local_recorder(&tally);
    let (clock, store) = manual_store();
    let catch_up = CatchUp::Each { max: 10 };
    store
        .put_schedule(every_10s().catch_up(catch_up))
        .await
        .unwrap();
    let cfg = SchedulerConfig::builder("metrics-scheduler")
        .build()
        .unwrap();
    let mut scheduler = Scheduler::new(store.clone(), TokioRuntime::new(), cfg);

    let first = scheduler.tick_once().await.unwrap();
    clock.advance(Millis(25_000));
    let second = scheduler.tick_once().await.unwrap();
    let fired = first.fired.len() + second.fired.len();
    assert_eq!(
        second.fired.len(),
        2,
        "two plan times fell due in 25 s: {second:?}"
    );
    assert_eq!(tally.get(names::SCHEDULE_FIRED), fired as f64);
    assert_eq!(tally.get(names::SCHEDULE_FIRE_UNKNOWN), 0.0);
    assert_eq!(tally.get(names::SCHEDULE_FIRE_REFUSED), 0.0);

    // A second scheduler fires the same plan times: the store answers the
    // jobs the first made (a definite answer, counted), and makes none.
    let cfg = SchedulerConfig::builder("metrics-scheduler-2")
        .build()
        .unwrap();
    let mut other = Scheduler::new(store.clone(), TokioRuntime::new(), cfg);
    let again = other.tick_once().await.unwrap();
    let jobs: Vec<JobId> = second.fired.iter().map(|f| f.2).collect();
    assert_eq!(again.fired.len(), 2, "{again:?}");
    assert!(again.fired.iter().all(|f| jobs.contains(&f.2)), "{again:?}");
    assert_eq!(
        tally.get(names::SCHEDULE_FIRED),
        (fired + again.fired.len()) as f64
    );
}

/// The schedule `report`: a job on `q` every 10 s.
fn every_10s() -> Schedule {
    Schedule::new("report", "q", "payload", Rule::every(Millis(10_000)))
}

/// A bundle holding `schedule`, 15 s after its start (a fire is due), and
/// a scheduler named `name` on it.
async fn fire_due(
    name: &str,
    schedule: Schedule,
) -> (Bundle, Scheduler<runtime_support::Flaky, TokioRuntime>) {
    let b = runtime_support::bundle();
    b.store.put_schedule(schedule).await.unwrap();
    let cfg = SchedulerConfig::builder(name).build().unwrap();
    let scheduler = Scheduler::new(b.store.clone(), b.rt.clone(), cfg);
    b.jump.fetch_add(15_000, Ordering::SeqCst);
    (b, scheduler)
}

/// A fire whose answer is lost is counted unknown, not fired; the next tick
/// fires that plan time again, and the store answers the job the lost fire
/// made (no second job).
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_fire_whose_answer_is_lost_counts_unknown_and_is_retried_next_tick() {
    let tally = Tally::default();
    let _guard = metrics::set_default_local_recorder(&tally);
    let catch_up = CatchUp::Each { max: 10 };
    let (b, mut scheduler) = fire_due("lossy", every_10s().catch_up(catch_up)).await;
    b.store.fire_answers_lost.store(1, Ordering::SeqCst);

    let lossy = scheduler.tick_once().await.unwrap();
    assert_eq!(lossy.unknown, 1, "{lossy:?}");
    assert!(lossy.fired.is_empty(), "{lossy:?}");
    assert_eq!(tally.get(names::SCHEDULE_FIRE_UNKNOWN), 1.0);
    assert_eq!(tally.get(names::SCHEDULE_FIRED), 0.0);
    let made = list_all(&b.store.inner).await.unwrap();
    assert_eq!(made.len(), 1, "the lost fire was applied");

    let retry = scheduler.tick_once().await.unwrap();
    assert_eq!(retry.unknown, 0, "{retry:?}");
    assert_eq!(retry.fired.len(), 1, "{retry:?}");
    assert_eq!(
        retry.fired[0].2, made[0].id,
        "answered with the lost fire's job"
    );
    assert_eq!(list_all(&b.store.inner).await.unwrap().len(), 1);
    assert_eq!(tally.get(names::SCHEDULE_FIRE_UNKNOWN), 1.0);
    assert_eq!(tally.get(names::SCHEDULE_FIRED), 1.0);
}

/// The renew round trip is recorded in seconds: a store that takes 250 ms
/// to answer each renew gives 0.25.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_renew_round_trip_is_recorded_in_seconds() {
    let tally = Tally::default();
    let _guard = metrics::set_default_local_recorder(&tally);
    let b = runtime_support::bundle();
    b.store.renew_delay_ms.store(250, Ordering::SeqCst);
    let (stop, shutdown) = shutdown_channel();
    let worker = sleepy_worker(b.store.clone(), b.rt.clone(), "rtt-worker");
    let running = tokio::spawn(worker.run(shutdown));
    let job = b.store.enqueue(NewJob::new("q", "work")).await.unwrap();
    b.wait_state(job, JobState::Succeeded, 60_000).await;
    stop.shutdown();
    running.await.unwrap();
    assert_eq!(tally.get(&format!("{}:count", names::RENEW_RTT)), 2.0);
    assert_eq!(tally.get(&format!("{}:max", names::RENEW_RTT)), 0.25);
}

/// A fire the store refuses (the schedule was removed or replaced since the
/// listing) is counted refused, not fired; the next tick fires it.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_refused_fire_is_counted_and_fired_next_tick() {
    let tally = Tally::default();
    let _guard = metrics::set_default_local_recorder(&tally);
    let (b, mut scheduler) = fire_due("refused", every_10s()).await;
    b.store.fires_refused.store(1, Ordering::SeqCst);

    let refused = scheduler.tick_once().await.unwrap();
    assert_eq!(refused.refused, 1, "{refused:?}");
    assert!(refused.fired.is_empty(), "{refused:?}");
    assert_eq!(tally.get(names::SCHEDULE_FIRE_REFUSED), 1.0);
    let next = scheduler.tick_once().await.unwrap();
    assert_eq!(next.fired.len(), 1, "{next:?}");
    assert_eq!(next.refused, 0);
}
