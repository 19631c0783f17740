//! PostgreSQL's `Coalescing` wrapper under simulation: the single claims
//! (or releases) the store host gathered in one instant, submitted to the
//! production wrapper all at once, exactly as concurrent callers of one
//! process submit them.
//!
//! Determinism: the requests are queued in one poll, in the order the
//! store host received them, before any flusher runs (the driver has one
//! worker thread), so the first flusher to wake takes them all (up to its
//! batch cap, which the store host never exceeds) and answers them with
//! one `claim_many` or `release_many` transaction. Nothing waits on real
//! time; the wrapper lives for the one call and its flushers stop with it.

use leasehold_core::Store;
use leasehold_postgres::{Coalescing, PgStore, DEFAULT_COALESCE_BATCH, DEFAULT_FLUSHERS};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

type Call<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Polls every call in index order until each has finished, and answers
/// their outputs in that order: the first poll of each queues its request.
async fn in_order<T>(calls: Vec<Call<'_, T>>) -> Vec<T> {
    let mut calls: Vec<(Call<'_, T>, Option<T>)> = calls.into_iter().map(|c| (c, None)).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (call, out) in calls.iter_mut() {
            if out.is_none() {
                match call.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    calls.into_iter().filter_map(|(_, out)| out).collect()
}

/// Answers `reqs` through a `Coalescing` wrapper of `store`, one answer
/// per request in order. Must run on the driver (a tokio runtime).
pub async fn through_coalescing<Q, A, F>(store: Arc<PgStore>, reqs: Vec<Q>, call: F) -> Vec<A>
where
    F: for<'a> Fn(&'a Coalescing, Q) -> Call<'a, A>,
{
    let wrapper = Coalescing::new(store, DEFAULT_COALESCE_BATCH, DEFAULT_FLUSHERS);
    let calls = reqs.into_iter().map(|q| call(&wrapper, q)).collect();
    in_order(calls).await
}

/// `Coalescing`'s `claim`, boxed for [`through_coalescing`].
pub fn claim(
    c: &Coalescing,
    req: leasehold_core::ClaimRequest,
) -> Call<'_, Result<Vec<leasehold_core::Lease>, leasehold_core::StoreError>> {
    Box::pin(c.claim(req))
}

/// `Coalescing`'s `release`, boxed for [`through_coalescing`].
pub fn release(
    c: &Coalescing,
    req: leasehold_core::ReleaseRequest,
) -> Call<'_, Result<leasehold_core::Release, leasehold_core::StoreError>> {
    Box::pin(c.release(req))
}
