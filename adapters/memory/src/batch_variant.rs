//! The catalogue's `batch-answers-in-completion-order` (bug 27), for the
//! simulator only: a store batch that runs its parts concurrently, as the
//! trait's default does, but collects their answers in the order the parts
//! finished instead of the order they were asked in. A store whose parts
//! always finish in list order hides it; one whose parts finish in any
//! order hands a claim another claim's leases.

use leasehold_core::{BatchAnswer, BatchRequest, Store, StoreError};
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

/// [`Store::batch`] by parts (every release at once, then every claim at
/// once), each phase's answers in the order its parts finished.
pub async fn batch_in_completion_order<S: Store + ?Sized>(
    store: &S,
    req: BatchRequest,
) -> Result<BatchAnswer, StoreError> {
    let releases =
        in_completion_order(req.releases.into_iter().map(|r| store.release(r)).collect()).await;
    let claims =
        in_completion_order(req.claims.into_iter().map(|c| store.claim(c)).collect()).await;
    Ok(BatchAnswer { releases, claims })
}

/// Polls every future until all have finished; the outputs in the order
/// they finished (the bug: not one per position of the list).
async fn in_completion_order<F: Future>(futs: Vec<F>) -> Vec<F::Output> {
    let mut running: Vec<Option<Pin<Box<F>>>> =
        futs.into_iter().map(|f| Some(Box::pin(f))).collect();
    let mut out = Vec::with_capacity(running.len());
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for slot in running.iter_mut() {
            let Some(f) = slot else { continue };
            match f.as_mut().poll(cx) {
                Poll::Ready(v) => {
                    out.push(v);
                    *slot = None;
                }
                Poll::Pending => pending = true,
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    out
}
