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

use crate::world::Host;
use leasehold_core::{Millis, Runtime, Store, StoreError, StoreTime};
use leasehold_memory::MemoryStore;
use leasehold_model::history::{Fate, Record, Reply};
use leasehold_model::wire::{WireOp, WireReply, WireRequest};
use leasehold_model::wire_store::{apply, touched, WireCall, WireStore};
use madsim::net::Endpoint;
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
    host: Host,
    ep: Endpoint,
}

/// Records "no answer" if a call is dropped before it finished (its caller
/// timed out), unless the node was killed.
struct Pending<'a> {
    host: &'a Host,
    id: u64,
    done: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.done {
            let t = self.host.now();
            self.host.record(Record::Answer {
                t,
                local: t,
                host: self.host.name.clone(),
                id: self.id,
                reply: Reply::Unavailable("caller gave up waiting".into()),
            });
        }
    }
}

/// A remote store for `host` (binds an ephemeral endpoint on its node).
pub async fn connect(host: Host) -> std::io::Result<RemoteStore> {
    let ep = Endpoint::bind("0.0.0.0:0").await?;
    Ok(WireStore::new(RemoteCall { host, ep }))
}

impl WireCall for RemoteCall {
    async fn call(&self, op: WireOp) -> Result<WireReply, StoreError> {
        let shared = &self.host.shared;
        let id = shared.next_request_id();
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
            id,
            done: false,
        };
        let req = WireRequest {
            id,
            host: self.host.name.clone(),
            op,
        };
        let exchange = async {
            self.ep
                .send_to_raw(store_addr(), REQUEST_TAG, Box::new(req))
                .await?;
            let (payload, _) = self.ep.recv_from_raw(id).await?;
            payload
                .downcast::<WireReply>()
                .map(|r| *r)
                .map_err(|_| std::io::Error::other("not an answer"))
        };
        let result = tokio::select! {
            biased;
            r = exchange => r.map_err(|e| e.to_string()),
            _ = self.host.rt().sleep(SAFETY_TIMEOUT) => Err(format!("no answer within {SAFETY_TIMEOUT}")),
        };
        pending.done = true;
        let t = self.host.now();
        self.host.record(Record::Answer {
            t,
            local: t,
            host: self.host.name.clone(),
            id,
            reply: match &result {
                Ok(r) => r.summary(),
                Err(e) => Reply::Unavailable(e.clone()),
            },
        });
        match result {
            Ok(WireReply::Error(e)) => Err(e.into_store_error()),
            Ok(r) => Ok(r),
            Err(e) => Err(StoreError::Unavailable(e)),
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
        let Ok(req) = payload.downcast::<WireRequest>() else {
            continue;
        };
        let (host, store, ep) = (host.clone(), store.clone(), ep.clone());
        host.rt().clone().spawn(Box::pin(async move {
            serve(host, store, ep, *req, from).await;
        }));
    }
}

async fn serve(
    host: Host,
    store: Arc<MemoryStore>,
    ep: Endpoint,
    req: WireRequest,
    from: SocketAddr,
) {
    let t = host.now();
    let store_time = store.now().await.unwrap_or(StoreTime(0));
    let op = req.op.clone();
    let reply = apply(&*store, op.clone()).await;
    let after = touched(&store, &op, &reply).await;
    for row in &after {
        host.shared.anchor(row.job, row.version, t, req.id);
    }
    host.record(Record::Served {
        t,
        store_time,
        id: req.id,
        host: req.host,
        // Whether madsim loses the answer on its way is not known here; a
        // lost answer shows as the caller's `Unavailable`.
        fate: Fate::Answered,
        reply: Some(reply.summary()),
        after,
    });
    let _ = ep.send_to_raw(from, req.id, Box::new(reply)).await;
}
