//! Store wrappers that time calls: [`Timed`] every call carrying a claim,
//! as the `Worker` sees it (a `batch` of releases and claims, possibly
//! merged with other workers' batches by the store), [`TimedPrune`] every
//! `prune`, each into a histogram that the bench reads and resets between
//! its measured intervals. They change nothing they forward.

use hdrhistogram::Histogram;
use leasehold_core::{
    forward_store, BatchAnswer, BatchRequest, ClaimRequest, JobId, Lease, Patience, PruneRequest,
    Store, StoreError,
};
use std::sync::Mutex;
use std::time::Instant;

/// Call latencies, µs.
pub struct ClaimClock(Mutex<Histogram<u64>>);

impl ClaimClock {
    /// An empty clock.
    pub fn new() -> Self {
        ClaimClock(Mutex::new(
            Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("constant bounds are valid"),
        ))
    }

    fn record(&self, since: Instant) {
        if let Ok(mut h) = self.0.lock() {
            h.saturating_record((since.elapsed().as_micros() as u64).max(1));
        }
    }

    /// Takes what was recorded since the last take: (calls, p50, p99,
    /// max), µs.
    pub fn take(&self) -> (u64, u64, u64, u64) {
        let Ok(mut h) = self.0.lock() else {
            return (0, 0, 0, 0);
        };
        let r = (
            h.len(),
            h.value_at_quantile(0.5),
            h.value_at_quantile(0.99),
            h.max(),
        );
        h.reset();
        r
    }
}

/// `S`, with every call that claims timed into a [`ClaimClock`].
pub struct Timed<S> {
    /// The store measured.
    pub inner: std::sync::Arc<S>,
    /// Where the latencies go.
    pub clock: std::sync::Arc<ClaimClock>,
}

forward_store! {
    impl[S: Store] Store for Timed<S>, |self| self.inner;
    // All three carry claims; each is timed and forwarded unchanged (the
    // store's own `batch_within` keeps its merged-batch patience).
    except [claim, batch, batch_within] {
        async fn claim(&self, req: ClaimRequest) -> Result<Vec<Lease>, StoreError> {
            let t = Instant::now();
            let r = self.inner.claim(req).await;
            self.clock.record(t);
            r
        }
        async fn batch(&self, req: BatchRequest) -> Result<BatchAnswer, StoreError> {
            let claims = !req.claims.is_empty();
            let t = Instant::now();
            let r = self.inner.batch(req).await;
            if claims {
                self.clock.record(t);
            }
            r
        }
        async fn batch_within(
            &self,
            req: BatchRequest,
            patience: Patience,
        ) -> Result<BatchAnswer, StoreError> {
            let claims = !req.claims.is_empty();
            let t = Instant::now();
            let r = self.inner.batch_within(req, patience).await;
            if claims {
                self.clock.record(t);
            }
            r
        }
    }
}

/// `S`, with every `prune` call timed into a [`ClaimClock`].
pub struct TimedPrune<S> {
    /// The store measured.
    pub inner: std::sync::Arc<S>,
    /// Where the latencies go.
    pub clock: std::sync::Arc<ClaimClock>,
}

forward_store! {
    impl[S: Store] Store for TimedPrune<S>, |self| self.inner;
    except [prune] {
        async fn prune(&self, req: PruneRequest) -> Result<Vec<JobId>, StoreError> {
            let t = Instant::now();
            let r = self.inner.prune(req).await;
            self.clock.record(t);
            r
        }
    }
}
