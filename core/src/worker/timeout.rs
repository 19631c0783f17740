//! A request with a deadline on the host's own clock.

use crate::clock::Runtime;
use crate::error::StoreError;
use crate::time::Millis;
use std::future::Future;

/// Runs `request`; past `limit` on `rt`'s clock its outcome counts as unknown
/// ([`StoreError::Unavailable`]): it may still commit at the store.
pub async fn with_timeout<T, R: Runtime>(
    rt: &R,
    limit: Millis,
    request: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::select! {
        biased;
        r = request => r,
        _ = rt.sleep(limit) => Err(StoreError::Unavailable(format!("no answer within {limit}"))),
    }
}
