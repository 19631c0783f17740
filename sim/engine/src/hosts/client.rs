//! The client host: enqueues and cancels jobs on the workload's schedule,
//! and reads the store a page at a time, round and round (a reader for I4).
//!
//! Enqueues carry an idempotency key (`job-<index>`), so a retry after an
//! unknown outcome, or after a client crash and restart (which replays the
//! schedule from the start), never creates a second job.
//!
//! The client is also the operator: it removes each schedule that has a
//! `remove_at` at that true time (an operator's `remove_schedule` while the
//! schedulers run), retrying an unknown outcome like every other client
//! operation. A restarted client removes again any schedule whose time has
//! passed: a second removal changes nothing.

use crate::machine::runtime::{sleep_until_true, true_now_ms, HostRuntime};
use crate::net::RemoteStore;
use leasehold_core::worker::with_timeout;
use leasehold_core::{JobId, ListRequest, Millis, NewJob, Runtime, Store, StoreError};
use leasehold_model::config::SimConfig;
use leasehold_model::history::Record;
use leasehold_model::workload::WorkloadPlan;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Pause between retries of an operation whose outcome was unknown.
const RETRY_DELAY: Millis = Millis(1_000);
/// Most tries of one client operation.
const MAX_TRIES: u32 = 1_000;
/// Interval between the reader's reads.
const READ_EVERY_MS: u64 = 2_000;
/// Rows per read: the reader walks the jobs a page at a time, wrapping
/// around, so every job is read every `jobs / READ_PAGE` reads.
const READ_PAGE: u32 = 20;

/// Simulated time per MiB the reader may read when the workload's values
/// are large: every read costs real time to encode and decode (a byte
/// string is a JSON array on the wire), so large rows are read less often.
const READ_MS_PER_MIB: u64 = 1_000;
/// Most wire bytes one read of large rows may carry (at least one row).
const READ_BYTES: u64 = 8 << 20;

/// How the reader reads under `cfg`: rows per page and the interval
/// between reads, in ms. [`READ_PAGE`] rows every [`READ_EVERY_MS`] unless
/// the workload's payloads, results or errors are sized: then as many rows
/// as fit in [`READ_BYTES`] and one frame of the simulated wire (at least
/// one; the loader refuses sizes where one row would not fit a frame),
/// reading at most one MiB of wire per simulated second.
fn read_plan(cfg: &SimConfig) -> (u32, u64) {
    let w = &cfg.workload;
    if w.payload_bytes == 0 && w.result_bytes == 0 && w.error_bytes == 0 {
        return (READ_PAGE, READ_EVERY_MS);
    }
    // JSON: 2 characters per padded payload byte, up to 4 per result byte.
    let err = w.error_bytes.min(cfg.protocol.max_error_bytes);
    let row = 2 * w.payload_bytes + 4 * w.result_bytes + err + 4096;
    let budget = READ_BYTES.min(leasehold_model::wire::MAX_FRAME as u64);
    let page = (budget / row.max(1)).clamp(1, u64::from(READ_PAGE));
    let every = (page * row * READ_MS_PER_MIB).div_ceil(1 << 20);
    (page as u32, every.max(READ_EVERY_MS))
}

/// What the client host is given, for every incarnation.
pub struct ClientSettings {
    /// The workload it enqueues and cancels.
    pub workload: Arc<WorkloadPlan>,
    /// The end of the run (true time): no retry after it.
    pub end: u64,
    /// Timeout of each store call.
    pub request_timeout: Millis,
    /// The attempt budget of every job it enqueues.
    pub max_attempts: u32,
    /// Rows per read and the interval between reads (see [`read_plan`]).
    pub read: (u32, u64),
    /// The schedules the operator removes, with the true time of each, in
    /// time order (then name order).
    pub removals: Vec<(u64, String)>,
    /// Raised once the client finished its schedule; the runner reads it.
    pub done: Arc<AtomicBool>,
}

impl ClientSettings {
    /// The client settings of `cfg`, playing `workload`.
    pub fn of(cfg: &SimConfig, workload: Arc<WorkloadPlan>) -> Self {
        let mut removals: Vec<(u64, String)> = cfg
            .schedules
            .iter()
            .filter_map(|s| s.remove_at.map(|r| (r.as_ms(), s.name.clone())))
            .collect();
        removals.sort();
        ClientSettings {
            workload,
            end: cfg.duration.as_ms(),
            request_timeout: cfg.protocol.request_timeout.0,
            max_attempts: cfg.protocol.max_attempts,
            read: read_plan(cfg),
            removals,
            done: Arc::default(),
        }
    }

    /// Whether the client finished its schedule.
    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Relaxed)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Action {
    Enqueue(u32),
    Cancel(u32),
}

/// Retries `op` while its outcome is unknown or it met a conflict (nothing
/// applied), up to the end of the run.
async fn retry<T, F, Fut>(rt: &HostRuntime, s: &ClientSettings, mut op: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    let (limit, end) = (s.request_timeout, s.end);
    for _ in 0..MAX_TRIES {
        match with_timeout(rt, limit, op()).await {
            Ok(v) => return Some(v),
            Err(e) if e.is_transient() && true_now_ms() < end => rt.sleep(RETRY_DELAY).await,
            Err(_) => return None,
        }
    }
    None
}

async fn reader(rt: HostRuntime, s: Arc<ClientSettings>, store: Arc<RemoteStore>) {
    let (end, limit) = (s.end, s.request_timeout);
    let (page, every) = s.read;
    let mut next = every;
    let mut after: Option<JobId> = None;
    while next < end {
        sleep_until_true(next).await;
        let req = ListRequest { after, limit: page };
        if let Ok(rows) = with_timeout(&rt, limit, store.list(req)).await {
            after = if rows.len() < page as usize {
                None
            } else {
                rows.last().map(|r| r.id)
            };
        }
        next += every;
    }
}

/// Removes the scenario's schedules that have a `remove_at`, each at its
/// time, in time order (then name order).
async fn operator(rt: HostRuntime, s: Arc<ClientSettings>, store: Arc<RemoteStore>) {
    for (at, name) in &s.removals {
        sleep_until_true(*at).await;
        let _ = retry(&rt, &s, || store.remove_schedule(name.clone())).await;
    }
}

/// The client host's software: one incarnation.
pub async fn run(rt: HostRuntime, s: Arc<ClientSettings>) -> Result<(), String> {
    rt.start();
    let store = Arc::new(crate::net::remote_store(rt.clone(), false));
    rt.spawn(Box::pin(reader(rt.clone(), s.clone(), store.clone())));
    // Spawned only when there is something to remove: a task more would
    // change how existing scenarios' hosts are stepped, and their histories.
    if !s.removals.is_empty() {
        rt.spawn(Box::pin(operator(rt.clone(), s.clone(), store.clone())));
    }
    let mut actions: Vec<(u64, Action)> = Vec::new();
    for j in &s.workload.jobs {
        actions.push((j.enqueue_at, Action::Enqueue(j.index)));
        if let Some(c) = j.cancel_at {
            actions.push((c, Action::Cancel(j.index)));
        }
    }
    actions.sort();
    let mut ids: BTreeMap<u32, JobId> = BTreeMap::new();
    for (at, action) in actions {
        sleep_until_true(at).await;
        match action {
            Action::Enqueue(i) => {
                let j = &s.workload.jobs[i as usize];
                let spec = NewJob::new(j.queue.clone(), j.payload())
                    .max_attempts(s.max_attempts)
                    .idempotency_key(j.key());
                if let Some(id) = retry(&rt, &s, || store.enqueue(spec.clone())).await {
                    ids.insert(i, id);
                }
            }
            Action::Cancel(i) => {
                if let Some(&id) = ids.get(&i) {
                    let _ = retry(&rt, &s, || store.cancel(id)).await;
                }
            }
        }
    }
    let (t, _) = rt.times();
    rt.recorder().record(Record::ClientDone { t });
    s.done.store(true, Ordering::Relaxed);
    std::future::pending::<()>().await;
    Ok(())
}
