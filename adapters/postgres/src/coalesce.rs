//! A [`Store`] that coalesces concurrent claims and releases into batches.
//!
//! Many workers in one process (or many lease tasks of one worker) each
//! send small claims and single releases; every one would be its own
//! transaction and commit. [`Coalescing`] queues them and a few flusher
//! tasks answer whatever is queued with one [`PgStore::claim_many`] or
//! [`PgStore::release_many`] transaction. Each request keeps its own answer,
//! exactly as the store would have given it alone: the batch methods apply
//! the same core transitions per request.
//!
//! A failed batch answers every request in it with the same error
//! (`Unavailable`: unknown outcome), and callers retry as they would after
//! any unknown outcome. A caller that gives up waiting (a timeout) leaves
//! its request queued: like a request whose answer was lost in the network,
//! it may still be applied.

use crate::PgStore;
use leasehold_core::forward_store;
use leasehold_core::statement_gate;
use leasehold_core::transition;
use leasehold_core::{
    BatchAnswer, BatchRequest, ClaimRequest, Lease, Release, ReleaseRequest, StoreError,
};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, Mutex};

/// Default most requests answered by one batch.
pub const DEFAULT_COALESCE_BATCH: usize = 500;
/// Default flusher tasks per kind of request (claims, releases).
pub const DEFAULT_FLUSHERS: usize = 2;
/// Most requests waiting in each queue; senders wait beyond it.
pub const COALESCE_QUEUE_CAP: usize = 65_536;

struct Pending<Q, A> {
    req: Q,
    reply: oneshot::Sender<Result<A, StoreError>>,
}

type Queue<Q, A> = Arc<Mutex<mpsc::Receiver<Pending<Q, A>>>>;

/// A [`PgStore`] whose claims and releases are answered in batches. Make it
/// with [`Coalescing::new`] inside a tokio runtime (it spawns its flushers,
/// which stop when it is dropped).
pub struct Coalescing {
    store: Arc<PgStore>,
    claims: mpsc::Sender<Pending<ClaimRequest, Vec<Lease>>>,
    releases: mpsc::Sender<Pending<ReleaseRequest, Release>>,
}

/// Takes the first waiting request (waiting for one), then whatever else is
/// queued, up to `max`. `None` once every sender is gone.
async fn next_batch<Q, A>(queue: &Queue<Q, A>, max: usize) -> Option<Vec<Pending<Q, A>>> {
    let mut rx = queue.lock().await;
    let first = rx.recv().await?;
    let mut batch = vec![first];
    while batch.len() < max {
        match rx.try_recv() {
            Ok(p) => batch.push(p),
            Err(_) => break,
        }
    }
    Some(batch)
}

/// Hands each request of `batch` its answer from `result` (the same error
/// to every one when the batch failed). `reversed`: the catalogue's
/// `coalesced-answers-reversed`, answers handed back in reverse order.
fn answer<Q, A>(
    batch: Vec<Pending<Q, A>>,
    result: Result<Vec<Result<A, StoreError>>, StoreError>,
    reversed: bool,
) {
    match result {
        Ok(mut answers) => {
            if reversed {
                answers.reverse();
            }
            debug_assert_eq!(answers.len(), batch.len(), "one answer per request");
            for (p, a) in batch.into_iter().zip(answers) {
                let _ = p.reply.send(a);
            }
        }
        Err(e) => {
            for p in batch {
                let _ = p.reply.send(Err(e.clone()));
            }
        }
    }
}

impl Coalescing {
    /// Coalesces `store`'s claims and releases, at most `max_batch` requests
    /// per transaction, with `flushers` transactions of each kind in flight.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn new(store: Arc<PgStore>, max_batch: usize, flushers: usize) -> Self {
        let max_batch = max_batch.max(1);
        #[cfg(feature = "buggy-variants")]
        let reversed = store
            .variant
            .is(leasehold_core::variants::Variant::CoalescedAnswersReversed);
        #[cfg(not(feature = "buggy-variants"))]
        let reversed = false;
        let (claims, claim_rx) = mpsc::channel(COALESCE_QUEUE_CAP);
        let (releases, release_rx) = mpsc::channel(COALESCE_QUEUE_CAP);
        let claim_rx: Queue<ClaimRequest, Vec<Lease>> = Arc::new(Mutex::new(claim_rx));
        let release_rx: Queue<ReleaseRequest, Release> = Arc::new(Mutex::new(release_rx));
        for _ in 0..flushers.max(1) {
            // Under the simulator's statement scheduler the flushers'
            // transactions reach the gate of the call that made the
            // wrapper (`carried`); in production there is none.
            let (s, q) = (store.clone(), claim_rx.clone());
            tokio::spawn(statement_gate::carried(async move {
                while let Some(batch) = next_batch(&q, max_batch).await {
                    let reqs: Vec<ClaimRequest> = batch.iter().map(|p| p.req.clone()).collect();
                    answer(batch, s.claim_many(&reqs).await, reversed);
                }
            }));
            let (s, q) = (store.clone(), release_rx.clone());
            tokio::spawn(statement_gate::carried(async move {
                while let Some(batch) = next_batch(&q, max_batch).await {
                    let reqs: Vec<ReleaseRequest> = batch.iter().map(|p| p.req.clone()).collect();
                    answer(batch, s.release_many(&reqs).await, reversed);
                }
            }));
        }
        Coalescing {
            store,
            claims,
            releases,
        }
    }

    /// The store underneath (for the operations that are not coalesced).
    pub fn inner(&self) -> &PgStore {
        &self.store
    }

    async fn submit<Q, A>(tx: &mpsc::Sender<Pending<Q, A>>, req: Q) -> Result<A, StoreError> {
        let (reply, answer) = oneshot::channel();
        tx.send(Pending { req, reply })
            .await
            .map_err(|_| StoreError::Unavailable("coalescer stopped".into()))?;
        answer
            .await
            .map_err(|_| StoreError::Unavailable("coalescer dropped the request".into()))?
    }
}

forward_store! {
    impl[] Store for Coalescing, |self| self.store;
    except [claim, release, batch] {
        async fn claim(&self, req: ClaimRequest) -> Result<Vec<Lease>, StoreError> {
            // Bad input is answered at once and never joins a batch.
            transition::validate_claim(&req.queue, req.lease, req.max, self.store.policy())?;
            Self::submit(&self.claims, req).await
        }
        async fn release(&self, req: ReleaseRequest) -> Result<Release, StoreError> {
            Self::submit(&self.releases, req).await
        }
        async fn batch(&self, req: BatchRequest) -> Result<BatchAnswer, StoreError> {
            // A worker's batch is already one transaction.
            self.store.batch(req).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{next_batch, Pending, Queue};
    use std::sync::Arc;
    use tokio::sync::{mpsc, oneshot, Mutex};

    /// A batch takes what is queued, never more than its cap, and the rest
    /// waits for the next one; `None` once the senders are gone.
    #[tokio::test]
    async fn a_batch_takes_what_is_queued_up_to_its_cap() {
        let (tx, rx) = mpsc::channel(16);
        let queue: Queue<u32, ()> = Arc::new(Mutex::new(rx));
        let mut replies = Vec::new();
        for req in 0..5 {
            let (reply, answer) = oneshot::channel();
            replies.push(answer);
            tx.send(Pending { req, reply }).await.expect("queued");
        }
        let reqs = |b: Vec<Pending<u32, ()>>| b.into_iter().map(|p| p.req).collect::<Vec<_>>();
        let first = next_batch(&queue, 3).await.expect("a batch");
        assert_eq!(reqs(first), [0, 1, 2]);
        let second = next_batch(&queue, 3).await.expect("a batch");
        assert_eq!(reqs(second), [3, 4]);
        drop(tx);
        assert!(next_batch(&queue, 3).await.is_none());
    }
}
