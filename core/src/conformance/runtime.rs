//! Cases that run the real [`Worker`] runtime on the adapter.

use super::cases::{claim, enqueue, row};
use super::{suite_policy, Harness, LONG_LEASE};
use crate::clock::TokioRuntime;
use crate::ids::JobId;
use crate::job::{JobState, Lease, NewJob, Release};
use crate::time::Millis;
use crate::worker::{
    shutdown_channel, Handler, HandlerError, RuntimeEvent, StopSignal, Worker, WorkerConfig,
};
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
