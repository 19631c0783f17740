//! `RemoteStore`: the [`Store`](leasehold_core::Store) workers, sweepers and
//! the client use, over the simulated network: the model's [`WireStore`]
//! table on a [`RemoteCall`], which carries each request as one message on
//! the [`fabric`](super::fabric) and waits for the message that answers it.
//!
//! A worker's batch ([`Store::batch`](leasehold_core::Store::batch)) travels
//! as one message and is recorded as its parts, each a request and an
//! answer of its own (see [`WireMessage::Batch`]); the bookkeeping of a
//! merged batch is the model's [`merged_batch`], shared with the madsim
//! embedding.
//!
//! Every call is recorded (request, then answer or failure). A call whose
//! answer does not arrive returns [`StoreError::Unavailable`]: the outcome
//! is unknown, exactly as in production. The core bounds each call with its
//! own timeout; the remote store adds a safety bound of its own so no call
//! can wait forever.
//!
//! A request outlives a caller that gave up: one held by the network, or
//! queued at a paused store, is still delivered and executed late, which
//! is how stale releases and late renewals reach a store in production.
//! Its answer then finds nobody waiting and is dropped.

use super::fabric;
use crate::exec::HostIdx;
use crate::machine::runtime::HostRuntime;
use leasehold_core::worker::wake::WorkSignal;
use leasehold_core::{
    BatchAnswer, BatchMerger, BatchRequest, Millis, Patience, Runtime, StoreError, StoreTime,
    DEFAULT_MERGE_FLUSHERS,
};
use leasehold_model::catalogue::{self, Variant};
use leasehold_model::history::{Op, Record, Reply};
use leasehold_model::merged_batch::{self, BatchShape, MergeQueue};
use leasehold_model::wire::{
    decode, encode, WireBatch, WireMessage, WireOp, WireReply, WireRequest,
};
use leasehold_model::wire_store::{WireCall, WireStore};
use serde::de::DeserializeOwned;
use std::future::Future;
use std::sync::Arc;

/// Longest any remote call may take before it counts as unknown, on the
/// caller's clock (the core's own timeouts are shorter).
pub const SAFETY_TIMEOUT: Millis = Millis(20_000);

/// A store reached over the simulated network.
pub type RemoteStore = WireStore<RemoteCall>;

/// Carries a host's requests to the store host over the simulated network, and
/// records each request and its answer.
pub struct RemoteCall {
    rt: HostRuntime,
    /// The store host.
    store: HostIdx,
    send_wall_on_sweep: bool,
    /// Merges the concurrent batches of the process's workers, as the SQL
    /// adapters' own merger does in production.
    merger: BatchMerger,
    /// The process's wake-ups ([`crate::net::wake`]); none: never woken.
    wake: Option<Arc<WorkSignal>>,
    /// Request ids of the batches queued in the merger, in its order: each
    /// caller's release count and ids (releases', then claims').
    queued: MergeQueue,
}

/// Records "no answer" for each of its requests if a call is dropped before
/// it finished (the caller timed out), unless the host is being killed.
struct Pending<'a> {
    rt: &'a HostRuntime,
    ids: Vec<u64>,
    done: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.done && !self.ids.is_empty() && !self.rt.recorder().is_crashing() {
            let (t, local) = self.rt.times();
            for &id in &self.ids {
                self.rt.recorder().record(Record::Answer {
                    t,
                    local,
                    host: self.rt.host().to_string(),
                    id,
                    reply: Reply::Unavailable("caller gave up waiting".into()),
                });
            }
        }
    }
}

impl RemoteCall {
    /// The carrier of the host of `rt`; `send_wall_on_sweep` makes sweeps
    /// carry this host's wall clock (the `sweeper-own-clock` bug).
    pub fn new(rt: HostRuntime, send_wall_on_sweep: bool) -> Self {
        let store = fabric::idx_of("store").expect("the world has a store host");
        RemoteCall {
            rt,
            store,
            send_wall_on_sweep,
            merger: BatchMerger::new(DEFAULT_MERGE_FLUSHERS),
            wake: None,
            queued: MergeQueue::default(),
        }
    }

    /// Records a request per part, sends `msg` as one message and waits (at most [`SAFETY_TIMEOUT`]) for its answer. The caller
    /// records the answers; if it is dropped first, each part is recorded
    /// as given up.
    async fn send<T: DeserializeOwned + Send + 'static>(
        &self,
        parts: &[(u64, Op)],
        msg: WireMessage,
    ) -> Result<T, String> {
        let (t, local) = self.rt.times();
        for (id, op) in parts {
            self.rt.recorder().record(Record::Request {
                t,
                local,
                host: self.rt.host().to_string(),
                id: *id,
                op: op.clone(),
                merged: false,
            });
        }
        let mut pending = Pending {
            rt: &self.rt,
            ids: parts.iter().map(|(id, _)| *id).collect(),
            done: false,
        };
        // The request travels on its own once sent: dropping this wait
        // (the caller gave up) leaves it to arrive, and be executed, late.
        let result = match encode(&msg) {
            Err(e) => Err(e),
            Ok(bytes) => {
                let call = fabric::call(self.rt.idx(), self.store, bytes);
                tokio::select! {
                    biased;
                    r = call => r.and_then(|b| decode::<T>(&b)),
                    _ = self.rt.sleep(SAFETY_TIMEOUT) => Err(format!("no answer within {SAFETY_TIMEOUT}")),
                }
            }
        };
        pending.done = true;
        result
    }

    fn record_answer(&self, id: u64, reply: Reply) {
        let (t, local) = self.rt.times();
        self.rt.recorder().record(Record::Answer {
            t,
            local,
            host: self.rt.host().to_string(),
            id,
            reply,
        });
    }
}

/// A remote store for the host of `rt` (see [`RemoteCall::new`]).
pub fn remote_store(rt: HostRuntime, send_wall_on_sweep: bool) -> RemoteStore {
    WireStore::new(RemoteCall::new(rt, send_wall_on_sweep))
}

/// The store client of a worker process: its workers' batches merge (with
/// the catalogue's merger `variant`, if any), and `work_available` hears
/// the wake-ups announced on `wake`.
pub fn worker_store(
    rt: HostRuntime,
    wake: Arc<WorkSignal>,
    variant: Option<Variant>,
) -> RemoteStore {
    let mut call = RemoteCall::new(rt, false);
    call.merger = catalogue::configure_merger(call.merger, variant);
    call.wake = Some(wake);
    WireStore::new(call)
}

impl WireCall for RemoteCall {
    const BATCHES: bool = true;

    fn sweep_wall(&self) -> Option<StoreTime> {
        self.send_wall_on_sweep.then(|| self.rt.wall())
    }

    async fn call(&self, op: WireOp) -> Result<WireReply, StoreError> {
        let id = self.rt.recorder().next_request_id();
        let summary = op.summary();
        let msg = WireMessage::One(WireRequest {
            id,
            host: self.rt.host().to_string(),
            op,
        });
        let result = self.send::<WireReply>(&[(id, summary)], msg).await;
        let reply = match &result {
            Ok(r) => r.summary(),
            Err(e) => Reply::Unavailable(e.clone()),
        };
        self.record_answer(id, reply);
        match result {
            Ok(WireReply::Error(e)) => Err(e.into_store_error()),
            Ok(r) => Ok(r),
            Err(e) => Err(StoreError::Unavailable(e)),
        }
    }

    fn work_available(&self, queue: &str) -> impl Future<Output = ()> + Send {
        let sub = self.wake.as_ref().map(|w| w.subscribe(queue));
        async move {
            match sub {
                Some(s) => s.await,
                None => std::future::pending().await,
            }
        }
    }

    /// One worker's batch: recorded as its parts (requests now, answers
    /// when this worker gets them, or "gave up" if it stops waiting first),
    /// merged with the concurrent batches of the process's other workers
    /// (see [`BatchMerger`]), each merged batch one message (see
    /// [`RemoteCall::send_merged`]). The answers are recorded here, per
    /// worker, not when the merged message comes back: a worker that gave
    /// up never got them, even if another worker of its process did.
    async fn call_batch(&self, req: BatchRequest) -> Result<BatchAnswer, StoreError> {
        self.merged_batch(req, None).await
    }

    async fn call_batch_within(
        &self,
        req: BatchRequest,
        patience: Patience,
    ) -> Result<BatchAnswer, StoreError> {
        self.merged_batch(req, Some(patience)).await
    }
}

impl RemoteCall {
    /// One worker's batch (see [`WireCall::call_batch`]), waited for with
    /// `patience` if any, as the SQL adapters' merger does.
    async fn merged_batch(
        &self,
        req: BatchRequest,
        patience: Option<Patience>,
    ) -> Result<BatchAnswer, StoreError> {
        let rec = self.rt.recorder();
        let ops = merged_batch::part_summaries(&req);
        let ids: Vec<u64> = ops.iter().map(|_| rec.next_request_id()).collect();
        let (t, local) = self.rt.times();
        for (id, op) in ids.iter().zip(ops) {
            rec.record(Record::Request {
                t,
                local,
                host: self.rt.host().to_string(),
                id: *id,
                op,
                merged: true,
            });
        }
        let mut pending = Pending {
            rt: &self.rt,
            ids: ids.clone(),
            done: false,
        };
        // Queued in the merger's order: the merger takes a prefix of its
        // queue, and `send_merged` takes the same prefix of these.
        self.queued.push(req.releases.len(), ids.clone());
        let run = |r| self.send_merged(r);
        let expired = patience.as_ref().map(Patience::expired);
        let answer = match patience {
            Some(p) => {
                // A request withdrawn from the merger's queue leaves this
                // record of its order too, at the same moment.
                let mut withdrawn = || self.queued.withdraw(&ids);
                self.merger
                    .batch_within_then(req, run, p, &mut withdrawn)
                    .await
            }
            None => self.merger.batch(req, run).await,
        };
        if expired.is_some() && answer.as_ref().err() == expired.as_ref() {
            // Gave up: `pending` records it, as for a caller whose wait
            // was cut short from outside.
            return answer;
        }
        pending.done = true;
        let replies = merged_batch::caller_replies(&answer, ids.len());
        for (id, reply) in ids.iter().zip(replies) {
            self.record_answer(*id, reply);
        }
        answer
    }

    /// A merged batch as one message (see [`WireMessage::Batch`]), its
    /// parts under the ids their callers recorded. Records only that the
    /// message left ([`Record::Sent`]): each caller records its own
    /// answers.
    async fn send_merged(&self, req: BatchRequest) -> Result<BatchAnswer, StoreError> {
        let shape = BatchShape::of(&req);
        let parts = merged_batch::wire_parts(self.queued.take(shape)?, req);
        // Its parts were recorded when their workers asked; this is when
        // they left, which the checker needs to tell a request that waited
        // behind a merged batch lost to a fault from one that failed alone.
        let (t, local) = self.rt.times();
        self.rt.recorder().record(Record::Sent {
            t,
            local,
            host: self.rt.host().to_string(),
            ids: parts.iter().map(|(id, _)| *id).collect(),
        });
        let msg = WireMessage::Batch(WireBatch {
            host: self.rt.host().to_string(),
            parts,
        });
        let replies = self
            .send::<Vec<WireReply>>(&[], msg)
            .await
            .map_err(StoreError::Unavailable)?;
        shape.answer(replies)
    }
}
