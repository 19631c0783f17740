//! Cases that run the real [`Worker`] runtime on the adapter.

use super::cases::{claim, enqueue, row};
use super::{suite_policy, Harness, LONG_LEASE};
use leasehold_core::clock::TokioRuntime;
use leasehold_core::worker::{
    shutdown_channel, Handler, HandlerError, RuntimeEvent, StopSignal, Worker, WorkerConfig,
};
use leasehold_core::JobId;
use leasehold_core::Millis;
use leasehold_core::{JobState, Lease, NewJob, Release};
use std::time::Duration;
use tokio::sync::mpsc;

/// Most real time the runtime cases wait for the worker.
const WORKER_DEADLINE: Duration = Duration::from_secs(30);

/// Decodes a decimal number and answers its double; anything else is a
/// poison payload.
struct Doubler;

impl Handler for Doubler {
    async fn handle(&self, lease: Lease, _stop: StopSignal) -> Result<Vec<u8>, HandlerError> {
        let text = std::str::from_utf8(&lease.payload).map_err(HandlerError::poison)?;
        let n: u64 = text.trim().parse().map_err(HandlerError::poison)?;
        Ok((n * 2).to_string().into_bytes())
    }
}

/// Poison input: a payload the handler cannot decode is released by the
/// worker that won it as a non-retryable failure, so the job is `dead`
/// after one attempt, never left claimed nor listed again; a good job next
/// to it succeeds.
pub async fn poison_payload_is_dead_after_one_attempt<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let name = h.name();
    let s = &*f.store;
    let poison = enqueue(
        s,
        NewJob::new("decode", vec![0xff, 0xfe, 0x00]).max_attempts(5),
    )
    .await;
    let good = enqueue(s, NewJob::new("decode", b"21".to_vec()).max_attempts(5)).await;

    let (tx, mut rx) = mpsc::unbounded_channel::<(JobId, Option<Release>)>();
    let cfg = WorkerConfig::builder("decoder-1", "decode")
        .concurrency(2)
        .poll_interval(Millis(20))
        .build()
        .expect("worker config");
    let worker = Worker::new(f.store.clone(), Doubler, TokioRuntime::new(), cfg).with_observer(
        move |e: &RuntimeEvent| {
            if let RuntimeEvent::Released { job, answer, .. } = e {
                let _ = tx.send((*job, *answer));
            }
        },
    );
    let (stop, shutdown) = shutdown_channel();
    let running = tokio::spawn(worker.run(shutdown));
    let mut released = Vec::new();
    while released.len() < 2 {
        match tokio::time::timeout(WORKER_DEADLINE, rx.recv()).await {
            Ok(Some(r)) => released.push(r),
            Ok(None) => panic!("{name}: worker stopped early"),
            Err(_) => panic!("{name}: worker released only {released:?} in {WORKER_DEADLINE:?}"),
        }
    }
    stop.shutdown();
    let stats = running.await.expect("worker task");
    released.sort_by_key(|r| r.0);
    assert_eq!(
        released,
        vec![
            (poison, Some(Release::Committed)),
            (good, Some(Release::Committed))
        ],
        "{name}"
    );
    assert_eq!(stats.claimed, 2, "{name}: each job claimed once: {stats:?}");

    let p = row(s, poison).await;
    assert_eq!(p.state, JobState::Dead, "{name}: {p:?}");
    assert_eq!(p.attempt, 1, "{name}: one attempt, not the budget of 5");
    let err = p.error.unwrap_or_default();
    assert!(err.contains("poison payload"), "{name}: error {err:?}");
    let g = row(s, good).await;
    assert_eq!(g.state, JobState::Succeeded, "{name}");
    assert_eq!(g.result.as_deref(), Some(&b"42"[..]), "{name}");
    f.time.advance(Millis(10)).await;
    assert!(
        claim(s, "w", "decode", LONG_LEASE, 5).await.is_empty(),
        "{name}: never re-listed"
    );
}

/// Counts the handlers running per queue and remembers the most seen.
#[derive(Default)]
struct Gauge {
    /// Per queue: (running now, most at once).
    per_queue: std::sync::Mutex<std::collections::BTreeMap<String, (u32, u32)>>,
    /// (running now, most at once) over all queues.
    total: std::sync::Mutex<(u32, u32)>,
    /// Queues in the order their jobs finished.
    finished: std::sync::Mutex<Vec<String>>,
}

/// Runs each job for a few milliseconds, counting what runs at once.
struct Counted(std::sync::Arc<Gauge>);

impl Handler for Counted {
    async fn handle(&self, lease: Lease, _stop: StopSignal) -> Result<Vec<u8>, HandlerError> {
        let g = &self.0;
        {
            let mut m = g.per_queue.lock().expect("gauge");
            let e = m.entry(lease.queue.clone()).or_default();
            e.0 += 1;
            e.1 = e.1.max(e.0);
            let mut t = g.total.lock().expect("gauge");
            t.0 += 1;
            t.1 = t.1.max(t.0);
        }
        tokio::time::sleep(Duration::from_millis(15)).await;
        {
            let mut m = g.per_queue.lock().expect("gauge");
            if let Some(e) = m.get_mut(&lease.queue) {
                e.0 -= 1;
            }
            g.total.lock().expect("gauge").0 -= 1;
            g.finished.lock().expect("gauge").push(lease.queue.clone());
        }
        Ok(Vec::new())
    }
}

/// Several queues, one worker: `busy` (no limit of its own) has a long
/// backlog, `light` (limit 2) a short one. The worker never runs more than
/// its concurrency in all nor more than 2 `light` jobs, and `light` is not
/// starved: all its jobs finish while `busy` still has most of its backlog
/// (a worker that gave every free slot to its first queue would run `light`
/// only after `busy` ran dry).
pub async fn one_worker_serves_several_queues_within_their_limits<H: Harness>(h: &H) {
    const BUSY: usize = 30;
    const LIGHT: usize = 6;
    let f = h.fresh(suite_policy()).await;
    let name = h.name();
    let s = &*f.store;
    for i in 0..BUSY {
        enqueue(s, NewJob::new("busy", i.to_string().into_bytes())).await;
    }
    for i in 0..LIGHT {
        enqueue(s, NewJob::new("light", i.to_string().into_bytes())).await;
    }
    let gauge = std::sync::Arc::new(Gauge::default());
    let (tx, mut rx) = mpsc::unbounded_channel::<Option<Release>>();
    let cfg = WorkerConfig::builder("multi-1", "busy")
        .concurrency(3)
        .queue("light", 2)
        .poll_interval(Millis(20))
        .build()
        .expect("worker config");
    let worker = Worker::new(
        f.store.clone(),
        Counted(gauge.clone()),
        TokioRuntime::new(),
        cfg,
    )
    .with_observer(move |e: &RuntimeEvent| {
        if let RuntimeEvent::Released { answer, .. } = e {
            let _ = tx.send(*answer);
        }
    });
    let (stop, shutdown) = shutdown_channel();
    let running = tokio::spawn(worker.run(shutdown));
    for n in 0..BUSY + LIGHT {
        match tokio::time::timeout(WORKER_DEADLINE, rx.recv()).await {
            Ok(Some(a)) => assert_eq!(a, Some(Release::Committed), "{name}"),
            Ok(None) => panic!("{name}: worker stopped early"),
            Err(_) => panic!("{name}: only {n} releases in {WORKER_DEADLINE:?}"),
        }
    }
    stop.shutdown();
    let stats = running.await.expect("worker task");
    assert_eq!(stats.committed, (BUSY + LIGHT) as u64, "{name}: {stats:?}");
    let per_queue = gauge.per_queue.lock().expect("gauge").clone();
    let most = |q: &str| per_queue.get(q).map_or(0, |e| e.1);
    let total = gauge.total.lock().expect("gauge").1;
    assert!(
        total <= 3,
        "{name}: {total} handlers at once, concurrency 3"
    );
    assert!(
        most("light") <= 2,
        "{name}: light ran {} at once, limit 2",
        most("light")
    );
    assert!(
        most("busy") >= 2,
        "{name}: busy used free slots: {per_queue:?}"
    );
    let finished = gauge.finished.lock().expect("gauge").clone();
    let last_light = finished
        .iter()
        .rposition(|q| q == "light")
        .expect("light jobs ran");
    let busy_before = finished[..last_light]
        .iter()
        .filter(|q| *q == "busy")
        .count();
    assert!(
        busy_before < 2 * BUSY / 3,
        "{name}: light starved: its last job finished after {busy_before} of {BUSY} busy jobs: {finished:?}"
    );
}
