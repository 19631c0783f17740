//! A process paused past its lease (SIGSTOP) resumes with its clock far
//! ahead and its timers not yet fired. The handler must not take one more
//! step on the lease it no longer holds: the worker checks its fence before
//! every poll of the handler, not only when its own nap ends (a chaos
//! finding: one side effect at the instant of resume, overlapping the next
//! holder's).

use leasehold_core::worker::{BeliefEnd, RuntimeEvent, WorkerConfig};
use leasehold_core::*;
use leasehold_memory::MemoryStore;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

const LEASE: u64 = 2_000;
const RENEW: u64 = 600;

/// Tokio's runtime with a clock that a test can move forward at once,
/// while every sleep already armed keeps its old deadline: what a process
/// sees when it resumes after a pause.
#[derive(Clone)]
struct Resumable {
    inner: TokioRuntime,
    jumped: Arc<AtomicU64>,
}

impl Runtime for Resumable {
    fn now(&self) -> Millis {
        self.inner
            .now()
            .saturating_add(Millis(self.jumped.load(Ordering::SeqCst)))
    }
    fn sleep(&self, d: Millis) -> BoxFuture<()> {
        self.inner.sleep(d)
    }
    fn spawn(&self, task: BoxFuture<()>) {
        self.inner.spawn(task)
    }
    fn wall(&self) -> StoreTime {
        self.inner.wall()
    }
}

/// Records the worker clock at each of its steps; a step every
/// millisecond, forever.
struct Stepper {
    rt: Resumable,
    steps: Arc<Mutex<Vec<Millis>>>,
}

impl Handler for Stepper {
    async fn handle(&self, _lease: Lease, _stop: StopSignal) -> Result<Vec<u8>, HandlerError> {
        for _ in 0..1_000_000 {
            self.steps.lock().unwrap().push(self.rt.now());
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        Ok(Vec::new())
    }
}

#[tokio::test]
async fn a_handler_takes_no_step_after_a_pause_past_its_lease() {
    let store = Arc::new(MemoryStore::new(Policy::default()));
    store
        .enqueue(NewJob::new("q", b"p".to_vec()))
        .await
        .unwrap();
    let rt = Resumable {
        inner: TokioRuntime::new(),
        jumped: Arc::new(AtomicU64::new(0)),
    };
    let steps = Arc::new(Mutex::new(Vec::new()));
    let cfg = WorkerConfig::builder("w1", "q")
        .concurrency(1)
        .lease(Millis(LEASE))
        .renew_interval(Millis(RENEW))
        .poll_interval(Millis(50))
        .build()
        .unwrap();
    let ends = Arc::new(Mutex::new(Vec::new()));
    let seen = ends.clone();
    let worker = Worker::new(
        store.clone(),
        Stepper {
            rt: rt.clone(),
            steps: steps.clone(),
        },
        rt.clone(),
        cfg,
    )
    .with_observer(move |e: &RuntimeEvent| {
        if let RuntimeEvent::BeliefEnded { why, .. } = e {
            seen.lock().unwrap().push(*why);
        }
    });
    let (stop, shutdown) = shutdown_channel();
    let w = tokio::spawn(worker.run(shutdown));

    // Let the handler run a few steps, then pause the process for five
    // leases: the clock jumps, no timer has fired yet.
    for _ in 0..1_000 {
        if steps.lock().unwrap().len() >= 5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    assert!(steps.lock().unwrap().len() >= 5, "the handler ran");
    let resumed_at = rt.now().saturating_add(Millis(5 * LEASE));
    rt.jumped.store(5 * LEASE, Ordering::SeqCst);
    // Real time for the handler's own 1 ms timer to fire many times; the
    // worker's nap (up to a renew interval) may not have fired yet.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    stop.shutdown();
    let _ = w.await;

    let after: Vec<Millis> = steps
        .lock()
        .unwrap()
        .iter()
        .copied()
        .filter(|&t| t >= resumed_at)
        .collect();
    assert!(
        after.is_empty(),
        "{} handler steps ran after the pause, on a lease past its fence deadline (first at {:?}, resumed at {resumed_at:?})",
        after.len(),
        after.first()
    );
    assert!(
        ends.lock().unwrap().contains(&BeliefEnd::Fenced),
        "the worker fenced itself: {:?}",
        ends.lock().unwrap()
    );
}
