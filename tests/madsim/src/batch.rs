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
//! both: the bookkeeping (part summaries, the queue of callers' ids, wire
//! parts, the rebuilt answer, each caller's replies) is the model's
//! [`merged_batch`], shared with it; only how they are recorded, sent and
//! awaited is here.

use crate::net::{Pending, RemoteCall};
use leasehold_core::{BatchAnswer, BatchRequest, Patience, StoreError};
use leasehold_model::history::Record;
use leasehold_model::merged_batch::{self, BatchShape};
use leasehold_model::wire::{WireBatch, WireMessage, WireReply};

impl RemoteCall {
    /// One worker's batch, waited for with `patience` if any, as the SQL
    /// adapters' merger does.
    pub(crate) async fn merged_batch(
        &self,
        req: BatchRequest,
        patience: Option<Patience>,
    ) -> Result<BatchAnswer, StoreError> {
        let host = &self.host;
        let ops = merged_batch::part_summaries(&req);
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
            host.record_answer(*id, reply);
        }
        answer
    }

    /// A merged batch as one message, its parts under the ids their
    /// callers recorded. Records only that the message left
    /// ([`Record::Sent`]): each caller records its own answers.
    async fn send_merged(&self, req: BatchRequest) -> Result<BatchAnswer, StoreError> {
        let shape = BatchShape::of(&req);
        let ids = self.queued.take(shape)?;
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
        let msg = WireMessage::Batch(WireBatch {
            host: host.name.clone(),
            parts: merged_batch::wire_parts(ids, req),
        });
        let replies = self
            .exchange::<Vec<WireReply>>(tag, msg)
            .await
            .map_err(StoreError::Unavailable)?;
        shape.answer(replies)
    }
}
