//! [`Patience`]: how long a caller waits for its [`Store::batch_within`]
//! answer, as timers on the caller's own clock.
//!
//! A caller waits at most `limit`; past it the outcome counts as unknown
//! ([`StoreError::Unavailable`]), as for the `Worker`'s other requests. One
//! exception: once a merged batch (see [`crate::BatchMerger`]) carries the
//! caller's request together with others', the caller waits for that batch,
//! for at most one more `limit`, and the caller running it finishes it.
//! Giving up there would throw the other callers' parts away, or leave
//! leases that committed with no one to take them, swept later as crashes
//! of live workers.
//!
//! Invariants:
//! - no caller waits longer than `2 × limit`, and only a caller whose
//!   request a merged batch of several callers carries waits past `limit`;
//! - the first timer is made when the `Patience` is, the grace timer only
//!   once the limit passed mid-batch (a caller that never runs late makes
//!   the same timers as a plain timeout would).
//!
//! [`Store::batch_within`]: crate::Store::batch_within

use crate::clock::{BoxFuture, Runtime};
use crate::error::StoreError;
use crate::time::Millis;

/// The timers of one caller's wait. See the module docs.
pub struct Patience {
    limit: Millis,
    first: BoxFuture<()>,
    sleep: Box<dyn Fn(Millis) -> BoxFuture<()> + Send + Sync>,
}

impl std::fmt::Debug for Patience {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Patience")
            .field("limit", &self.limit)
            .finish()
    }
}

impl Patience {
    /// Waits at most `limit` on `rt`'s clock, starting now.
    pub fn new<R: Runtime>(rt: &R, limit: Millis) -> Self {
        let first = rt.sleep(limit);
        let rt = rt.clone();
        Patience {
            limit,
            first,
            sleep: Box::new(move |d| rt.sleep(d)),
        }
    }

    /// The answer of a caller that stopped waiting.
    pub fn expired(&self) -> StoreError {
        expired_after(self.limit)
    }

    /// How long the caller waits before its grace, if any.
    pub(crate) fn limit(&self) -> Millis {
        self.limit
    }

    /// Splits into the limit's timer and the maker of the grace timer.
    pub(crate) fn into_parts(self) -> (BoxFuture<()>, Grace) {
        (
            self.first,
            Grace {
                limit: self.limit,
                sleep: self.sleep,
            },
        )
    }

    /// Runs `request` until it answers or the limit passes (no grace: for
    /// a store that runs no batch for other callers).
    pub async fn run<T>(
        self,
        request: impl std::future::Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        tokio::select! {
            biased;
            r = request => r,
            _ = self.first => Err(expired_after(self.limit)),
        }
    }
}

/// The answer of a caller that stopped waiting after `limit`: made only
/// when a caller does stop, since most requests are answered in time.
pub(crate) fn expired_after(limit: Millis) -> StoreError {
    StoreError::Unavailable(format!("no answer within {limit}"))
}

/// Makes the grace timer of a caller that passed its limit mid-batch.
pub(crate) struct Grace {
    limit: Millis,
    sleep: Box<dyn Fn(Millis) -> BoxFuture<()> + Send + Sync>,
}

impl Grace {
    /// One more limit, from now.
    pub(crate) fn start(&self) -> BoxFuture<()> {
        (self.sleep)(self.limit)
    }
}
