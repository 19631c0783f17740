//! Enqueue wake-ups over `LISTEN/NOTIFY`, with a bounded poll fallback.

use crate::error;
use leasehold_core::StoreError;
use sqlx::postgres::{PgListener, PgPool};
use std::time::Duration;
use tokio::time::Instant;

/// Listens for enqueue notifications. Made by [`crate::PgStore::work_listener`].
///
/// A notification can be missed (for example across a reconnect), so a
/// caller must treat [`WorkListener::wait_for_work`] returning `false` as
/// "poll now": it is the bounded fallback, not proof that no work exists.
pub struct WorkListener {
    inner: PgListener,
}

impl WorkListener {
    pub(crate) async fn connect(pool: &PgPool, channel: &str) -> Result<Self, StoreError> {
        let mut inner = PgListener::connect_with(pool).await.map_err(error::map)?;
        inner.listen(channel).await.map_err(error::map)?;
        Ok(WorkListener { inner })
    }

    /// Waits until a job is enqueued on `queue` (answers `true`) or
    /// `max_wait` has passed (answers `false`: poll anyway).
    pub async fn wait_for_work(
        &mut self,
        queue: &str,
        max_wait: Duration,
    ) -> Result<bool, StoreError> {
        let deadline = Instant::now() + max_wait;
        // Bounded by the deadline: every pass either returns or waits less.
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            match tokio::time::timeout(left, self.inner.recv()).await {
                Err(_) => return Ok(false),
                Ok(Ok(n)) if n.payload() == queue => return Ok(true),
                Ok(Ok(_)) => continue,
                Ok(Err(e)) => return Err(error::map(e)),
            }
        }
    }
}
