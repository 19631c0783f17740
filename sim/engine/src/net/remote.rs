//! `RemoteStore`: the [`Store`](leasehold_core::Store) workers, sweepers and
//! the client use, over the simulated network: the model's [`WireStore`]
//! table on a [`RemoteCall`], which carries each request over turmoil TCP.
//!
//! Every call is recorded (request, then answer or failure). A call whose
//! answer does not arrive returns [`StoreError::Unavailable`]: the outcome
//! is unknown, exactly as in production. The core bounds each call with its
//! own timeout; the remote store adds a safety bound of its own so no call
//! can wait forever.
//!
//! The connection itself outlives a caller that gave up (for at most
//! [`DETACHED_MAX_MS`]): a request held by the network, or queued at a
//! paused store, is still delivered and executed late, which is how stale
//! releases and late renewals reach a store in production.

use super::wire::{read_frame, write_frame, WireOp, WireReply, WireRequest, STORE_PORT};
use crate::history::{Record, Reply};
use crate::hosts::runtime::{sleep_until_true, true_now_ms, HostRuntime};
use leasehold_core::{Millis, Runtime, StoreError, StoreTime};
use leasehold_model::wire_store::{WireCall, WireStore};
use std::io;
use turmoil::net::TcpStream;

/// Longest any remote call may take before it counts as unknown, on the
/// caller's clock (the core's own timeouts are shorter).
pub const SAFETY_TIMEOUT: Millis = Millis(20_000);
/// Longest a request's connection lives on after its caller gave up.
pub const DETACHED_MAX_MS: u64 = 60_000;

/// A store reached over the simulated network.
pub type RemoteStore = WireStore<RemoteCall>;

/// Carries a host's requests to the store host over simulated TCP, and
/// records each request and its answer.
pub struct RemoteCall {
    rt: HostRuntime,
    send_wall_on_sweep: bool,
}

/// Records "no answer" if a call is dropped before it finished (the caller
/// timed out), unless the host is being killed.
struct Pending<'a> {
    rt: &'a HostRuntime,
    id: u64,
    done: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.done && !self.rt.shared().is_crashing() {
            let (t, local) = self.rt.times();
            self.rt.shared().record(Record::Answer {
                t,
                local,
                host: self.rt.host().to_string(),
                id: self.id,
                reply: Reply::Unavailable("caller gave up waiting".into()),
            });
        }
    }
}

async fn exchange(req: &WireRequest) -> io::Result<WireReply> {
    let mut s = TcpStream::connect(("store", STORE_PORT)).await?;
    write_frame(&mut s, req).await?;
    read_frame(&mut s).await
}

impl RemoteCall {
    /// The carrier of the host of `rt`; `send_wall_on_sweep` makes sweeps
    /// carry this host's wall clock (the `sweeper-own-clock` bug).
    pub fn new(rt: HostRuntime, send_wall_on_sweep: bool) -> Self {
        RemoteCall {
            rt,
            send_wall_on_sweep,
        }
    }
}

/// A remote store for the host of `rt` (see [`RemoteCall::new`]).
pub fn remote_store(rt: HostRuntime, send_wall_on_sweep: bool) -> RemoteStore {
    WireStore::new(RemoteCall::new(rt, send_wall_on_sweep))
}

impl WireCall for RemoteCall {
    fn sweep_wall(&self) -> Option<StoreTime> {
        self.send_wall_on_sweep.then(|| self.rt.wall())
    }

    async fn call(&self, op: WireOp) -> Result<WireReply, StoreError> {
        let shared = self.rt.shared().clone();
        let id = shared.next_request_id();
        let host = self.rt.host().to_string();
        let (t, local) = self.rt.times();
        shared.record(Record::Request {
            t,
            local,
            host: host.clone(),
            id,
            op: op.summary(),
        });
        let mut pending = Pending {
            rt: &self.rt,
            id,
            done: false,
        };
        let req = WireRequest {
            id,
            host: host.clone(),
            op,
        };
        // The exchange runs on its own, like bytes already handed to the
        // kernel: if the caller gives up, a held or queued request may
        // still reach the store late (and be executed there).
        let (tx, rx) = tokio::sync::oneshot::channel();
        let give_up = true_now_ms() + DETACHED_MAX_MS;
        self.rt.spawn(Box::pin(async move {
            let r = tokio::select! {
                biased;
                r = exchange(&req) => r.map_err(|e| e.to_string()),
                _ = sleep_until_true(give_up) => Err("connection abandoned".to_string()),
            };
            let _ = tx.send(r);
        }));
        let result = tokio::select! {
            biased;
            r = rx => r.unwrap_or_else(|_| Err("exchange ended without an answer".into())),
            _ = self.rt.sleep(SAFETY_TIMEOUT) => Err(format!("no answer within {SAFETY_TIMEOUT}")),
        };
        pending.done = true;
        let (t, local) = self.rt.times();
        let reply = match &result {
            Ok(r) => r.summary(),
            Err(e) => Reply::Unavailable(e.clone()),
        };
        shared.record(Record::Answer {
            t,
            local,
            host,
            id,
            reply,
        });
        match result {
            Ok(WireReply::Error(e)) => Err(e.into_store_error()),
            Ok(r) => Ok(r),
            Err(e) => Err(StoreError::Unavailable(e)),
        }
    }
}
