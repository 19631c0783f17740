//! A store that owns a guard (a temp directory, a schema) dropped after it.

use leasehold_core::forward_store;
use leasehold_core::Store;

/// `store`, with `guard` dropped after it (fields drop in order).
pub struct Guarded<S, G> {
    pub(crate) store: S,
    pub(crate) _guard: G,
}

impl<S, G> Guarded<S, G> {
    /// Wraps `store` so that `guard` lives exactly as long.
    pub fn new(store: S, guard: G) -> Self {
        Guarded {
            store,
            _guard: guard,
        }
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.store
    }
}

// `batch` forwarded too, not the trait's one-by-one default: the
// conformance batch cases must reach the adapters' own one-transaction
// batches.
forward_store!(impl[S: Store, G: Send + Sync + 'static] Store for Guarded<S, G>, |self| self.store);
