//! The software of each madsim node: the store, the real
//! `leasehold_core::Worker` and `Sweeper` on a [`RemoteStore`], and the
//! client. Each function is one incarnation: madsim runs it again on
//! restart.

use crate::net::{serve_store, RemoteStore};
use crate::scenario::QUEUE;
use crate::wake::{announce_wake_ups, hear_wake_ups};
use crate::world::{Host, Shared};
use leasehold_core::join::join_all;
use leasehold_core::variants::Variant;
use leasehold_core::worker::wake::WorkSignal;
use leasehold_core::worker::RuntimeEvent;
use leasehold_core::{
    shutdown_channel, Handler, HandlerError, JobId, Lease, ListRequest, Millis, NewJob, Runtime,
    StopSignal, Store, StoreError, Sweeper, SweeperConfig, Token, Worker, WorkerId,
};
use leasehold_memory::{MemoryState, MemoryStore};
use leasehold_model::history::{record_of_event, Execution, HandlerSink, Record};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

/// The result bytes an attempt produces.
pub fn result_of(job: JobId, token: Token) -> Vec<u8> {
    format!("result:{}:{}", job.0, token.0).into_bytes()
}

/// One planned job of the client's schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedJob {
    /// Index; the idempotency key is `job-<index>` (the checker's I6 looks
    /// for every key).
    pub index: u32,
    /// When the client enqueues it (ms).
    pub enqueue_at: u64,
    /// When the client cancels it, if it does (ms).
    pub cancel_at: Option<u64>,
}

/// How an attempt behaves: a function of `(seed, job index, token)`, so it
/// does not depend on which worker runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// Runs `ms`, then succeeds.
    Succeed(u64),
    /// Runs `ms`, then fails.
    Fail(u64, bool),
    /// Hangs until stopped (inside the fault window).
    Hang,
}

/// One SplitMix64 step from state `x`.
fn splitmix(x: u64) -> u64 {
    leasehold_model::rng::mix64(x.wrapping_add(0x9E37_79B9_7F4A_7C15))
}

/// The behaviour of attempt `token` of job `index`.
pub fn attempt(shared: &Shared, index: u32, token: Token) -> Attempt {
    let s = &shared.scenario;
    let mut h = splitmix(shared.seed ^ splitmix(u64::from(index) << 32 ^ token.0));
    let mut next = || {
        h = splitmix(h);
        h
    };
    let unit = |x: u64| (x >> 11) as f64 / (1u64 << 53) as f64;
    let (lo, hi) = s.run_time;
    let run = lo + next() % (hi - lo + 1);
    if unit(next()) < s.hang_rate {
        Attempt::Hang
    } else if unit(next()) < s.fail_rate {
        Attempt::Fail(run, unit(next()) >= s.permanent_share)
    } else {
        Attempt::Succeed(run)
    }
}

/// The store node: serves the run's durable state. What committed survives
/// a kill; a restart opens a new store on the same state.
pub async fn store_node(shared: Arc<Shared>, state: Arc<Mutex<MemoryState>>) {
    let host = shared.start("store", |_| None);
    let policy = leasehold_model::protocol::policy_of(&shared.cfg, shared.seed)
        .expect("the scenario's policy is valid");
    // The store clock is the store node's wall clock: `SystemTime`, which
    // madsim simulates.
    let mut store = MemoryStore::with_state(policy, leasehold_core::SystemStoreClock, state);
    store.set_variant(shared.scenario.variant);
    let store = Arc::new(store);
    let wakes = announce_wake_ups(host.clone(), store.clone(), QUEUE.to_string());
    shared.rt.spawn(Box::pin(wakes));
    serve_store(host, store).await;
}

/// The worker identity of an incarnation: `worker-2` first, then
/// `worker-2#1`, … (always the plain name under `restart-reuses-identity`).
/// With several workers per node, worker `k` (from 1) of the node is
/// `worker-2.k`, `worker-2.k#1`, … (the checker reads the node before the
/// `.` or `#`).
fn identity(host: &str, slot: Option<u32>, incarnation: u32, variant: Option<Variant>) -> String {
    let base = match slot {
        Some(k) => format!("{host}.{k}"),
        None => host.to_string(),
    };
    if incarnation == 0 || variant == Some(Variant::RestartReusesIdentity) {
        base
    } else {
        format!("{base}#{incarnation}")
    }
}

/// Turns a runtime event into a history record (madsim's clock is the
/// true clock: local and true times are the same).
fn observe(host: &Host, e: &RuntimeEvent) {
    let until_true = |local: u64| (local < u64::MAX / 4).then_some(local);
    host.record(record_of_event(e, host.now(), &host.name, until_true));
}

/// A worker node: `workers_per_node` real `Worker`s on the run's
/// `TokioRuntime` (madsim's clock and executor under `--cfg madsim`),
/// sharing one store client (their batches merge, each merged batch one
/// message) and one wake-up listener, as one production process does. A
/// kill takes them all down at once.
pub async fn worker_node(shared: Arc<Shared>, index: u32) {
    let name = format!("worker-{index}");
    let variant = shared.scenario.variant;
    let per = shared.scenario.workers_per_node.max(1);
    let slot = |k: u32| (per > 1).then_some(k);
    let host = shared.start(&name, |n| Some(identity(&name, slot(1), n, variant)));
    let incarnation = shared.incarnation(&name);
    let wake = Arc::new(WorkSignal::new());
    let store = Arc::new(
        crate::net::connect_worker(host.clone(), wake.clone())
            .await
            .expect("an ephemeral port"),
    );
    shared.rt.spawn(Box::pin(hear_wake_ups(wake)));
    let (_keep, shutdown) = shutdown_channel();
    let mut workers: Vec<Pin<Box<dyn Future<Output = ()> + Send>>> = Vec::new();
    for k in 1..=per {
        let id = identity(&name, slot(k), incarnation, variant);
        let b = leasehold_model::protocol::worker_config(
            &shared.cfg,
            id.clone(),
            &[QUEUE.to_string()],
            variant,
        );
        let cfg = b
            .build()
            .expect("the scenario's worker configuration is valid");
        let handler = SimHandler {
            host: host.clone(),
            worker: WorkerId::new(id),
        };
        let obs = host.clone();
        let worker = Worker::new(store.clone(), handler, shared.rt.clone(), cfg)
            .with_observer(move |e: &RuntimeEvent| observe(&obs, e));
        let sd = shutdown.clone();
        workers.push(Box::pin(async move {
            worker.run(sd).await;
        }));
    }
    // The node's workers share one task, polled in slot order: a wake-up
    // they all wait for (tokio's `watch`, which spreads its waiters over
    // notifiers picked by tokio's own thread-local random numbers, outside
    // madsim's seed) then runs them in the same order on every run of a
    // seed. A kill drops the task, and every worker with it.
    join_all(workers).await;
}

/// A sweeper node: the real `Sweeper`.
pub async fn sweeper_node(shared: Arc<Shared>, index: u32) {
    let host = shared.start(&format!("sweeper-{index}"), |_| None);
    let store = Arc::new(
        crate::net::connect(host.clone())
            .await
            .expect("an ephemeral port"),
    );
    let cfg = SweeperConfig::new(shared.cfg.protocol.sweep_interval.0, SWEEP_BATCH)
        .and_then(|c| c.with_request_timeout(shared.cfg.protocol.request_timeout.0))
        .expect("the scenario's sweeper configuration is valid");
    let obs = host.clone();
    let sweeper = Sweeper::new(store, shared.rt.clone(), cfg)
        .with_observer(move |e: &RuntimeEvent| observe(&obs, e));
    let (_keep, shutdown) = shutdown_channel();
    sweeper.run(shutdown).await;
}

/// Most reclaims per sweep call (as in the simulator, `leasehold-sim`).
const SWEEP_BATCH: u32 = 100;
/// Pause between retries of a client operation whose outcome was unknown.
const RETRY_DELAY: Millis = Millis(500);
/// Interval between the client's reads (a reader for I4).
const READ_EVERY_MS: u64 = 2_000;
/// Rows per read.
const READ_PAGE: u32 = 10;

async fn retry<T, F, Fut>(host: &Host, mut op: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let limit = host.shared.cfg.protocol.request_timeout.0;
    let end = host.shared.scenario.duration;
    while host.now() < end {
        match leasehold_core::worker::with_timeout(host.rt(), limit, op()).await {
            Ok(v) => return Some(v),
            Err(StoreError::Unavailable(_)) => host.rt().sleep(RETRY_DELAY).await,
            Err(_) => return None,
        }
    }
    None
}

async fn reader(host: Host, store: Arc<RemoteStore>) {
    let limit = host.shared.cfg.protocol.request_timeout.0;
    let mut after = None;
    let mut next = READ_EVERY_MS;
    loop {
        host.sleep_until(next).await;
        let req = ListRequest {
            after,
            limit: READ_PAGE,
        };
        if let Ok(rows) =
            leasehold_core::worker::with_timeout(host.rt(), limit, store.list(req)).await
        {
            after = if rows.len() < READ_PAGE as usize {
                None
            } else {
                rows.last().map(|r| r.id)
            };
        }
        next += READ_EVERY_MS;
    }
}

/// The client node: enqueues (with idempotency keys, retrying unknown
/// outcomes) and cancels on the schedule, and reads the store meanwhile.
/// The client is never killed.
pub async fn client_node(shared: Arc<Shared>, plan: Arc<Vec<PlannedJob>>) {
    let host = shared.start("client", |_| None);
    let store = Arc::new(
        crate::net::connect(host.clone())
            .await
            .expect("an ephemeral port"),
    );
    shared
        .rt
        .spawn(Box::pin(reader(host.clone(), store.clone())));
    #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    enum Action {
        Enqueue(u32),
        Cancel(u32),
    }
    let mut actions: Vec<(u64, Action)> = Vec::new();
    for j in plan.iter() {
        actions.push((j.enqueue_at, Action::Enqueue(j.index)));
        if let Some(c) = j.cancel_at {
            actions.push((c, Action::Cancel(j.index)));
        }
    }
    actions.sort();
    let max_attempts = shared.cfg.protocol.max_attempts;
    let mut ids: BTreeMap<u32, JobId> = BTreeMap::new();
    for (at, action) in actions {
        host.sleep_until(at).await;
        match action {
            Action::Enqueue(i) => {
                let spec = NewJob::new(QUEUE, format!("job:{i}"))
                    .max_attempts(max_attempts)
                    .idempotency_key(format!("job-{i}"));
                if let Some(id) = retry(&host, || store.enqueue(spec.clone())).await {
                    ids.insert(i, id);
                }
            }
            Action::Cancel(i) => {
                if let Some(&id) = ids.get(&i) {
                    let _ = retry(&host, || store.cancel(id)).await;
                }
            }
        }
    }
    host.record(Record::ClientDone { t: host.now() });
    shared.set_client_done();
    std::future::pending::<()>().await;
}

/// Runs jobs as the workload says, recording the ground truth of each
/// execution.
#[derive(Clone)]
struct SimHandler {
    host: Host,
    worker: WorkerId,
}

/// A node's handler records (madsim's clock is the true clock).
impl HandlerSink for Host {
    fn now(&self) -> u64 {
        Host::now(self)
    }
    fn host(&self) -> String {
        self.name.clone()
    }
    fn record(&self, r: Record) {
        Host::record(self, r);
    }
}

impl Handler for SimHandler {
    fn handle(
        &self,
        lease: Lease,
        mut stop: StopSignal,
    ) -> impl Future<Output = Result<Vec<u8>, HandlerError>> + Send {
        let this = self.clone();
        async move {
            let exec = Execution::start(
                this.host.clone(),
                this.worker.clone(),
                lease.job,
                lease.token,
            );
            let shared = this.host.shared.clone();
            let index = std::str::from_utf8(&lease.payload)
                .ok()
                .and_then(|s| s.strip_prefix("job:"))
                .and_then(|s| s.parse::<u32>().ok());
            let Some(index) = index else {
                exec.finish(false);
                return Err(HandlerError::poison("cannot decode the payload"));
            };
            let rt = this.host.rt().clone();
            let plan = attempt(&shared, index, lease.token);
            let outcome = match plan {
                Attempt::Hang if this.host.now() < shared.scenario.window => {
                    let heal = Millis(shared.heal_ms.saturating_sub(this.host.now()));
                    tokio::select! {
                        biased;
                        why = stop.stopped() => Err(HandlerError::retryable(format!("hung, stopped: {why:?}"))),
                        _ = rt.sleep(heal) => Err(HandlerError::retryable("hung until the faults healed")),
                    }
                }
                Attempt::Hang | Attempt::Succeed(_) | Attempt::Fail(..) => {
                    let (run, fail) = match plan {
                        Attempt::Fail(run, retryable) => (run, Some(retryable)),
                        Attempt::Succeed(run) => (run, None),
                        Attempt::Hang => (shared.scenario.run_time.0, None),
                    };
                    tokio::select! {
                        biased;
                        why = stop.stopped() => Err(HandlerError::retryable(format!("stopped: {why:?}"))),
                        _ = rt.sleep(Millis(run)) => match fail {
                            Some(retryable) => Err(HandlerError {
                                message: format!("attempt {} of job {index} failed", lease.token.0),
                                retryable,
                            }),
                            None => Ok(result_of(lease.job, lease.token)),
                        },
                    }
                }
            };
            exec.finish(outcome.is_ok());
            outcome
        }
    }
}
