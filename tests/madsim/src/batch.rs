//! A worker node's batches over madsim's network: its workers'
//! [`Store::batch`](leasehold_core::Store::batch) calls merge in the
//! production [`BatchMerger`](leasehold_core::BatchMerger) (as the SQL
//! adapters merge them into one transaction), and each merged batch
//! travels to the store node as ONE madsim message, is served by the
//! store's own `batch` and answered by one message, under its first part's
//! request id. madsim loses, delays or cuts it as a whole.
//!
//! Each worker's part is recorded as requests of its own when the worker
//! asks (`merged`), the merged message as a `sent` record when it leaves
//! (the checker needs it to tell a request that waited behind a merged
//! batch a fault took from one that failed alone), and each worker's
//! answers when that worker gets them: a worker that gave up never got
//! them, even if another worker of its node did. The same records as the
//! simulator's worker process (`leasehold-sim`), so one checker judges
//! both.

use crate::net::{Pending, RemoteCall};
use leasehold_core::{BatchAnswer, BatchRequest, Patience, StoreError};
use leasehold_model::history::{Op, Record, Reply};
use leasehold_model::wire::{WireBatch, WireError, WireMessage, WireOp, WireReply};
use leasehold_model::wire_store::wire;
use std::sync::{Mutex, MutexGuard};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl RemoteCall {
    /// One worker's batch, waited for with `patience` if any, as the SQL
    /// adapters' merger does.
    pub(crate) async fn merged_batch(
        &self,
        req: BatchRequest,
        patience: Option<Patience>,
    ) -> Result<BatchAnswer, StoreError> {
        let host = &self.host;
        let n_releases = req.releases.len();
        let ops: Vec<Op> = req
            .releases
            .iter()
            .map(|r| WireOp::Release(r.clone()).summary())
            .chain(
                req.claims
                    .iter()
                    .map(|c| WireOp::Claim(c.clone()).summary()),
            )
            .collect();
        if ops.is_empty() {
            return Ok(BatchAnswer::default());
        }
        let ids: Vec<u64> = ops.iter().map(|_| host.shared.next_request_id()).collect();
        let t = host.now();
        for (id, op) in ids.iter().zip(ops) {
            host.record(Record::Request {
                t,
                local: t,
                host: host.name.clone(),
                id: *id,
                op,
                merged: true,
            });
        }
        let mut pending = Pending {
            host,
            ids: ids.clone(),
            done: false,
        };
        // Queued in the merger's order: the merger takes a prefix of its
        // queue, and `send_merged` takes the same prefix of these.
        lock(&self.queued).push_back((n_releases, ids.clone()));
        let run = |r| self.send_merged(r);
        let expired = patience.as_ref().map(Patience::expired);
        let answer = match patience {
            Some(p) => {
                // A request withdrawn from the merger's queue leaves this
                // record of its order too, at the same moment.
                let mut withdrawn = || {
                    let mut q = lock(&self.queued);
                    if let Some(i) = q.iter().position(|(_, mine)| *mine == ids) {
                        q.remove(i);
                    }
                };
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
        let replies: Vec<WireReply> = match &answer {
            Ok(a) => a
                .releases
                .iter()
                .map(|r| wire(r.clone(), WireReply::Release))
                .chain(a.claims.iter().map(|c| wire(c.clone(), WireReply::Leases)))
                .collect(),
            Err(e) => vec![WireReply::Error(WireError::of(e)); ids.len()],
        };
        for (i, id) in ids.iter().enumerate() {
            let reply = replies.get(i).map_or_else(
                || Reply::Unavailable("no answer for this part".into()),
                WireReply::summary,
            );
            host.record_answer(*id, reply);
        }
        answer
    }

    /// The request ids of the merged batch `req`: the oldest queued
    /// callers' ids whose parts add up to its parts, releases first (in
    /// caller order), then claims.
    fn merged_ids(&self, req: &BatchRequest) -> Vec<u64> {
        let want = req.releases.len() + req.claims.len();
        let mut q = lock(&self.queued);
        let (mut releases, mut claims) = (Vec::new(), Vec::new());
        // Bounded by the queue: each turn takes one caller's ids.
        while releases.len() + claims.len() < want {
            let Some((nr, ids)) = q.pop_front() else {
                break;
            };
            releases.extend_from_slice(&ids[..nr]);
            claims.extend_from_slice(&ids[nr..]);
        }
        releases.extend(claims);
        releases
    }

    /// A merged batch as one message, its parts under the ids their
    /// callers recorded. Records only that the message left
    /// ([`Record::Sent`]): each caller records its own answers.
    async fn send_merged(&self, req: BatchRequest) -> Result<BatchAnswer, StoreError> {
        let (n_releases, n_claims) = (req.releases.len(), req.claims.len());
        let ids = self.merged_ids(&req);
        let n = n_releases + n_claims;
        if ids.len() != n {
            return Err(StoreError::Corrupt(format!(
                "{} request ids for a merged batch of {n}",
                ids.len()
            )));
        }
        let Some(&tag) = ids.first() else {
            return Ok(BatchAnswer::default());
        };
        let host = &self.host;
        let t = host.now();
        host.record(Record::Sent {
            t,
            local: t,
            host: host.name.clone(),
            ids: ids.clone(),
        });
        let parts: Vec<(u64, WireOp)> = ids
            .into_iter()
            .zip(
                req.releases
                    .into_iter()
                    .map(WireOp::Release)
                    .chain(req.claims.into_iter().map(WireOp::Claim)),
            )
            .collect();
        let msg = WireMessage::Batch(WireBatch {
            host: host.name.clone(),
            parts,
        });
        let replies = self
            .exchange::<Vec<WireReply>>(tag, msg)
            .await
            .and_then(|replies| {
                if replies.len() == n {
                    Ok(replies)
                } else {
                    Err(format!("{} answers for a batch of {n}", replies.len()))
                }
            })
            .map_err(StoreError::Unavailable)?;
        let mut answer = BatchAnswer {
            releases: Vec::with_capacity(n_releases),
            claims: Vec::with_capacity(n_claims),
        };
        let unexpected = |r: WireReply| StoreError::Corrupt(format!("unexpected answer {r:?}"));
        for (i, r) in replies.into_iter().enumerate() {
            match r {
                WireReply::Error(e) if i < n_releases => {
                    answer.releases.push(Err(e.into_store_error()))
                }
                WireReply::Release(r) if i < n_releases => answer.releases.push(Ok(r)),
                r if i < n_releases => answer.releases.push(Err(unexpected(r))),
                WireReply::Error(e) => answer.claims.push(Err(e.into_store_error())),
                WireReply::Leases(l) => answer.claims.push(Ok(l)),
                r => answer.claims.push(Err(unexpected(r))),
            }
        }
        Ok(answer)
    }
}
