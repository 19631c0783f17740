//! Test bundle for the core's worker runtime over the memory store: a
//! memory store whose clock follows tokio's paused clock (plus a settable
//! jump), a store wrapper that can stop answering renews or lose the
//! answers to fires, a scripted handler that records what happened, and
//! the steps the runtime tests share (enqueue a job, run a worker, read a
//! row) written once.

#![allow(dead_code)]

use leasehold_core::worker::{BeliefEnd, RuntimeEvent, WorkerConfig, WorkerStats};
use leasehold_core::*;
use leasehold_memory::MemoryStore;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::task::JoinHandle;

pub const EPOCH: i64 = 1_700_000_000_000;

/// Store plus the knobs a test turns.
pub struct Bundle {
    pub rt: TokioRuntime,
    pub store: Arc<Flaky>,
    pub jump: Arc<AtomicI64>,
    pub events: Arc<Mutex<Vec<RuntimeEvent>>>,
}

pub fn bundle() -> Bundle {
    let rt = TokioRuntime::new();
    let jump = Arc::new(AtomicI64::new(0));
    let (rt2, jump2) = (rt.clone(), jump.clone());
    let clock = move || StoreTime(EPOCH + rt2.now().0 as i64 + jump2.load(Ordering::SeqCst));
    let inner = MemoryStore::with_clock(Policy::default(), clock);
    Bundle {
        rt,
        store: Arc::new(Flaky {
            inner,
            renew_down: AtomicBool::new(false),
            renew_failures: AtomicU32::new(0),
            hang_first_release: AtomicBool::new(false),
            hung_job: Mutex::new(None),
            releases_sent: Mutex::new(Vec::new()),
            fire_answers_lost: AtomicU32::new(0),
            renew_delay_ms: AtomicU64::new(0),
            renews_rejected: AtomicBool::new(false),
            renews_sent: Mutex::new(Vec::new()),
            renew_times_ms: Mutex::new(Vec::new()),
            release_times_ms: Mutex::new(Vec::new()),
            born: tokio::time::Instant::now(),
            release_delay_ms: AtomicU64::new(0),
            releases_rejected: AtomicU32::new(0),
            release_conflicts: AtomicU32::new(0),
            claim_failures: AtomicU32::new(0),
            fires_refused: AtomicU32::new(0),
            batch_failures: AtomicU32::new(0),
            releases_in_batches: AtomicU32::new(0),
        }),
        jump,
        events: Arc::new(Mutex::new(Vec::new())),
    }
}

/// A bundle whose store holds one job on `q`, and that job.
pub async fn bundle_with_one_job() -> (Bundle, JobId) {
    let b = bundle();
    let job = b.one_job().await;
    (b, job)
}

/// A copy of what the store recorded in `list` so far.
pub fn recorded<T: Clone>(list: &Mutex<T>) -> T {
    list.lock().unwrap().clone()
}

impl Bundle {
    pub fn observer(&self) -> impl worker::Observer {
        let events = self.events.clone();
        move |e: &RuntimeEvent| events.lock().unwrap().push(e.clone())
    }

    pub fn events(&self) -> Vec<RuntimeEvent> {
        self.events.lock().unwrap().clone()
    }

    /// Sleeps in (paused, auto-advancing) tokio time.
    pub async fn sleep(&self, ms: u64) {
        self.rt.sleep(Millis(ms)).await;
    }

    /// Enqueues `spec`; its id.
    pub async fn enqueue(&self, spec: NewJob) -> JobId {
        self.store.enqueue(spec).await.unwrap()
    }

    /// Enqueues one job on `q`.
    pub async fn one_job(&self) -> JobId {
        self.enqueue(NewJob::new("q", b"x".to_vec())).await
    }

    /// The row of `job`, which must exist.
    pub async fn row(&self, job: JobId) -> JobRecord {
        self.store.get(job).await.unwrap().unwrap()
    }

    /// A worker on this store and runtime.
    pub fn worker(
        &self,
        handler: Scripted,
        cfg: WorkerConfig,
    ) -> Worker<Flaky, Scripted, TokioRuntime> {
        Worker::new(self.store.clone(), handler, self.rt.clone(), cfg)
    }

    /// Runs a worker (see [`Bundle::worker`]) whose runtime events go to
    /// [`Bundle::events`] until `shutdown`.
    pub fn spawn_observed(
        &self,
        handler: Scripted,
        cfg: WorkerConfig,
        shutdown: Shutdown,
    ) -> JoinHandle<WorkerStats> {
        let worker = self.worker(handler, cfg).with_observer(self.observer());
        tokio::spawn(worker.run(shutdown))
    }

    /// Runs a worker (see [`Bundle::worker`]) until `shutdown`.
    pub fn spawn_worker(
        &self,
        handler: Scripted,
        cfg: WorkerConfig,
        shutdown: Shutdown,
    ) -> JoinHandle<WorkerStats> {
        tokio::spawn(self.worker(handler, cfg).run(shutdown))
    }

    /// A sweeper on this store polling every `interval` ms, `batch`
    /// leases a sweep.
    pub fn sweeper(&self, interval: u64, batch: u32) -> Sweeper<Flaky, TokioRuntime> {
        let cfg = SweeperConfig::new(Millis(interval), batch).unwrap();
        Sweeper::new(self.store.clone(), self.rt.clone(), cfg)
    }

    /// Claims up to `max` jobs of `q` for `lease` ms as a worker that is
    /// gone at once (it never renews nor releases); how many it got.
    pub async fn claim_as_gone(&self, lease: u64, max: u32) -> usize {
        let claim = ClaimRequest {
            worker: WorkerId::new("gone"),
            queue: "q".into(),
            lease: Millis(lease),
            max,
        };
        self.store.claim(claim).await.unwrap().len()
    }

    /// Why each belief the observer saw ended, in order.
    pub fn belief_ends(&self) -> Vec<BeliefEnd> {
        self.events()
            .iter()
            .filter_map(|e| match e {
                RuntimeEvent::BeliefEnded { why, .. } => Some(*why),
                _ => None,
            })
            .collect()
    }

    /// Waits until `job` is in `state`, polling every 10 ms, at most `limit_ms`.
    pub async fn wait_state(&self, job: JobId, state: JobState, limit_ms: u64) -> JobRecord {
        for _ in 0..limit_ms / 10 {
            let r = self.row(job).await;
            if r.state == state {
                return r;
            }
            self.sleep(10).await;
        }
        panic!("{job} did not reach {state} within {limit_ms}ms");
    }
}

/// A memory store whose renews can be made to go unanswered, or to fail a
/// given number of times with an unknown outcome, and whose releases of
/// one job can be made to go unanswered, slow or refused. Its
/// [`Store::batch`] counts the releases it carries, then answers as the
/// default does (one call per request), as a user's store would.
pub struct Flaky {
    pub inner: MemoryStore,
    pub renew_down: AtomicBool,
    pub renew_failures: AtomicU32,
    /// The job of the next release never gets an answer to any release.
    pub hang_first_release: AtomicBool,
    pub hung_job: Mutex<Option<JobId>>,
    /// Every release that reached the store, in order.
    pub releases_sent: Mutex<Vec<JobId>>,
    /// The next this many fires are applied, but answered as unknown.
    pub fire_answers_lost: AtomicU32,
    /// Every renew takes this long (tokio time) before it is applied.
    pub renew_delay_ms: AtomicU64,
    /// Every renew is refused for good ([`StoreError::Corrupt`]).
    pub renews_rejected: AtomicBool,
    /// Every renew that reached the store, in order.
    pub renews_sent: Mutex<Vec<JobId>>,
    /// When each renew reached the store (tokio time since `born`).
    pub renew_times_ms: Mutex<Vec<u64>>,
    /// When each release reached the store (tokio time since `born`).
    pub release_times_ms: Mutex<Vec<u64>>,
    /// When the store was made (tokio time).
    pub born: tokio::time::Instant,
    /// Every release takes this long (tokio time) before it is applied.
    pub release_delay_ms: AtomicU64,
    /// The next this many releases are refused for good
    /// ([`StoreError::Corrupt`]), nothing applied.
    pub releases_rejected: AtomicU32,
    /// The next this many releases answer [`StoreError::Conflict`],
    /// nothing applied.
    pub release_conflicts: AtomicU32,
    /// The next this many claims fail with an unknown outcome, nothing
    /// applied.
    pub claim_failures: AtomicU32,
    /// The next this many fires are refused as if the schedule had been
    /// removed meanwhile, nothing applied.
    pub fires_refused: AtomicU32,
    /// The next this many batches fail whole with an unknown outcome,
    /// nothing applied.
    pub batch_failures: AtomicU32,
    /// Releases that came in a [`Store::batch`] (the rest were sent alone).
    pub releases_in_batches: AtomicU32,
}

impl Flaky {
    fn age_ms(&self) -> u64 {
        self.born.elapsed().as_millis() as u64
    }
}

/// Takes one from `n` if it is above zero; whether it did.
fn take_one(n: &AtomicU32) -> bool {
    n.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| v.checked_sub(1))
        .is_ok()
}

async fn delay(ms: &AtomicU64) {
    let ms = ms.load(Ordering::SeqCst);
    if ms > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
}

forward_store! {
    impl[] Store for Flaky, |self| self.inner;
    // `batch_within` and `work_available` keep the defaults: a batch runs
    // through the flaky `batch`, and workers poll.
    except [claim, renew, release, batch, batch_within, fire, work_available] {
        async fn claim(&self, req: ClaimRequest) -> Result<Vec<Lease>, StoreError> {
            if take_one(&self.claim_failures) {
                return Err(StoreError::Unavailable("claim lost by the test".into()));
            }
            self.inner.claim(req).await
        }
        async fn renew(&self, req: RenewRequest) -> Result<Renewal, StoreError> {
            self.renews_sent.lock().unwrap().push(req.job);
            self.renew_times_ms.lock().unwrap().push(self.age_ms());
            delay(&self.renew_delay_ms).await;
            if self.renews_rejected.load(Ordering::SeqCst) {
                return Err(StoreError::Corrupt("renew refused by the test".into()));
            }
            if self.renew_down.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            let left = self.renew_failures.load(Ordering::SeqCst);
            if left > 0 {
                self.renew_failures.store(left - 1, Ordering::SeqCst);
                return Err(StoreError::Unavailable("injected".into()));
            }
            self.inner.renew(req).await
        }
        async fn release(&self, req: ReleaseRequest) -> Result<Release, StoreError> {
            self.releases_sent.lock().unwrap().push(req.job);
            self.release_times_ms.lock().unwrap().push(self.age_ms());
            let hung = {
                let mut hung = self.hung_job.lock().unwrap();
                if self.hang_first_release.swap(false, Ordering::SeqCst) {
                    *hung = Some(req.job);
                }
                *hung == Some(req.job)
            };
            if hung {
                std::future::pending::<()>().await;
            }
            delay(&self.release_delay_ms).await;
            if take_one(&self.releases_rejected) {
                return Err(StoreError::Corrupt("release refused by the test".into()));
            }
            if take_one(&self.release_conflicts) {
                return Err(StoreError::Conflict(req.job));
            }
            self.inner.release(req).await
        }
        async fn batch(&self, req: BatchRequest) -> Result<BatchAnswer, StoreError> {
            if take_one(&self.batch_failures) {
                return Err(StoreError::Unavailable("batch lost by the test".into()));
            }
            let n = u32::try_from(req.releases.len()).unwrap();
            self.releases_in_batches.fetch_add(n, Ordering::SeqCst);
            batch_by_parts(self, req).await
        }
        async fn fire(&self, req: FireRequest) -> Result<JobId, StoreError> {
            if take_one(&self.fires_refused) {
                return Err(InputError::UnknownSchedule(req.name).into());
            }
            let made = self.inner.fire(req).await?;
            let lost = self.fire_answers_lost.load(Ordering::SeqCst);
            if lost > 0 {
                self.fire_answers_lost.store(lost - 1, Ordering::SeqCst);
                return Err(StoreError::Unavailable(format!(
                    "the answer {made} was lost"
                )));
            }
            Ok(made)
        }
    }
}

/// What a scripted handler does.
#[derive(Clone, Copy, Debug)]
pub enum Script {
    /// Works for this long, then succeeds with the payload as result.
    Work(u64),
    /// Works until stopped, then returns an error.
    UntilStopped,
    /// Ignores stop requests and works for this long.
    Stubborn(u64),
    /// Fails to decode its payload.
    Poison,
}

/// Records of one handler run, in runtime-local milliseconds.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub started: Vec<u64>,
    pub finished: Vec<u64>,
    pub dropped: Vec<u64>,
    pub stop_reasons: Vec<StopReason>,
}

#[derive(Clone)]
pub struct Scripted {
    pub script: Script,
    pub rt: TokioRuntime,
    pub trace: Arc<Mutex<Trace>>,
}

impl Scripted {
    pub fn new(script: Script, rt: &TokioRuntime) -> Self {
        Scripted {
            script,
            rt: rt.clone(),
            trace: Arc::new(Mutex::new(Trace::default())),
        }
    }
    pub fn trace(&self) -> Trace {
        self.trace.lock().unwrap().clone()
    }
}

struct DropGuard {
    rt: TokioRuntime,
    trace: Arc<Mutex<Trace>>,
    done: bool,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.done {
            self.trace.lock().unwrap().dropped.push(self.rt.now().0);
        }
    }
}

impl Handler for Scripted {
    async fn handle(&self, lease: Lease, mut stop: StopSignal) -> Result<Vec<u8>, HandlerError> {
        self.trace.lock().unwrap().started.push(self.rt.now().0);
        let mut guard = DropGuard {
            rt: self.rt.clone(),
            trace: self.trace.clone(),
            done: false,
        };
        let out = match self.script {
            Script::Work(ms) => {
                self.rt.sleep(Millis(ms)).await;
                Ok(lease.payload.clone())
            }
            Script::Stubborn(ms) => {
                self.rt.sleep(Millis(ms)).await;
                Ok(lease.payload.clone())
            }
            Script::UntilStopped => {
                let why = stop.stopped().await;
                self.trace.lock().unwrap().stop_reasons.push(why);
                Err(HandlerError::retryable(format!("stopped: {why:?}")))
            }
            Script::Poison => Err(HandlerError::poison("not valid JSON")),
        };
        guard.done = true;
        self.trace.lock().unwrap().finished.push(self.rt.now().0);
        out
    }
}
