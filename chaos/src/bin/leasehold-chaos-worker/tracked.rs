//! One `Worker`'s view of the process's shared store.
//!
//! CHAOS ONLY (a production process hands every Worker the same
//! `Arc<Store>`): each call passes straight through to the shared store,
//! and its writes are counted on the process's in-flight board while they
//! are out, so the nemesis can aim `kill-merged` and `kill-writer-queued`.
//! Merging is untouched: every Worker's `batch` still reaches the one
//! store and its `BatchMerger`.

use leasehold_chaos::inflight::{Call, InFlightBoard};
use leasehold_core::forward_store;
use leasehold_core::{
    BatchAnswer, BatchRequest, ClaimRequest, Lease, Patience, Release, ReleaseRequest,
    RenewRequest, Renewal, Store, StoreError,
};
use std::sync::Arc;

/// Worker `index`'s handle on the shared store `S`.
pub struct Tracked<S> {
    inner: Arc<S>,
    index: usize,
    board: Arc<InFlightBoard>,
}

impl<S> Tracked<S> {
    /// Worker `index`'s view of `inner`, counted on `board`.
    pub fn new(inner: Arc<S>, index: usize, board: Arc<InFlightBoard>) -> Self {
        Tracked {
            inner,
            index,
            board,
        }
    }
}

forward_store! {
    impl[S: Store] Store for Tracked<S>, |self| self.inner;
    except [claim, renew, release, batch, batch_within, work_available] {
        async fn claim(&self, req: ClaimRequest) -> Result<Vec<Lease>, StoreError> {
            let _out = self.board.enter(self.index, Call::Write);
            self.inner.claim(req).await
        }
        async fn renew(&self, req: RenewRequest) -> Result<Renewal, StoreError> {
            let _out = self.board.enter(self.index, Call::Write);
            self.inner.renew(req).await
        }
        async fn release(&self, req: ReleaseRequest) -> Result<Release, StoreError> {
            let _out = self.board.enter(self.index, Call::Write);
            self.inner.release(req).await
        }
        async fn batch(&self, req: BatchRequest) -> Result<BatchAnswer, StoreError> {
            let _out = self.board.enter(self.index, Call::Batch);
            self.inner.batch(req).await
        }
        async fn batch_within(
            &self,
            req: BatchRequest,
            patience: Patience,
        ) -> Result<BatchAnswer, StoreError> {
            let _out = self.board.enter(self.index, Call::Batch);
            self.inner.batch_within(req, patience).await
        }
        fn work_available(&self, queue: &str) -> impl std::future::Future<Output = ()> + Send {
            // The shared store's wake-ups: its LISTEN connection on PostgreSQL.
            self.inner.work_available(queue)
        }
    }
}
