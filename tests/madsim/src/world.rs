//! State shared by every node of one run and by the supervisor: the history
//! being recorded, the run's one clock, request ids and incarnations.
//!
//! ## One clock
//! madsim has one clock per simulation. The run creates one
//! [`TokioRuntime`] at its start and every node uses a clone of it: under
//! `--cfg madsim` its `tokio` is madsim-tokio, so `now()` reads madsim's
//! clock (milliseconds since the run started), `sleep` is madsim's timer
//! and `spawn` puts the task on the calling node (a killed node loses it).
//! True time in the history and every host's local time are therefore the
//! same number, and a worker's belief deadline in true time is its local
//! deadline.
//!
//! ## Killed nodes
//! madsim drops a killed node's tasks lazily, after the kill. Guards that
//! record on drop (a handler dropped mid-run, a request abandoned by its
//! caller) check their incarnation's `alive` flag, which the supervisor
//! clears right before the kill, so a crash never writes history after it
//! happened (the crash itself is the ground truth).

use crate::scenario::Scenario;
use leasehold_core::{Event, JobId, JobRecord, Millis, Runtime, TokioRuntime, WorkerId};
use leasehold_model::config::SimConfig;
use leasehold_model::history::{History, Record, Reply};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The state of one run.
pub struct Shared {
    /// The scenario.
    pub scenario: Scenario,
    /// The scenario as the checker reads it.
    pub cfg: SimConfig,
    /// The madsim seed.
    pub seed: u64,
    /// The run's one clock, timer and spawner (see the module docs).
    pub rt: TokioRuntime,
    /// Every fault has healed by this time (ms).
    pub heal_ms: u64,
    records: Mutex<Vec<Record>>,
    anchors: Mutex<BTreeMap<(JobId, u64), (u64, u64)>>,
    incarnations: Mutex<BTreeMap<String, (u32, Arc<AtomicBool>)>>,
    next_req: AtomicU64,
    finished: AtomicBool,
    client_done: AtomicBool,
}

impl Shared {
    /// A fresh run state; call at the run's first instant.
    pub fn new(scenario: Scenario, seed: u64, heal_ms: u64) -> Self {
        Shared {
            cfg: scenario.sim_config(),
            scenario,
            seed,
            rt: TokioRuntime::new(),
            heal_ms,
            records: Mutex::new(Vec::with_capacity(1 << 12)),
            anchors: Mutex::default(),
            incarnations: Mutex::default(),
            next_req: AtomicU64::new(1),
            finished: AtomicBool::new(false),
            client_done: AtomicBool::new(false),
        }
    }

    /// Milliseconds since the run started (true time, and every host's
    /// local time).
    pub fn now(&self) -> u64 {
        self.rt.now().0
    }

    /// Appends a record from the supervisor.
    pub fn record(&self, r: Record) {
        if !self.finished.load(Ordering::Relaxed) {
            lock(&self.records).push(r);
        }
    }

    /// A fresh request id.
    pub fn next_request_id(&self) -> u64 {
        self.next_req.fetch_add(1, Ordering::Relaxed)
    }

    /// Notes the time and request after which `job` had `version` (the
    /// first note wins).
    pub fn anchor(&self, job: JobId, version: u64, t: u64, req: u64) {
        lock(&self.anchors)
            .entry((job, version))
            .or_insert((t, req));
    }

    /// Starts a new incarnation of `host` and records it, with the worker
    /// identity `worker` gives the incarnation's number (its first worker's).
    pub fn start(self: &Arc<Self>, host: &str, worker: impl Fn(u32) -> Option<String>) -> Host {
        let alive = Arc::new(AtomicBool::new(true));
        let n = {
            let mut m = lock(&self.incarnations);
            let n = m.get(host).map_or(0, |(n, _)| n + 1);
            m.insert(host.to_string(), (n, alive.clone()));
            n
        };
        let worker = worker(n);
        self.record(Record::HostStarted {
            t: self.now(),
            host: host.to_string(),
            incarnation: n,
            worker: worker.map(WorkerId::new),
        });
        Host {
            shared: self.clone(),
            name: host.to_string(),
            alive,
        }
    }

    /// The number of `host`'s running incarnation (0 before any).
    pub fn incarnation(&self, host: &str) -> u32 {
        lock(&self.incarnations).get(host).map_or(0, |(n, _)| *n)
    }

    /// Marks the running incarnation of `host` dead (before madsim kills it).
    pub fn mark_dead(&self, host: &str) {
        if let Some((_, alive)) = lock(&self.incarnations).get(host) {
            alive.store(false, Ordering::Relaxed);
        }
    }

    /// The client finished its schedule.
    pub fn set_client_done(&self) {
        self.client_done.store(true, Ordering::Relaxed);
    }

    /// Whether the client finished its schedule.
    pub fn client_done(&self) -> bool {
        self.client_done.load(Ordering::Relaxed)
    }

    /// Stops recording: what is dropped from now on is the run's teardown.
    pub fn finish(&self) {
        self.finished.store(true, Ordering::Relaxed);
    }

    /// The history: records in time order, the store's events at the time
    /// of the request that committed them, the final rows and the end.
    pub fn collect(
        &self,
        end: u64,
        quiet: bool,
        rows: Vec<JobRecord>,
        events: Vec<Event>,
    ) -> History {
        let records = std::mem::take(&mut *lock(&self.records));
        let anchors = std::mem::take(&mut *lock(&self.anchors));
        let mut last = (0u64, None);
        let placed = events
            .into_iter()
            .map(|event| {
                let (t, req) = match anchors.get(&(event.job, event.version)) {
                    Some(&(t, req)) => (t, Some(req)),
                    None => last,
                };
                last = (t, req);
                (t, req, event)
            })
            .collect();
        History::assemble(records, placed, rows, end, quiet)
    }
}

/// One incarnation of one host: what its software records through.
#[derive(Clone)]
pub struct Host {
    /// The run.
    pub shared: Arc<Shared>,
    /// Host name.
    pub name: String,
    alive: Arc<AtomicBool>,
}

impl Host {
    /// Whether this incarnation is still running (not killed).
    pub fn alive(&self) -> bool {
        self.alive.load(Ordering::Relaxed)
    }

    /// Appends a record, unless this incarnation was killed.
    pub fn record(&self, r: Record) {
        if self.alive() {
            self.shared.record(r);
        }
    }

    /// Records the answer the caller got to its request `id` (madsim's
    /// clock is the true clock: local and true times are the same).
    pub fn record_answer(&self, id: u64, reply: Reply) {
        let t = self.now();
        self.record(Record::Answer {
            t,
            local: t,
            host: self.name.clone(),
            id,
            reply,
        });
    }

    /// Milliseconds since the run started.
    pub fn now(&self) -> u64 {
        self.shared.now()
    }

    /// The run's runtime.
    pub fn rt(&self) -> &TokioRuntime {
        &self.shared.rt
    }

    /// Sleeps until run time `t` (ms).
    pub async fn sleep_until(&self, t: u64) {
        let now = self.now();
        if t > now {
            self.shared.rt.sleep(Millis(t - now)).await;
        }
    }
}
