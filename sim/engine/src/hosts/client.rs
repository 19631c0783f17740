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

use super::runtime::{sleep_until_true, true_now_ms, HostRuntime};
use super::shared::Shared;
use crate::net::RemoteStore;
use leasehold_core::worker::with_timeout;
use leasehold_core::{JobId, ListRequest, Millis, NewJob, Runtime, Store, StoreError};
use leasehold_model::history::Record;
use std::collections::BTreeMap;
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
fn read_plan(cfg: &leasehold_model::config::SimConfig) -> (u32, u64) {
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Action {
    Enqueue(u32),
    Cancel(u32),
}

/// Retries `op` while its outcome is unknown or it met a conflict (nothing
/// applied), up to the end of the run.
async fn retry<T, F, Fut>(rt: &HostRuntime, end: u64, mut op: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    let limit = rt.shared().cfg.protocol.request_timeout.0;
    for _ in 0..MAX_TRIES {
        match with_timeout(rt, limit, op()).await {
            Ok(v) => return Some(v),
            Err(e) if e.is_transient() && true_now_ms() < end => rt.sleep(RETRY_DELAY).await,
            Err(_) => return None,
        }
    }
    None
}

async fn reader(rt: HostRuntime, store: Arc<RemoteStore>) {
    let end = rt.shared().cfg.duration.as_ms();
    let limit = rt.shared().cfg.protocol.request_timeout.0;
    let (page, every) = read_plan(&rt.shared().cfg);
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
async fn operator(rt: HostRuntime, store: Arc<RemoteStore>) {
    let cfg = rt.shared().cfg.clone();
    let end = cfg.duration.as_ms();
    let mut removals: Vec<(u64, String)> = cfg
        .schedules
        .iter()
        .filter_map(|s| s.remove_at.map(|r| (r.as_ms(), s.name.clone())))
        .collect();
    removals.sort();
    for (at, name) in removals {
        sleep_until_true(at).await;
        let _ = retry(&rt, end, || store.remove_schedule(name.clone())).await;
    }
}

/// The client host's software: one incarnation.
pub async fn run(shared: Arc<Shared>) -> Result<(), String> {
    let rt = HostRuntime::new(shared.clone(), "client");
    let incarnation = shared.next_incarnation("client");
    let (t, _) = rt.times();
    shared.record(Record::HostStarted {
        t,
        host: "client".into(),
        incarnation,
        worker: None,
    });
    let store = Arc::new(crate::net::remote_store(rt.clone(), false));
    rt.spawn(Box::pin(reader(rt.clone(), store.clone())));
    // Spawned only when there is something to remove: a task more would
    // change how existing scenarios' hosts are stepped, and their histories.
    if shared.cfg.schedules.iter().any(|s| s.remove_at.is_some()) {
        rt.spawn(Box::pin(operator(rt.clone(), store.clone())));
    }
    let mut actions: Vec<(u64, Action)> = Vec::new();
    for j in &shared.workload.jobs {
        actions.push((j.enqueue_at, Action::Enqueue(j.index)));
        if let Some(c) = j.cancel_at {
            actions.push((c, Action::Cancel(j.index)));
        }
    }
    actions.sort();
    let end = shared.cfg.duration.as_ms();
    let max_attempts = shared.cfg.protocol.max_attempts;
    let mut ids: BTreeMap<u32, JobId> = BTreeMap::new();
    for (at, action) in actions {
        sleep_until_true(at).await;
        match action {
            Action::Enqueue(i) => {
                let j = &shared.workload.jobs[i as usize];
                let spec = NewJob::new(j.queue.clone(), j.payload())
                    .max_attempts(max_attempts)
                    .idempotency_key(j.key());
                if let Some(id) = retry(&rt, end, || store.enqueue(spec.clone())).await {
                    ids.insert(i, id);
                }
            }
            Action::Cancel(i) => {
                if let Some(&id) = ids.get(&i) {
                    let _ = retry(&rt, end, || store.cancel(id)).await;
                }
            }
        }
    }
    let (t, _) = rt.times();
    shared.record(Record::ClientDone { t });
    shared.set_client_done();
    std::future::pending::<()>().await;
    Ok(())
}
