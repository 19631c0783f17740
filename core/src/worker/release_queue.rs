//! The worker's release queue: lease tasks hand their releases to the
//! worker's loop, which sends whatever is queued in its next
//! [`crate::Store::batch`] (with the claims for the slots they free).
//!
//! Invariants:
//! - a release is never held back on purpose: the loop wakes on the first
//!   queued release and sends at once; a release waits at most for the one
//!   batch already in flight;
//! - every release gets its own answer (the store's per-request answer, or
//!   the batch's unknown outcome), and the lease task alone decides to
//!   retry, exactly as it would after a single release;
//! - a queued release tells the loop that the lease's handler has finished,
//!   so its slot is free for a claim in the same batch;
//! - when the loop is gone (its drain time ran out), a lease task releases
//!   on its own, so no release is left without a try.

use crate::error::StoreError;
use crate::job::Release;
use crate::store::ReleaseRequest;
use tokio::sync::{mpsc, oneshot};

/// One release waiting for the worker's next batch.
pub(crate) struct PendingRelease {
    /// The release.
    pub req: ReleaseRequest,
    /// Where its answer goes.
    pub reply: oneshot::Sender<Result<Release, StoreError>>,
}

/// The lease tasks' end of the queue.
pub(crate) type ReleaseSender = mpsc::Sender<PendingRelease>;

/// Queues `req` and waits for its answer. `None` when the worker's loop no
/// longer takes releases (the caller then releases on its own).
pub(crate) async fn submit(
    queue: &ReleaseSender,
    req: ReleaseRequest,
) -> Option<Result<Release, StoreError>> {
    let (reply, answer) = oneshot::channel();
    queue.send(PendingRelease { req, reply }).await.ok()?;
    // A dropped reply means the loop ended with the release still queued:
    // it was never sent, so the lease task may send it itself.
    answer.await.ok()
}

/// Answers every release of a batch with the batch's outcome.
pub(crate) fn answer_all(
    pending: Vec<PendingRelease>,
    answers: Result<Vec<Result<Release, StoreError>>, StoreError>,
) {
    match answers {
        Ok(answers) => {
            // A broken store may answer fewer: the missing ones get an error
            // below, never a panic of the worker.
            if answers.len() != pending.len() {
                tracing::error!(
                    sent = pending.len(),
                    answered = answers.len(),
                    "the store answered a different number of releases than were sent"
                );
            }
            let mut answers = answers.into_iter();
            for p in pending {
                let a = answers.next().unwrap_or_else(|| {
                    Err(StoreError::Corrupt(
                        "the store answered fewer releases".into(),
                    ))
                });
                let _ = p.reply.send(a);
            }
        }
        Err(e) => {
            for p in pending {
                let _ = p.reply.send(Err(e.clone()));
            }
        }
    }
}
