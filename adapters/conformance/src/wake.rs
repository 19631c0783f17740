//! Cases for stores that wake idle workers ([`Store::work_available`]).
//!
//! Not part of [`conformance_tests!`](crate::conformance_tests): waking is
//! an optional speed-up, not a protocol rule, and a store that only polls
//! is correct. The memory, SQLite and PostgreSQL adapters run these cases
//! (`tests/tests/pickup_wake.rs`); run them against your store if it
//! implements `work_available`.
//!
//! Every case runs a real [`Worker`] whose poll interval ([`LONG_POLL`]) is
//! far longer than the bound it must meet ([`WAKE_BOUND`]), so a broken
//! wake fails the case instead of passing late. [`Counted`] tells the case
//! when the worker's claim came back short, so the case enqueues only once
//! the worker is idle (no sleeps).

use super::cases::{claim_one, enqueue, release};
use super::cases::{now, sweep};
use super::{suite_policy, Fixture, Harness, LONG_LEASE, SHORT_LEASE};
use leasehold_core::clock::TokioRuntime;
use leasehold_core::forward_store;
use leasehold_core::schedule::{FireRequest, Rule, Schedule};
use leasehold_core::worker::{
    shutdown_channel, Handler, HandlerError, RuntimeEvent, StopSignal, Worker, WorkerConfig,
};
use leasehold_core::JobId;
use leasehold_core::Release;
use leasehold_core::StoreError;
use leasehold_core::{ClaimRequest, Store};
use leasehold_core::{JobState, Lease, NewJob, Outcome, Policy};
use leasehold_core::{Millis, StoreTime};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, watch};

/// The idle workers' poll interval in these cases: a wake that does not
/// come leaves the job waiting this long.
pub const LONG_POLL: Millis = Millis(30_000);
/// Most real time from an enqueue's commit to the claim in these cases:
/// far below [`LONG_POLL`], far above any honest wake on a loaded machine.
pub const WAKE_BOUND: Duration = Duration::from_secs(5);
/// The poll interval of the fallback case.
pub const SHORT_POLL: Millis = Millis(200);
/// Jobs enqueued at once in the burst case.
pub const BURST: usize = 50;

const _: () = assert!((WAKE_BOUND.as_millis() as u64) * 4 < LONG_POLL.0);

/// A store that counts the claims it answered short (fewer leases than
/// asked: the worker goes idle next) and, unless told otherwise, forwards
/// [`Store::work_available`].
pub struct Counted<S> {
    inner: Arc<S>,
    forward_wake: bool,
    short_claims: watch::Sender<u64>,
    claims: watch::Sender<u64>,
    /// A job to enqueue after the snapshot of the next claim that grants
    /// nothing, before that claim is answered.
    inject: std::sync::Mutex<Option<(NewJob, oneshot::Sender<JobId>)>>,
}

impl<S: Store> Counted<S> {
    /// Wraps `inner`; `forward_wake: false` hides its wake-ups (the default
    /// never-resolving `work_available`), so only polling is left.
    pub fn new(inner: Arc<S>, forward_wake: bool) -> Self {
        Counted {
            inner,
            forward_wake,
            short_claims: watch::Sender::new(0),
            claims: watch::Sender::new(0),
            inject: std::sync::Mutex::new(None),
        }
    }

    /// Enqueues `job` during the next claim that grants nothing: after the
    /// claim's snapshot, before its (empty) answer reaches the worker. The
    /// receiver gets the job's id.
    pub fn enqueue_during_next_empty_claim(&self, job: NewJob) -> oneshot::Receiver<JobId> {
        let (tx, rx) = oneshot::channel();
        *self.inject.lock().expect("inject lock") = Some((job, tx));
        rx
    }

    /// Claims answered so far.
    pub fn claims(&self) -> u64 {
        *self.claims.borrow()
    }

    /// Waits until more than `seen` claims were answered short; bounded by
    /// `limit`. Answers the new count.
    pub async fn short_claims_above(&self, seen: u64, limit: Duration) -> u64 {
        let mut rx = self.short_claims.subscribe();
        let waited = tokio::time::timeout(limit, rx.wait_for(|n| *n > seen)).await;
        match waited {
            Ok(Ok(n)) => *n,
            _ => panic!("the worker made no short claim within {limit:?}"),
        }
    }
}

forward_store! {
    impl[S: Store] Store for Counted<S>, |self| self.inner;
    // `batch` and `batch_within` keep the defaults, so every claim of a
    // batch passes through the counting `claim`.
    except [claim, batch, batch_within, work_available] {
        async fn claim(&self, req: ClaimRequest) -> Result<Vec<Lease>, StoreError> {
            let max = req.max as usize;
            let got = self.inner.claim(req).await;
            if got.as_ref().is_ok_and(|l| l.is_empty()) {
                let armed = self.inject.lock().expect("inject lock").take();
                if let Some((job, tx)) = armed {
                    let id = self.inner.enqueue(job).await.expect("injected enqueue");
                    let _ = tx.send(id);
                }
            }
            self.claims.send_modify(|n| *n += 1);
            if got.as_ref().is_ok_and(|l| l.len() < max) {
                self.short_claims.send_modify(|n| *n += 1);
            }
            got
        }
        fn work_available(&self, queue: &str) -> impl Future<Output = ()> + Send {
            // Made now, not at the first poll: the subscription must precede
            // the worker's claim (see `Store::work_available`).
            let inner = self.forward_wake.then(|| self.inner.work_available(queue));
            async move {
                match inner {
                    Some(wake) => wake.await,
                    None => std::future::pending().await,
                }
            }
        }
    }
}

/// Answers the payload.
struct Echo;

impl Handler for Echo {
    async fn handle(&self, lease: Lease, _stop: StopSignal) -> Result<Vec<u8>, HandlerError> {
        Ok(lease.payload)
    }
}

/// A running worker on `store` (queue `wake`) whose observer reports each
/// claimed job.
pub struct Running {
    /// Claimed jobs, in claim order.
    pub claimed: mpsc::UnboundedReceiver<JobId>,
    stop: leasehold_core::worker::ShutdownHandle,
    task: tokio::task::JoinHandle<leasehold_core::worker::WorkerStats>,
}

impl Running {
    /// Starts a default worker on `store`, with poll interval `poll`.
    pub fn start<S: Store>(store: Arc<S>, id: &str, poll: Millis) -> Running {
        let (tx, claimed) = mpsc::unbounded_channel();
        let cfg = WorkerConfig::builder(id, QUEUE)
            .poll_interval(poll)
            .build()
            .expect("worker config");
        let worker = Worker::new(store, Echo, TokioRuntime::new(), cfg).with_observer(
            move |e: &RuntimeEvent| {
                if let RuntimeEvent::Claimed { job, .. } = e {
                    let _ = tx.send(*job);
                }
            },
        );
        let (stop, shutdown) = shutdown_channel();
        Running {
            claimed,
            stop,
            task: tokio::spawn(worker.run(shutdown)),
        }
    }

    /// Starts a worker (`id`, poll interval `poll`) on `inner` wrapped in
    /// [`Counted`] (`forward_wake` as there), and waits (bounded by
    /// [`WAKE_BOUND`]) until its start-up claims are done: the counted
    /// store, the worker, and the short claims seen so far.
    pub async fn start_counted<S: Store>(
        inner: Arc<S>,
        forward_wake: bool,
        id: &str,
        poll: Millis,
    ) -> (Arc<Counted<S>>, Running, u64) {
        let store = Arc::new(Counted::new(inner, forward_wake));
        let w = Running::start(store.clone(), id, poll);
        let seen = store.short_claims_above(0, WAKE_BOUND).await;
        (store, w, seen)
    }

    /// Waits (bounded by `limit`) for the next claimed job.
    pub async fn next_claim(&mut self, limit: Duration, what: &str) -> JobId {
        match tokio::time::timeout(limit, self.claimed.recv()).await {
            Ok(Some(job)) => job,
            Ok(None) => panic!("{what}: the worker stopped"),
            Err(_) => panic!("{what}: no claim within {limit:?} (poll interval is longer)"),
        }
    }

    /// Stops the worker and waits for it.
    pub async fn stop(self) {
        self.stop.shutdown();
        let _ = self.task.await;
    }
}

/// The queue the cases use.
pub const QUEUE: &str = "wake";

/// An idle worker (poll interval 30 s) claims a job enqueued after its last
/// short claim within [`WAKE_BOUND`], twice in a row.
pub async fn idle_worker_claims_a_new_job_long_before_its_poll_interval<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let name = h.name();
    let (store, mut w, mut seen) =
        Running::start_counted(f.store.clone(), true, "waker-1", LONG_POLL).await;
    for round in 0..2 {
        let t = Instant::now();
        let job = enqueue(&*f.store, NewJob::new(QUEUE, vec![round])).await;
        let got = w.next_claim(WAKE_BOUND, &name).await;
        assert_eq!(got, job, "{name}: round {round}");
        let took = t.elapsed();
        assert!(took < WAKE_BOUND, "{name}: round {round} took {took:?}");
        // The claim that follows this lease's end comes back short: the
        // worker is idle again before the next round enqueues.
        seen = store.short_claims_above(seen, WAKE_BOUND).await;
    }
    w.stop().await;
}

/// A job returned by another holder (`Outcome::Returned`, claimable at
/// once) wakes an idle worker within [`WAKE_BOUND`].
pub async fn returned_job_wakes_an_idle_worker<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let name = h.name();
    let s = &*f.store;
    let job = enqueue(s, NewJob::new(QUEUE, b"r".to_vec())).await;
    let lease = claim_one(s, "other", QUEUE, LONG_LEASE).await;
    assert_eq!(lease.job, job);
    let (_store, mut w, _) =
        Running::start_counted(f.store.clone(), true, "waker-2", LONG_POLL).await;
    let t = Instant::now();
    assert_eq!(
        release(s, job, lease.token, Outcome::Returned).await,
        Release::Committed
    );
    let got = w.next_claim(WAKE_BOUND, &name).await;
    assert_eq!(got, job, "{name}");
    assert!(t.elapsed() < WAKE_BOUND, "{name}: took {:?}", t.elapsed());
    w.stop().await;
}

/// A job committed while the worker's claim is in flight (after the
/// claim's snapshot, before its empty answer) still wakes the worker within
/// [`WAKE_BOUND`]: the worker must subscribe before it claims, not when
/// the answer arrives.
pub async fn a_job_committed_while_a_claim_is_in_flight_wakes_the_worker<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let name = h.name();
    let (store, mut w, _) =
        Running::start_counted(f.store.clone(), true, "waker-4", LONG_POLL).await;
    // The first job's release carries a claim that finds the queue empty;
    // the second job commits during that claim.
    let second = store.enqueue_during_next_empty_claim(NewJob::new(QUEUE, b"b".to_vec()));
    let first = enqueue(&*f.store, NewJob::new(QUEUE, b"a".to_vec())).await;
    let t = Instant::now();
    // Either order: a wake-up meant for another test's queue of the same
    // name (a shared PostgreSQL database) may bring an empty claim first.
    let mut got = std::collections::BTreeSet::new();
    got.insert(w.next_claim(WAKE_BOUND, &name).await);
    got.insert(w.next_claim(WAKE_BOUND, &name).await);
    let second = tokio::time::timeout(WAKE_BOUND, second)
        .await
        .unwrap_or_else(|_| panic!("{name}: no empty claim came"))
        .expect("injected job id");
    assert_eq!(got, [first, second].into(), "{name}");
    assert!(t.elapsed() < WAKE_BOUND, "{name}: took {:?}", t.elapsed());
    w.stop().await;
}

/// [`BURST`] jobs enqueued at once while the worker is idle all run, and
/// the wake-ups coalesce: the worker claims about once per free slot
/// refill, not once per enqueue.
pub async fn a_burst_of_enqueues_is_claimed_without_a_claim_storm<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let name = h.name();
    let (store, mut w, _) =
        Running::start_counted(f.store.clone(), true, "waker-3", LONG_POLL).await;
    let before = store.claims();
    for i in 0..BURST {
        enqueue(&*f.store, NewJob::new(QUEUE, i.to_string().into_bytes())).await;
    }
    let mut got = std::collections::BTreeSet::new();
    while got.len() < BURST {
        got.insert(w.next_claim(WAKE_BOUND * 2, &name).await);
    }
    let claims = store.claims() - before;
    // Each claim that grants nothing follows a wake or a lease's end; one
    // claim per enqueue and one per lease end is the storm bound.
    assert!(
        claims <= 2 * BURST as u64,
        "{name}: {claims} claims for {BURST} jobs"
    );
    w.stop().await;
}

/// With the store's wake-ups hidden, an idle worker still finds a new job
/// by polling (interval [`SHORT_POLL`]).
pub async fn without_wake_ups_the_poll_still_finds_the_job<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let name = h.name();
    let (_store, mut w, _) =
        Running::start_counted(f.store.clone(), false, "poller-1", SHORT_POLL).await;
    let job = enqueue(&*f.store, NewJob::new(QUEUE, b"p".to_vec())).await;
    assert_eq!(w.next_claim(WAKE_BOUND, &name).await, job, "{name}");
    w.stop().await;
}

/// With one lease of `f`'s store expiring (lease [`SHORT_LEASE`]): starts an
/// idle worker, lets the lease expire, sweeps it (the job goes `to`), and
/// checks that the worker claims `expected` within [`WAKE_BOUND`] of the
/// sweep, though its poll interval is [`LONG_POLL`].
async fn sweep_wakes_the_worker_for<S: Store>(
    f: &Fixture<S>,
    name: &str,
    worker: &str,
    to: JobState,
    expected: JobId,
) {
    let (_store, mut w, _) = Running::start_counted(f.store.clone(), true, worker, LONG_POLL).await;
    f.time.advance(SHORT_LEASE).await;
    let t = Instant::now();
    let reports = sweep(&*f.store, 10).await;
    assert_eq!(reports.len(), 1, "{name}: the expired lease is reclaimed");
    assert_eq!(reports[0].to, to, "{name}: where the reclaimed job goes");
    assert_eq!(w.next_claim(WAKE_BOUND, name).await, expected, "{name}");
    assert!(t.elapsed() < WAKE_BOUND, "{name}: took {:?}", t.elapsed());
    w.stop().await;
}

/// The suite policy with [`QUEUE`] limited to one running job.
fn one_slot_policy() -> Policy {
    Policy::builder()
        .backoff(suite_policy().backoff)
        .parallelism(QUEUE, 1)
        .build()
        .expect("policy")
}

/// A sweep that frees a slot of a queue with a parallelism limit wakes an
/// idle worker within [`WAKE_BOUND`], even when the reclaimed job does not
/// come back (its attempts are spent): the job the limit held back is now
/// claimable.
pub async fn a_sweep_that_frees_a_limited_slot_wakes_an_idle_worker<H: Harness>(h: &H) {
    let f = h.fresh(one_slot_policy()).await;
    let s = &*f.store;
    let last_try = enqueue(s, NewJob::new(QUEUE, b"a".to_vec()).max_attempts(1)).await;
    let lease = claim_one(s, "gone", QUEUE, SHORT_LEASE).await;
    assert_eq!(lease.job, last_try);
    let held_back = enqueue(s, NewJob::new(QUEUE, b"b".to_vec())).await;
    sweep_wakes_the_worker_for(&f, &h.name(), "waker-6", JobState::Dead, held_back).await;
}

/// A sweep that returns a job to `pending` (attempts left) wakes an idle
/// worker within [`WAKE_BOUND`]: the reclaimed job is claimable at once.
pub async fn a_sweep_that_returns_a_job_wakes_an_idle_worker<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let s = &*f.store;
    let job = enqueue(s, NewJob::new(QUEUE, b"s".to_vec())).await;
    let lease = claim_one(s, "gone", QUEUE, SHORT_LEASE).await;
    assert_eq!(lease.job, job);
    sweep_wakes_the_worker_for(&f, &h.name(), "waker-7", JobState::Pending, job).await;
}

/// A job made by a schedule's fire wakes an idle worker of its queue
/// within [`WAKE_BOUND`], as an enqueue does: a scheduler's jobs are not
/// left for the poll.
pub async fn a_fired_job_wakes_an_idle_worker<H: Harness>(h: &H) {
    const EVERY: Millis = Millis(1000);
    let f = h.fresh(suite_policy()).await;
    let s = &*f.store;
    let name = h.name();
    let schedule = Schedule::new("wake-tick", QUEUE, b"f".to_vec(), Rule::every(EVERY));
    s.put_schedule(schedule).await.expect("put_schedule");
    f.time.advance(Millis(2 * EVERY.0)).await;
    let (_store, mut w, _) =
        Running::start_counted(f.store.clone(), true, "waker-8", LONG_POLL).await;
    let t = now(s).await;
    let plan_time = StoreTime(t.0 - t.0.rem_euclid(EVERY.0 as i64));
    let started = Instant::now();
    let job = s
        .fire(FireRequest {
            name: "wake-tick".into(),
            plan_time,
        })
        .await
        .expect("fire");
    assert_eq!(w.next_claim(WAKE_BOUND, &name).await, job, "{name}");
    let took = started.elapsed();
    assert!(took < WAKE_BOUND, "{name}: took {took:?}");
    w.stop().await;
}

/// A release that ends a job (here `Succeeded`) on a queue with a
/// parallelism limit wakes an idle worker within [`WAKE_BOUND`]: the slot
/// it frees lets the job the limit held back be claimed.
pub async fn a_release_that_frees_a_limited_slot_wakes_an_idle_worker<H: Harness>(h: &H) {
    let f = h.fresh(one_slot_policy()).await;
    let s = &*f.store;
    let name = h.name();
    let first = enqueue(s, NewJob::new(QUEUE, b"a".to_vec())).await;
    let lease = claim_one(s, "other", QUEUE, LONG_LEASE).await;
    assert_eq!(lease.job, first);
    let held_back = enqueue(s, NewJob::new(QUEUE, b"b".to_vec())).await;
    let (_store, mut w, _) =
        Running::start_counted(f.store.clone(), true, "waker-9", LONG_POLL).await;
    let t = Instant::now();
    let done = Outcome::Succeeded(b"done".to_vec());
    assert_eq!(
        release(s, first, lease.token, done).await,
        Release::Committed
    );
    assert_eq!(w.next_claim(WAKE_BOUND, &name).await, held_back, "{name}");
    assert!(t.elapsed() < WAKE_BOUND, "{name}: took {:?}", t.elapsed());
    w.stop().await;
}
