//! A worker process's store client that sends each part of a batch as a
//! call of its own (`topology.single_calls`), as a store client without a
//! batch of its own does: the trait's default `batch`
//! ([`leasehold_core::batch_by_parts`]), every release at once and then
//! every claim at once. A user's wrapper that does not forward `batch`, or
//! a user's own claim-and-release loop, reaches the store this way, and it
//! is the only way a claim or a release reaches the store alone: the
//! store host then serves single claims and releases, so the faults it
//! draws per request (`faults.conflict_on`, `faults.single_cancel`) reach
//! a claim sent alone, and on PostgreSQL they are answered through the
//! production `Coalescing` wrapper where the store offers it.
//!
//! Off (the default) the client forwards every call unchanged, so a
//! scenario without the option sends exactly what it sent before.

use crate::net::RemoteStore;
use leasehold_core::{
    batch_by_parts, forward_store, BatchAnswer, BatchRequest, Patience, StoreError,
};

/// A worker process's store client (see the module doc).
pub struct WorkerClient {
    inner: RemoteStore,
    single_calls: bool,
}

impl WorkerClient {
    /// The client over `inner`, sending a batch's parts alone when
    /// `single_calls`.
    pub fn new(inner: RemoteStore, single_calls: bool) -> Self {
        WorkerClient {
            inner,
            single_calls,
        }
    }
}

forward_store! {
    impl[] Store for WorkerClient, |self| self.inner;
    // Both batch calls: a batch goes out as one message unless the
    // scenario asks for single calls.
    except [batch, batch_within] {
        async fn batch(&self, req: BatchRequest) -> Result<BatchAnswer, StoreError> {
            if self.single_calls {
                batch_by_parts(self, req).await
            } else {
                self.inner.batch(req).await
            }
        }
        async fn batch_within(
            &self,
            req: BatchRequest,
            patience: Patience,
        ) -> Result<BatchAnswer, StoreError> {
            if self.single_calls {
                patience.run(batch_by_parts(self, req)).await
            } else {
                self.inner.batch_within(req, patience).await
            }
        }
    }
}
