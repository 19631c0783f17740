//! Runs a bounded list of futures at once and answers their outputs in
//! list order (the default [`crate::Store::batch`] uses it, and an
//! embedding that runs several workers of one process on one task, so
//! that the order they run in after a shared wake-up never depends on
//! which of them the executor woke first).
//!
//! Invariants:
//! - every future is first polled in list order, so requests that take
//!   their ids or send on the first poll do so in list order (a
//!   deterministic history);
//! - a finished future is never polled again;
//! - the outputs come back in list order, one per future.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

/// Polls every future of `futs`, in list order on every wake, until all
/// have finished.
pub async fn join_all<F: Future>(futs: Vec<F>) -> Vec<F::Output> {
    let mut running: Vec<Option<Pin<Box<F>>>> =
        futs.into_iter().map(|f| Some(Box::pin(f))).collect();
    let mut outputs: Vec<Option<F::Output>> = running.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (slot, out) in running.iter_mut().zip(outputs.iter_mut()) {
            let Some(f) = slot else { continue };
            match f.as_mut().poll(cx) {
                Poll::Ready(v) => {
                    *out = Some(v);
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
    let all: Vec<F::Output> = outputs.into_iter().flatten().collect();
    debug_assert_eq!(all.len(), running.len(), "one output per future");
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[tokio::test]
    async fn a_slow_future_does_not_keep_the_later_ones_from_starting() {
        let started = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let mut rx = Some(rx);
        let futs: Vec<_> = (0..3)
            .map(|i| {
                let started = started.clone();
                let gate = if i == 0 { rx.take() } else { None };
                async move {
                    started.lock().unwrap().push(i);
                    if let Some(gate) = gate {
                        let _ = gate.await;
                    }
                    i * 10
                }
            })
            .collect();
        let joined = tokio::spawn(join_all(futs));
        tokio::task::yield_now().await;
        // The first is still waiting, yet all three have started, in order.
        assert_eq!(*started.lock().unwrap(), vec![0, 1, 2]);
        tx.send(()).unwrap();
        assert_eq!(joined.await.unwrap(), vec![0, 10, 20]);
    }

    #[tokio::test]
    async fn no_futures_give_no_outputs() {
        let none: Vec<std::future::Ready<u8>> = Vec::new();
        assert!(join_all(none).await.is_empty());
    }
}
