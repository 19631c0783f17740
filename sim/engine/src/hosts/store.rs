//! The store host: the seed's store (memory, SQLite, PostgreSQL or a user's
//! own, see [`crate::stores`]) served over the simulated network, each
//! request in a task of its own (spawned in arrival order, so a crash drops
//! them in that order).
//!
//! The database outlives the host, so a store crash keeps everything
//! committed and loses only what was in flight. The lease clock is this
//! host's wall clock, handed to the store before every operation.
//!
//! Message loss and answer loss are decided here, per request, inside the
//! fault window: a lost request is never executed; a lost answer is
//! executed, committed, and then not sent (the ambiguous outcome). Either
//! way the caller hears nothing and gives up on its own timeout, as a lost
//! packet would leave it. Inside the window the store may
//! also answer a renew, release or cancel `Conflict` without applying it
//! (the seed's `store_conflict` rate; see [`StoreFaults::store_conflict`]).
//!
//! After a write that made work claimable (a row now pending and due, or
//! one that left `running` in a queue with a parallelism limit), the store
//! host sends each worker process a wake-up for its queue
//! ([`crate::net::wake`]), lost at the seed's `wake_loss` rate inside the
//! window. A batch may be answered `Conflict` as a whole, unapplied, at
//! the `store_conflict` rate, as a serialization failure fails its one
//! transaction.
//!
//! Store-side faults reach the real adapters where they can: PostgreSQL
//! raises the drawn conflict itself (a serialization failure at the commit
//! point, every try, so the adapter's own retries end in `Conflict`), and a
//! write that drew no conflict may meet one deadlock the adapter retries
//! (same answer). A worker batch may be cancelled by its caller
//! (`store_cancel`): the real SQL adapter runs it up to its commit point
//! and the call is dropped there; nothing may commit, the caller gets no
//! answer, and later writers must get through.
//!
//! A worker's batch arrives as one message and is executed by the store's
//! own `batch` (one transaction on the SQL stores), then recorded as its
//! parts, each with its own answer; it is lost, or answered and its answer
//! lost, as a whole.
//!
//! Paths a scenario opts into ([`super::store_paths`]): a batch's parts
//! finishing in a drawn order and one part answered `Conflict` alone (on a
//! store whose batch runs its parts as separate calls;
//! [`super::batch_parts`]), `Conflict` on a claim sent alone, a sweep or an
//! enqueue, and a single renew, claim or sweep dropped at its commit point
//! ([`cancel_single`]). When a scenario's workers send claims and
//! releases alone (`topology.single_calls`), those of one instant are
//! answered together ([`super::store_coalesce`]): on PostgreSQL through
//! its production coalescing wrapper, on the other stores one by one.

use super::batch_parts::{gated, run_order};
use super::store_coalesce::{run_lane, Lanes, RecordServed, Served};
use super::store_faults::StoreFaults;
use super::store_paths::StorePaths;
use crate::machine::recorder::Recorder;
use crate::machine::runtime::HostRuntime;
use crate::net::fabric::{self, Incoming};
use crate::net::WakeSender;
use crate::stores::interleave::Join;
use crate::stores::Backend;
use crate::stores::{SimStore, StoreFactory};
use leasehold_core::tx_faults::TxFaults;
use leasehold_core::{JobId, JobState, Runtime, StoreError};
use leasehold_model::config::{HostKind, SimConfig};
use leasehold_model::history::{Fate, ReadRow, Record};
use leasehold_model::wire::{decode, encode};
use leasehold_model::wire::{WireError, WireMessage, WireOp, WireReply};
use leasehold_model::wire_store::{apply, apply_batch, touched, wire};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Most requests one store incarnation serves (a bound far above any
/// scenario's).
const MAX_REQUESTS: u64 = 100_000_000;

/// What the store host is given, for every incarnation.
pub struct StoreSettings {
    /// The worker hosts its wake-ups go to: (name, number), in
    /// registration order.
    pub workers: Vec<(String, crate::exec::HostIdx)>,
    /// Whether the scenario limits parallelism per queue (a row leaving
    /// `running` then frees a slot, which wakes the workers).
    pub parallelism_limited: bool,
    /// Its faults and their generators.
    pub faults: StoreFaults,
    /// The store paths the scenario opts into, and their generators.
    pub paths: StorePaths,
    /// Whether single claims and releases of one instant are answered
    /// together (through PostgreSQL's coalescing wrapper; one by one on
    /// the other stores): the scenario's workers send them alone
    /// (`topology.single_calls`).
    pub coalesce: bool,
}

impl StoreSettings {
    /// The store settings of `cfg` for `seed`, with `faults`.
    pub fn of(cfg: &SimConfig, seed: u64, faults: StoreFaults) -> Self {
        let hosts = cfg.hosts();
        StoreSettings {
            workers: hosts
                .of_kind(|k| matches!(k, HostKind::Worker(_)))
                .map(|h| (h.name.clone(), h.index))
                .collect(),
            parallelism_limited: cfg.protocol.store_limited(),
            faults,
            paths: StorePaths::of(cfg, seed),
            coalesce: cfg.topology.single_calls,
        }
    }
}

/// The store host's software: one incarnation, serving the seed's store.
pub async fn run<F: StoreFactory>(
    rt: HostRuntime,
    settings: Arc<StoreSettings>,
    backend: Arc<Backend<F>>,
) -> Result<(), String> {
    rt.start();
    backend.clock.set(rt.wall());
    let store = backend.open().await.map_err(|e| e.to_string())?;
    let wake = Arc::new(WakeSender::new(&rt, settings.workers.clone()));
    // Gathered per incarnation: a crash drops the groups with their callers.
    let lanes = Arc::new(Lanes::default());
    let me = rt.idx();
    fabric::listen(me);
    for _ in 0..MAX_REQUESTS {
        let incoming = fabric::accept(me).await;
        let (store, backend, rt2) = (store.clone(), backend.clone(), rt.clone());
        let serve = serve(
            incoming,
            store,
            backend,
            rt2,
            settings.clone(),
            wake.clone(),
            lanes.clone(),
        );
        rt.spawn(Box::pin(serve));
    }
    Err(format!(
        "store served {MAX_REQUESTS} requests in one incarnation"
    ))
}

async fn serve<F: StoreFactory>(
    mut incoming: Incoming,
    store: Arc<F::Store>,
    backend: Arc<Backend<F>>,
    rt: HostRuntime,
    settings: Arc<StoreSettings>,
    wake: Arc<WakeSender>,
    lanes: Arc<Lanes>,
) {
    let replier = incoming.replier();
    // An unreadable request resets its caller's wait (the replier drops).
    let Ok(msg) = decode::<WireMessage>(&incoming.bytes) else {
        return;
    };
    drop(incoming);
    let rec = rt.recorder();
    let faults = &settings.faults;
    let (t, _) = rt.times();
    let (host, ids) = match &msg {
        WireMessage::One(r) => (r.host.clone(), vec![r.id]),
        WireMessage::Batch(b) => (b.host.clone(), b.parts.iter().map(|(id, _)| *id).collect()),
    };
    let in_window = faults.in_window(t);
    if faults.request_lost(in_window) {
        for id in ids {
            rec.record(Record::Served {
                t,
                store_time: rt.wall(),
                id,
                host: host.clone(),
                fate: Fate::RequestLost,
                reply: None,
                after: Vec::new(),
            });
        }
        replier.forget();
        return;
    }
    let store_time = rt.wall();
    backend.clock.set(store_time);
    // Drawn before the store runs, so a batch applied part by part can
    // record each part as it commits.
    let answer_lost = faults.answer_lost(in_window);
    let fate = if answer_lost {
        Fate::AnswerLost
    } else {
        Fate::Answered
    };
    let served = |(id, reply, after): (u64, WireReply, Vec<ReadRow>)| {
        record_served(rec, (t, store_time), id, &host, fate, &reply, after);
    };
    let mut woken: BTreeSet<String> = BTreeSet::new();
    let mut wakes = |after: &[ReadRow]| {
        woken.extend(
            after
                .iter()
                .filter(|r| wakes_workers(r, store_time, settings.parallelism_limited))
                .map(|r| r.queue.clone()),
        )
    };
    let answer = match msg {
        WireMessage::One(req) => {
            let target = conflict_target(&req.op);
            // A scripted window first: it draws nothing, so a run
            // without one draws exactly as before.
            let conflict = target.is_some() && faults.scripted_conflict(&req.host, t)
                || target.is_some_and(|job| faults.store_conflict(&req.host, job, in_window));
            // A claim, sweep or enqueue, when the scenario lets conflicts
            // reach every write (its own opt-in: draws nothing otherwise);
            // no enqueue in a differential run (`SeedContext::differential`).
            let differential_enqueue =
                backend.context().differential && matches!(req.op, WireOp::Enqueue(_));
            let conflict = conflict
                || settings
                    .paths
                    .conflict_key(&req.op)
                    .filter(|_| !differential_enqueue)
                    .is_some_and(|key| faults.store_conflict(&req.host, key, in_window));
            if !conflict && settings.paths.single_cancelled(&req.op, in_window) {
                let call = backend.call(cancel_single(store, req.op));
                let Some(cancelled) = called(Interleaved::new(call, faults).await, rec) else {
                    return;
                };
                match cancelled {
                    Ok((reply, after)) => rec.record(Record::Served {
                        t,
                        store_time,
                        id: req.id,
                        host: host.clone(),
                        fate: if reply.is_some() {
                            Fate::AnswerLost
                        } else {
                            Fate::Cancelled
                        },
                        reply: reply.map(|r| r.summary()),
                        after,
                    }),
                    Err(e) => rec.report_panic(e),
                }
                // The caller is gone: no answer, as for a lost one.
                replier.forget();
                return;
            }
            let fault = if conflict {
                Injected::Conflict
            } else if target.is_some() && faults.store_transient(in_window) {
                Injected::Transient
            } else {
                Injected::None
            };
            // A single claim or release in a scenario whose workers send
            // them alone, unless a fault was drawn for it alone: answered
            // with those of its instant, on every store alike (through
            // PostgreSQL's coalescing wrapper, the others one by one).
            let lane = (settings.coalesce && fault == Injected::None)
                .then(|| lanes.of(&req.op))
                .flatten();
            let answered = match lane {
                Some(lane) => {
                    let (rt, host, id) = (rt.clone(), host.clone(), req.id);
                    let record: RecordServed = Box::new(move |(reply, after): &Served| {
                        let at = (t, store_time);
                        record_served(rt.recorder(), at, id, &host, fate, reply, after.clone());
                    });
                    let run = |ops| run_lane(&backend, store.clone(), ops);
                    lane.submit(req.op, record, run).await
                }
                None => {
                    let join = grouped(fault, Join::Any);
                    let call =
                        backend.call_grouped(store.clone(), join, execute(store, req.op, fault));
                    Interleaved::new(call, faults).await
                }
            };
            let Some((reply, after)) = called(answered, rec) else {
                return;
            };
            wakes(&after);
            // A request answered in a group was recorded by its leader.
            if lane.is_none() {
                served((req.id, reply.clone(), after));
            }
            Answer::One(Box::new(reply))
        }
        WireMessage::Batch(b) if !store.batch_is_atomic() => {
            // The store's batch would apply the parts one by one, and
            // other requests may run between them: each part is applied
            // and recorded on its own, so the history has them in the
            // order they ran.
            let releases = b
                .parts
                .iter()
                .take_while(|(_, op)| matches!(op, WireOp::Release(_)))
                .count();
            let order = run_order(b.parts.len(), releases, settings.paths.part_order());
            let mut parts: Vec<Option<(u64, WireOp)>> = b.parts.into_iter().map(Some).collect();
            let mut replies = vec![None; parts.len()];
            for (i, (id, op)) in order
                .into_iter()
                .filter_map(|i| Some((i, parts[i].take()?)))
            {
                // A scripted window reaches each part it names (no draw).
                let scripted =
                    conflict_target(&op).is_some() && faults.scripted_conflict(&b.host, t);
                let fault = if scripted {
                    Injected::Conflict
                } else {
                    Injected::None
                };
                let call = backend.call(execute(store.clone(), op, fault));
                let Some((reply, after)) = called(Interleaved::new(call, faults).await, rec) else {
                    return;
                };
                wakes(&after);
                replies[i] = Some(reply.clone());
                served((id, reply, after));
            }
            Answer::Batch(replies.into_iter().flatten().collect())
        }
        WireMessage::Batch(b) => {
            // The whole batch is one transaction: a conflict fails it all.
            // A scripted window first, on a batch carrying a renew, release
            // or cancel of its host: it draws nothing, so a run without one
            // draws exactly as before.
            let scripted = b.parts.iter().any(|(_, op)| conflict_target(op).is_some())
                && faults.scripted_conflict(&b.host, t);
            let conflict =
                scripted || faults.store_conflict(&b.host, BATCH_CONFLICT_KEY, in_window);
            let gate = store.part_gate();
            // One part alone, on a store whose batch runs its parts as
            // separate calls (an opt-in: draws nothing otherwise).
            let part_conflicts: BTreeSet<u32> =
                if !conflict && gate.is_some() && settings.paths.conflicts_reach_parts() {
                    (0u32..)
                        .zip(&b.parts)
                        .filter(|(_, (_, op))| {
                            let key = conflict_target(op).or(settings.paths.conflict_key(op));
                            key.is_some_and(|k| faults.store_conflict(&b.host, k, in_window))
                        })
                        .map(|(i, _)| i)
                        .collect()
                } else {
                    BTreeSet::new()
                };
            if !conflict && faults.store_cancelled(in_window) {
                let s = store.clone();
                let parts = b.parts.clone();
                let run = async move {
                    apply_batch(&*s, b).await;
                };
                let call = backend.call(cancel_at_commit(store, run, parts));
                let Some(parts) = called(Interleaved::new(call, faults).await, rec) else {
                    return;
                };
                match parts {
                    Ok(parts) => {
                        for (id, after) in parts {
                            rec.record(Record::Served {
                                t,
                                store_time,
                                id,
                                host: host.clone(),
                                fate: Fate::Cancelled,
                                reply: None,
                                after,
                            });
                        }
                    }
                    Err(e) => rec.report_panic(e),
                }
                // The caller is gone: no answer, as for a lost one.
                replier.forget();
                return;
            }
            let fault = if conflict {
                Injected::Conflict
            } else if faults.store_transient(in_window) {
                Injected::Transient
            } else {
                Injected::None
            };
            let order = settings.paths.part_order();
            let join = grouped(fault, batch_join(&b.parts));
            let call = backend.call_grouped(store.clone(), join, async move {
                match injected(&*store, fault) {
                    None => conflict_batch(&*store, b).await,
                    Some(armed) => {
                        // In the order the parts ran (list order unless
                        // the scenario draws it).
                        let batch = apply_batch(&*store, b);
                        let parts = gated(store.part_gate(), order, part_conflicts, batch).await;
                        disarm(armed);
                        parts
                    }
                }
            });
            let Some(parts) = called(Interleaved::new(call, faults).await, rec) else {
                return;
            };
            // Answered in list order, whatever order the parts ran in.
            let by_id: BTreeMap<u64, &WireReply> =
                parts.iter().map(|(id, r, _)| (*id, r)).collect();
            let replies = ids
                .iter()
                .filter_map(|id| by_id.get(id).map(|r| (*r).clone()))
                .collect();
            for part in parts {
                wakes(&part.2);
                served(part);
            }
            Answer::Batch(replies)
        }
    };
    // Committed, so announced, whether or not the answer gets back.
    for q in &woken {
        wake.send(q, |_| faults.wake_lost(in_window));
    }
    if answer_lost {
        replier.forget();
        return;
    }
    let bytes = match &answer {
        Answer::One(r) => encode(r),
        Answer::Batch(rs) => encode(rs),
    };
    match bytes {
        Ok(b) => replier.send(b),
        Err(e) => rec.report_panic(format!("cannot encode an answer: {e}")),
    }
}

/// Records the answer to request `id` of `host`, served at `at` (true
/// time, store time), and anchors the rows it read back to it.
fn record_served(
    rec: &Recorder,
    at: (u64, leasehold_core::StoreTime),
    id: u64,
    host: &str,
    fate: Fate,
    reply: &WireReply,
    after: Vec<ReadRow>,
) {
    let (t, store_time) = at;
    for row in &after {
        rec.anchor(row.job, row.version, t, id);
    }
    rec.record(Record::Served {
        t,
        store_time,
        id,
        host: host.to_string(),
        fate,
        reply: Some(reply.summary()),
        after,
    });
}

/// Most polls of one store call the seed defers.
const MAX_DEFERRALS: u32 = 8;

/// A store call, polled at the seed's pace: before each poll the seed may
/// defer it once more (it wakes itself and yields), so the store host's
/// other requests ready in the same instant run first. Requests are
/// concurrent at the store host, one future per connection; for a store
/// whose operations await between their reads and their writes (a user's
/// store over a key-value service), this lets the seed choose the order in
/// which concurrent requests interleave at those awaits, instead of
/// always the order they arrived in. The built-in stores answer in one
/// poll, so for them it only reorders requests that arrived in the same
/// instant, identically on every store.
struct Interleaved<'a, F> {
    inner: Pin<Box<F>>,
    faults: &'a StoreFaults,
    deferred: u32,
}

impl<'a, F: Future> Interleaved<'a, F> {
    fn new(inner: F, faults: &'a StoreFaults) -> Self {
        Interleaved {
            inner: Box::pin(inner),
            faults,
            deferred: 0,
        }
    }
}

impl<F: Future> Future for Interleaved<'_, F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if self.deferred < MAX_DEFERRALS && self.faults.defer_store_poll() {
            self.deferred += 1;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.inner.as_mut().poll(cx)
    }
}

/// How a worker batch joins an interleaved group: claims of one queue and
/// no release decide at one step, and may share a group with other such
/// batches ([`Join::ClaimBatch`]); any other batch holds its group's one
/// batch place.
fn batch_join(parts: &[(u64, WireOp)]) -> Join {
    let mut queues = parts.iter().map(|(_, op)| match op {
        WireOp::Claim(c) => Some(c.queue.as_str()),
        _ => None,
    });
    let first = queues.next().flatten();
    if first.is_some() && queues.all(|q| q == first) {
        Join::ClaimBatch
    } else {
        Join::Batch
    }
}

/// How a call under `fault` joins an interleaved group: alone when it
/// arms a fault (armed on the whole store), else as `join`.
fn grouped(fault: Injected, join: Join) -> Join {
    if fault == Injected::None {
        join
    } else {
        Join::Alone
    }
}

/// The outcome of a store call, or `None` after reporting a call that
/// could not run (a harness error).
fn called<T>(r: Result<T, crate::stores::SetupError>, rec: &Recorder) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            rec.report_panic(format!("store call failed: {e}"));
            None
        }
    }
}

/// Whether a row the store just wrote makes work claimable: pending and
/// due now, or out of `running` in a queue with a parallelism limit (a
/// slot opened). The store host then wakes the worker processes.
fn wakes_workers(r: &ReadRow, store_time: leasehold_core::StoreTime, limited: bool) -> bool {
    (r.state == JobState::Pending && r.run_at <= store_time)
        || (limited && r.state != JobState::Running)
}

/// What goes back on the connection: the shape the client waits for.
enum Answer {
    One(Box<WireReply>),
    Batch(Vec<WireReply>),
}

/// The key under which a batch's `Conflict` is never drawn twice in a row
/// for one host (no job names a whole batch).
const BATCH_CONFLICT_KEY: JobId = JobId(u64::MAX);

/// A batch answered `Conflict` as a whole without applying any of it (its
/// transaction could not be serialized): every part gets the error, and
/// the rows the parts name are read back, unchanged.
async fn conflict_batch<S: SimStore>(
    store: &S,
    b: leasehold_model::wire::WireBatch,
) -> Vec<(u64, WireReply, Vec<ReadRow>)> {
    let reply = WireReply::Error(WireError::of(&StoreError::Conflict(JobId(0))));
    let mut out = Vec::with_capacity(b.parts.len());
    for (id, op) in &b.parts {
        let after = touched(store, op, &reply).await;
        out.push((*id, reply.clone(), after));
    }
    out
}

/// A store-side failure drawn for one write.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Injected {
    /// None.
    None,
    /// Contention the adapter's retries cannot clear: answered `Conflict`,
    /// nothing applied.
    Conflict,
    /// One failure the adapter retries; the answer is unchanged.
    Transient,
}

/// SQLSTATE raised for an injected conflict (serialization failure).
const SERIALIZATION_FAILURE: &str = "40001";
/// SQLSTATE raised for an injected transient failure (deadlock detected).
const DEADLOCK_DETECTED: &str = "40P01";

/// Arms `fault` in a store that raises injected failures itself; `None`
/// when the store host must answer the conflict in its place (a store that
/// cannot raise one). `Some(armed)` otherwise: the faults to disarm after
/// the call, if any were armed.
fn injected<S: SimStore>(store: &S, fault: Injected) -> Option<Option<&TxFaults>> {
    let raises = store
        .tx_faults()
        .filter(|_| store.raises_injected_failures());
    match (fault, raises) {
        (Injected::None, _) | (Injected::Transient, None) => Some(None),
        (Injected::Conflict, None) => None,
        (Injected::Conflict, Some(f)) => {
            f.arm_failures(None, SERIALIZATION_FAILURE);
            Some(Some(f))
        }
        (Injected::Transient, Some(f)) => {
            f.arm_failures(Some(1), DEADLOCK_DETECTED);
            Some(Some(f))
        }
    }
}

fn disarm(armed: Option<&TxFaults>) {
    if let Some(f) = armed {
        f.disarm();
    }
}

/// A worker batch dropped by its caller mid-transaction: with the store's
/// commit-point faults, the real `batch` (`run`) runs until every
/// statement is done and is dropped there, before its commit, as a request
/// timeout drops it; a store without them never starts it. Either way the
/// rows the `parts` name are read back (they must be unchanged), per part.
async fn cancel_at_commit<S: SimStore>(
    store: Arc<S>,
    run: impl Future<Output = ()>,
    parts: Vec<(u64, WireOp)>,
) -> Result<Vec<(u64, Vec<ReadRow>)>, String> {
    if let Some(f) = store.tx_faults() {
        let reached = f.arm_stall();
        let finished = tokio::select! {
            biased;
            _ = reached => false,
            _ = run => true,
        };
        f.disarm();
        store.settle().await?;
        if finished {
            return Err(format!(
                "a batch of {} part(s) armed to be cancelled at its commit point ended without \
                 reaching it",
                parts.len()
            ));
        }
    }
    let none = WireReply::Error(WireError::Unavailable("cancelled".into()));
    let mut out = Vec::with_capacity(parts.len());
    for (id, op) in &parts {
        out.push((*id, touched(&*store, op, &none).await));
    }
    Ok(out)
}

/// A single request (a renew, a claim, a sweep) dropped by its caller at
/// the store's commit point, as [`cancel_at_commit`] drops a batch: the
/// rows it names are read back (they must be unchanged). A request that
/// ended without reaching a commit point (it wrote nothing, or refused)
/// finished before its caller gave up: its reply comes back as well, and
/// the caller still hears nothing.
async fn cancel_single<S: SimStore>(
    store: Arc<S>,
    op: WireOp,
) -> Result<(Option<WireReply>, Vec<ReadRow>), String> {
    if let Some(f) = store.tx_faults() {
        let reached = f.arm_stall();
        let finished = tokio::select! {
            biased;
            _ = reached => None,
            r = execute(store.clone(), op.clone(), Injected::None) => Some(r),
        };
        f.disarm();
        store.settle().await?;
        if let Some((reply, after)) = finished {
            return Ok((Some(reply), after));
        }
    }
    let none = WireReply::Error(WireError::Unavailable("cancelled".into()));
    Ok((None, touched(&*store, &op, &none).await))
}

/// The job of a write the store may answer `Conflict` (its version-checked
/// row writes: renew, release, cancel).
fn conflict_target(op: &WireOp) -> Option<JobId> {
    match op {
        WireOp::Renew(r) => Some(r.job),
        WireOp::Release(r) => Some(r.job),
        WireOp::Cancel(j) => Some(*j),
        _ => None,
    }
}

/// Executes one request under the drawn `fault` (a store that cannot
/// raise a conflict itself has it answered here, unapplied), and reads
/// back the rows it touched.
async fn execute<S: SimStore>(
    store: Arc<S>,
    op: WireOp,
    fault: Injected,
) -> (WireReply, Vec<ReadRow>) {
    let reply = match injected(&*store, fault) {
        // PostgreSQL does not say which row it could not serialize.
        None => WireReply::Error(WireError::of(&StoreError::Conflict(JobId(0)))),
        Some(armed) => {
            let r = match op.clone() {
                // Only a simulated store can carry the `sweeper-own-clock` bug.
                WireOp::Sweep(req, wall) => {
                    wire(store.sweep_with_wall(req, wall).await, WireReply::Swept)
                }
                op => apply(&*store, op).await,
            };
            disarm(armed);
            r
        }
    };
    let after = touched(&*store, &op, &reply).await;
    (reply, after)
}
