//! The store over madsim's network: a [`RemoteStore`] for workers, sweepers
//! and the client, and the store node's server.
//!
//! Messages are madsim datagrams ([`Endpoint`]): one request message to the
//! store's port, one answer message back, tagged with the request id. madsim
//! decides their fate: latency drawn from its `send_latency`, loss from its
//! `packet_loss_rate`, nothing at all across a clogged link or to a killed
//! node. A lost request is never executed; a lost answer was executed (the
//! ambiguous outcome); either way the caller times out and the core sees
//! [`StoreError::Unavailable`], as in production. The wire types and their
//! history summaries are the simulator's own
//! (`leasehold_model::wire`), so both simulators record the same history.
//!
//! A request is a [`WireMessage`]: one call, or a worker node's merged batch
//! (see [`crate::batch`]), which travels, is lost and is answered as one
//! message, and is served by the store's own `batch`.

use crate::world::Host;
use leasehold_core::worker::wake::WorkSignal;
use leasehold_core::{
    BatchAnswer, BatchMerger, BatchRequest, Millis, Patience, Runtime, Store, StoreError,
    StoreTime, DEFAULT_MERGE_FLUSHERS,
};
use leasehold_memory::MemoryStore;
use leasehold_model::history::{Fate, ReadRow, Record, Reply};
use leasehold_model::merged_batch::MergeQueue;
use leasehold_model::wire::{WireMessage, WireOp, WireReply, WireRequest};
use leasehold_model::wire_store::{apply, apply_batch, touched, WireCall, WireStore};
use madsim::net::Endpoint;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

/// The store node's address.
pub const STORE_ADDR: &str = "10.0.0.1:7000";
/// Tag of request messages (answers are tagged with the request id, which
/// starts at 1).
const REQUEST_TAG: u64 = 0;
/// Longest any remote call may take before it counts as unknown (the core's
/// own timeouts are shorter).
pub const SAFETY_TIMEOUT: Millis = Millis(20_000);

fn store_addr() -> SocketAddr {
    STORE_ADDR.parse().expect("a socket address")
}

/// A store reached over madsim's network: the model's [`WireStore`] table
/// on a [`RemoteCall`].
pub type RemoteStore = WireStore<RemoteCall>;

/// Carries a node's requests to the store node as madsim datagrams, and
/// records each request and its answer.
pub struct RemoteCall {
    pub(crate) host: Host,
    ep: Endpoint,
    /// Merges the concurrent batches of the node's workers into one
    /// message each, as the SQL adapters' merger merges them into one
    /// transaction in production (the production `BatchMerger`).
    pub(crate) merger: BatchMerger,
    /// Request ids of the batches queued in the merger, in its order: each
    /// caller's release count and ids (releases', then claims').
    pub(crate) queued: MergeQueue,
    /// The node's wake-ups (see [`crate::wake`]); none: never woken.
    wake: Option<Arc<WorkSignal>>,
}

/// Records "no answer" for each of its requests if a call is dropped
/// before it finished (its caller timed out), unless the node was killed.
pub(crate) struct Pending<'a> {
    pub(crate) host: &'a Host,
    pub(crate) ids: Vec<u64>,
    pub(crate) done: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.done {
            for &id in &self.ids {
                self.host
                    .record_answer(id, Reply::Unavailable("caller gave up waiting".into()));
            }
        }
    }
}

/// The carrier of `host`'s calls (binds an ephemeral endpoint on its node).
async fn carrier(host: Host) -> std::io::Result<RemoteCall> {
    let ep = Endpoint::bind("0.0.0.0:0").await?;
    Ok(RemoteCall {
        host,
        ep,
        merger: BatchMerger::new(DEFAULT_MERGE_FLUSHERS),
        queued: MergeQueue::default(),
        wake: None,
    })
}

/// A remote store for `host`: every call one message.
pub async fn connect(host: Host) -> std::io::Result<RemoteStore> {
    Ok(WireStore::new(carrier(host).await?))
}

/// The store client of a worker node, shared by its workers: their batches
/// merge (with the catalogue's merger variant, if any), each merged batch
/// one message, and `work_available` hears the wake-ups announced on
/// `wake`.
pub async fn connect_worker(host: Host, wake: Arc<WorkSignal>) -> std::io::Result<RemoteStore> {
    let variant = host.shared.scenario.variant;
    let mut call = carrier(host).await?;
    call.merger = leasehold_model::catalogue::configure_merger(call.merger, variant);
    call.wake = Some(wake);
    Ok(WireStore::new(call))
}

impl RemoteCall {
    /// Sends `msg` as one message and waits (at most [`SAFETY_TIMEOUT`])
    /// for the answer tagged `tag`. The request travels on its own once
    /// sent: a caller that gives up leaves it to arrive, and be executed,
    /// late.
    pub(crate) async fn exchange<T: 'static>(
        &self,
        tag: u64,
        msg: WireMessage,
    ) -> Result<T, String> {
        let exchange = async {
            self.ep
                .send_to_raw(store_addr(), REQUEST_TAG, Box::new(msg))
                .await?;
            let (payload, _) = self.ep.recv_from_raw(tag).await?;
            payload
                .downcast::<T>()
                .map(|r| *r)
                .map_err(|_| std::io::Error::other("not an answer"))
        };
        tokio::select! {
            biased;
            r = exchange => r.map_err(|e| e.to_string()),
            _ = self.host.rt().sleep(SAFETY_TIMEOUT) => Err(format!("no answer within {SAFETY_TIMEOUT}")),
        }
    }
}

impl WireCall for RemoteCall {
    const BATCHES: bool = true;

    async fn call(&self, op: WireOp) -> Result<WireReply, StoreError> {
        let id = self.host.shared.next_request_id();
        let t = self.host.now();
        self.host.record(Record::Request {
            t,
            local: t,
            host: self.host.name.clone(),
            id,
            op: op.summary(),
            merged: false,
        });
        let mut pending = Pending {
            host: &self.host,
            ids: vec![id],
            done: false,
        };
        let req = WireRequest {
            id,
            host: self.host.name.clone(),
            op,
        };
        let result = self.exchange::<WireReply>(id, WireMessage::One(req)).await;
        pending.done = true;
        self.host.record_answer(
            id,
            match &result {
                Ok(r) => r.summary(),
                Err(e) => Reply::Unavailable(e.clone()),
            },
        );
        match result {
            Ok(WireReply::Error(e)) => Err(e.into_store_error()),
            Ok(r) => Ok(r),
            Err(e) => Err(StoreError::Unavailable(e)),
        }
    }

    /// One worker's batch, merged with the node's other workers' (see
    /// [`crate::batch`]).
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

    fn work_available(&self, queue: &str) -> impl Future<Output = ()> + Send {
        // Subscribed here, when the worker asks (before its claim leaves).
        let sub = self.wake.as_ref().map(|w| w.subscribe(queue));
        async move {
            match sub {
                Some(s) => s.await,
                None => std::future::pending().await,
            }
        }
    }
}

/// The store node's software: one incarnation serving `store` on
/// [`STORE_ADDR`] until madsim kills the node.
pub async fn serve_store(host: Host, store: Arc<MemoryStore>) {
    let ep = Endpoint::bind(STORE_ADDR)
        .await
        .expect("the store's address is free on a fresh incarnation");
    loop {
        let Ok((payload, from)) = ep.recv_from_raw(REQUEST_TAG).await else {
            return;
        };
        let Ok(msg) = payload.downcast::<WireMessage>() else {
            continue;
        };
        let (host, store, ep) = (host.clone(), store.clone(), ep.clone());
        host.rt().clone().spawn(Box::pin(async move {
            serve(host, store, ep, *msg, from).await;
        }));
    }
}

async fn serve(
    host: Host,
    store: Arc<MemoryStore>,
    ep: Endpoint,
    msg: WireMessage,
    from: SocketAddr,
) {
    let t = host.now();
    let store_time = store.now().await.unwrap_or(StoreTime(0));
    let served = |id: u64, sender: &str, reply: &WireReply, after: Vec<ReadRow>| {
        for row in &after {
            host.shared.anchor(row.job, row.version, t, id);
        }
        host.record(Record::Served {
            t,
            store_time,
            id,
            host: sender.to_string(),
            // Whether madsim loses the answer on its way is not known
            // here; a lost answer shows as the caller's `Unavailable`.
            fate: Fate::Answered,
            reply: Some(reply.summary()),
            after,
        });
    };
    match msg {
        WireMessage::One(req) => {
            let reply = apply(&*store, req.op.clone()).await;
            let after = touched(&*store, &req.op, &reply).await;
            served(req.id, &req.host, &reply, after);
            let _ = ep.send_to_raw(from, req.id, Box::new(reply)).await;
        }
        WireMessage::Batch(b) => {
            // Answered under its first part's id (see `crate::batch`).
            let Some(tag) = b.parts.first().map(|(id, _)| *id) else {
                return;
            };
            let sender = b.host.clone();
            // The store's own `batch`: every part under one lock.
            let parts = apply_batch(&*store, b).await;
            let mut replies = Vec::with_capacity(parts.len());
            for (id, reply, after) in parts {
                served(id, &sender, &reply, after);
                replies.push(reply);
            }
            let _ = ep.send_to_raw(from, tag, Box::new(replies)).await;
        }
    }
}
