//! The soak's view of every prune: a store wrapper under the `Pruner`
//! that hands each `Store::prune` answer to the [`Ledger`] as it arrives.
//! `Pruner::prune_once` names every id its calls pruned, even when a
//! later call of the same wake-up fails (`PruneFailure`), but a call it
//! abandons at its request timeout answers nobody; the store's answer to
//! each call is checked here as it arrives. A call the
//! Pruner abandons (its request timeout drops it) is counted: its rows
//! may or may not have gone, and the end report says how many such calls
//! there were. It changes nothing it forwards.

use crate::soak_ledger::{Ledger, PruneTally};
use leasehold_core::{forward_store, JobId, PruneRequest, Store, StoreError};
use std::sync::{Arc, Mutex};

/// `S`, with every prune answer checked against the ledger.
pub struct Answered<S> {
    /// The store pruned.
    pub inner: Arc<S>,
    /// What the handler saw.
    pub ledger: Arc<Ledger>,
    /// Where the checks go.
    pub tally: Arc<Mutex<PruneTally>>,
}

/// Counts a call dropped before its answer.
struct Pending(Option<Arc<Mutex<PruneTally>>>);

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            if let Ok(mut t) = t.lock() {
                t.abandoned_calls += 1;
            }
        }
    }
}

forward_store! {
    impl[S: Store] Store for Answered<S>, |self| self.inner;
    except [prune] {
        async fn prune(&self, req: PruneRequest) -> Result<Vec<JobId>, StoreError> {
            let mut pending = Pending(Some(self.tally.clone()));
            let r = self.inner.prune(req).await;
            pending.0 = None;
            if let Ok(mut t) = self.tally.lock() {
                match &r {
                    Ok(ids) => self.ledger.check_pruned(
                        ids,
                        self.ledger.now_ms(),
                        req.retention.0,
                        &mut t,
                    ),
                    Err(e) => {
                        t.failed_calls += 1;
                        t.last_error = Some(e.to_string());
                    }
                }
            }
            r
        }
    }
}
