//! `RemoteStore`: the [`Store`](leasehold_core::Store) workers, sweepers and
//! the client use, over the simulated network: the model's [`WireStore`]
//! table on a [`RemoteCall`], which carries each request over turmoil TCP.
//!
//! A worker's batch ([`Store::batch`](leasehold_core::Store::batch)) travels
//! as one message and is recorded as its parts, each a request and an
//! answer of its own (see [`WireMessage::Batch`]).
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

use super::wire::{
    read_frame, write_frame, WireBatch, WireMessage, WireOp, WireReply, WireRequest, STORE_PORT,
};
use crate::history::{Op, Record, Reply};
use crate::hosts::runtime::{sleep_until_true, true_now_ms, HostRuntime};
use leasehold_core::{BatchAnswer, BatchRequest, Millis, Runtime, StoreError, StoreTime};
use leasehold_model::wire_store::{WireCall, WireStore};
use serde::de::DeserializeOwned;
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

/// Records "no answer" for each of its requests if a call is dropped before
/// it finished (the caller timed out), unless the host is being killed.
struct Pending<'a> {
    rt: &'a HostRuntime,
    ids: Vec<u64>,
    done: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.done && !self.rt.shared().is_crashing() {
            let (t, local) = self.rt.times();
            for &id in &self.ids {
                self.rt.shared().record(Record::Answer {
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

async fn exchange<T: DeserializeOwned>(msg: &WireMessage) -> io::Result<T> {
    let mut s = TcpStream::connect(("store", STORE_PORT)).await?;
    write_frame(&mut s, msg).await?;
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

    /// Records a request per part, sends `msg` on a connection of its own
    /// and waits (at most [`SAFETY_TIMEOUT`]) for its answer. The caller
    /// records the answers; if it is dropped first, each part is recorded
    /// as given up.
    async fn send<T: DeserializeOwned + Send + 'static>(
        &self,
        parts: &[(u64, Op)],
        msg: WireMessage,
    ) -> Result<T, String> {
        let (t, local) = self.rt.times();
        for (id, op) in parts {
            self.rt.shared().record(Record::Request {
                t,
                local,
                host: self.rt.host().to_string(),
                id: *id,
                op: op.clone(),
            });
        }
        let mut pending = Pending {
            rt: &self.rt,
            ids: parts.iter().map(|(id, _)| *id).collect(),
            done: false,
        };
        // The exchange runs on its own, like bytes already handed to the
        // kernel: if the caller gives up, a held or queued request may
        // still reach the store late (and be executed there).
        let (tx, rx) = tokio::sync::oneshot::channel();
        let give_up = true_now_ms() + DETACHED_MAX_MS;
        self.rt.spawn(Box::pin(async move {
            let r = tokio::select! {
                biased;
                r = exchange::<T>(&msg) => r.map_err(|e| e.to_string()),
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
        result
    }

    fn record_answer(&self, id: u64, reply: Reply) {
        let (t, local) = self.rt.times();
        self.rt.shared().record(Record::Answer {
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

fn unexpected(r: WireReply) -> StoreError {
    StoreError::Corrupt(format!("unexpected answer {r:?}"))
}

impl WireCall for RemoteCall {
    const BATCHES: bool = true;

    fn sweep_wall(&self) -> Option<StoreTime> {
        self.send_wall_on_sweep.then(|| self.rt.wall())
    }

    async fn call(&self, op: WireOp) -> Result<WireReply, StoreError> {
        let id = self.rt.shared().next_request_id();
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

    /// The batch as one message: see [`WireMessage::Batch`].
    async fn call_batch(&self, req: BatchRequest) -> Result<BatchAnswer, StoreError> {
        let (n_releases, n_claims) = (req.releases.len(), req.claims.len());
        let shared = self.rt.shared().clone();
        let parts: Vec<(u64, WireOp)> = req
            .releases
            .into_iter()
            .map(WireOp::Release)
            .chain(req.claims.into_iter().map(WireOp::Claim))
            .map(|op| (shared.next_request_id(), op))
            .collect();
        let summaries: Vec<(u64, Op)> = parts.iter().map(|(id, op)| (*id, op.summary())).collect();
        let msg = WireMessage::Batch(WireBatch {
            host: self.rt.host().to_string(),
            parts,
        });
        let result = self
            .send::<Vec<WireReply>>(&summaries, msg)
            .await
            .and_then(|replies| {
                if replies.len() == summaries.len() {
                    Ok(replies)
                } else {
                    Err(format!(
                        "{} answers for a batch of {}",
                        replies.len(),
                        summaries.len()
                    ))
                }
            });
        let replies = match result {
            Ok(replies) => replies,
            Err(e) => {
                for (id, _) in &summaries {
                    self.record_answer(*id, Reply::Unavailable(e.clone()));
                }
                return Err(StoreError::Unavailable(e));
            }
        };
        for ((id, _), r) in summaries.iter().zip(&replies) {
            self.record_answer(*id, r.summary());
        }
        let mut answer = BatchAnswer {
            releases: Vec::with_capacity(n_releases),
            claims: Vec::with_capacity(n_claims),
        };
        for (i, r) in replies.into_iter().enumerate() {
            if i < n_releases {
                answer.releases.push(match r {
                    WireReply::Release(r) => Ok(r),
                    WireReply::Error(e) => Err(e.into_store_error()),
                    r => Err(unexpected(r)),
                });
            } else {
                answer.claims.push(match r {
                    WireReply::Leases(l) => Ok(l),
                    WireReply::Error(e) => Err(e.into_store_error()),
                    r => Err(unexpected(r)),
                });
            }
        }
        Ok(answer)
    }
}
