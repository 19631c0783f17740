//! [`BatchMerger`]: answers concurrent [`Store::batch`] calls (the workers
//! of one process on one store) with as few transactions as possible.
//!
//! Each caller queues its request. A caller that gets one of the
//! `flushers` permits takes everything queued, merges it into one
//! [`BatchRequest`] (every release in queue order, then every claim in
//! queue order: a serial order of the concurrent calls), runs it, and
//! hands each caller its own answers. The other callers wait for theirs;
//! nobody waits on a timer, so a request waits at most for the merged
//! batches already in flight. No task is spawned: callers run the
//! transactions themselves.
//!
//! Invariants:
//! - every request is answered exactly once, with the answers the merged
//!   batch gave its own releases and claims, in order; an outer failure
//!   answers every request of that batch with the same error;
//! - at most `flushers` merged batches run at once, each with at most
//!   [`MAX_BATCH_REQUESTS`] releases and as many claims;
//! - a caller that gives up (its future dropped) leaves its request queued,
//!   like a request lost in the network: it may still be applied.
//!
//! [`Store::batch`]: crate::Store::batch

use crate::error::StoreError;
use crate::store::{BatchAnswer, BatchRequest, MAX_BATCH_REQUESTS};
use std::future::Future;
use std::sync::Mutex;
use tokio::sync::{oneshot, Semaphore};

/// Default number of merged batches in flight at once.
pub const DEFAULT_MERGE_FLUSHERS: usize = 2;

struct Queued {
    req: BatchRequest,
    reply: oneshot::Sender<Result<BatchAnswer, StoreError>>,
}

/// Merges concurrent batches. See the module docs.
pub struct BatchMerger {
    queue: Mutex<Vec<Queued>>,
    flushers: Semaphore,
    /// Hands claim answers to the wrong callers (`merged-answers-misrouted`).
    misroute: bool,
}

impl std::fmt::Debug for BatchMerger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchMerger")
            .field("flushers_free", &self.flushers.available_permits())
            .finish()
    }
}

impl BatchMerger {
    /// A merger running at most `flushers` (≥ 1) merged batches at once.
    pub fn new(flushers: usize) -> Self {
        BatchMerger {
            queue: Mutex::new(Vec::new()),
            flushers: Semaphore::new(flushers.max(1)),
            misroute: false,
        }
    }

    /// A merger with a deliberately broken behaviour from the catalogue
    /// (simulator only).
    #[cfg(feature = "buggy-variants")]
    pub fn with_variant(mut self, v: Option<crate::variants::Variant>) -> Self {
        self.misroute = v == Some(crate::variants::Variant::MergedAnswersMisrouted);
        self
    }

    /// Answers `req` through a merged batch run by `run` (the store's own
    /// one-transaction batch).
    pub async fn batch<F, Fut>(&self, req: BatchRequest, run: F) -> Result<BatchAnswer, StoreError>
    where
        F: Fn(BatchRequest) -> Fut,
        Fut: Future<Output = Result<BatchAnswer, StoreError>>,
    {
        let (reply, mut answer) = oneshot::channel();
        self.lock().push(Queued { req, reply });
        let gone = || StoreError::Unavailable("the merged batch was dropped".into());
        // Ends: each flush here answers at least the oldest queued request,
        // and requests queued after this one are taken after it, so this
        // request is answered within as many flushes as were queued ahead.
        loop {
            tokio::select! {
                biased;
                a = &mut answer => return a.unwrap_or_else(|_| Err(gone())),
                permit = self.flushers.acquire() => {
                    let Ok(_permit) = permit else { return Err(gone()) };
                    let taken = self.take();
                    if taken.is_empty() {
                        // Another flusher took this request and answers it.
                        drop(_permit);
                        return answer.await.unwrap_or_else(|_| Err(gone()));
                    }
                    Self::flush(taken, &run, self.misroute).await;
                }
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Queued>> {
        // A panic while holding the lock leaves a consistent Vec.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes queued requests, oldest first, while the merged batch stays
    /// within [`MAX_BATCH_REQUESTS`] of each kind (always at least one).
    fn take(&self) -> Vec<Queued> {
        let mut q = self.lock();
        let (mut releases, mut claims, mut n) = (0usize, 0usize, 0usize);
        for item in q.iter() {
            releases += item.req.releases.len();
            claims += item.req.claims.len();
            if n > 0 && (releases > MAX_BATCH_REQUESTS || claims > MAX_BATCH_REQUESTS) {
                break;
            }
            n += 1;
        }
        q.drain(..n).collect()
    }

    async fn flush<F, Fut>(taken: Vec<Queued>, run: &F, misroute: bool)
    where
        F: Fn(BatchRequest) -> Fut,
        Fut: Future<Output = Result<BatchAnswer, StoreError>>,
    {
        let mut merged = BatchRequest::default();
        let mut shape = Vec::with_capacity(taken.len());
        let mut replies = Vec::with_capacity(taken.len());
        for q in taken {
            shape.push((q.req.releases.len(), q.req.claims.len()));
            merged.releases.extend(q.req.releases);
            merged.claims.extend(q.req.claims);
            replies.push(q.reply);
        }
        let (n_releases, n_claims) = (merged.releases.len(), merged.claims.len());
        match run(merged).await {
            Ok(answer)
                if answer.releases.len() == n_releases && answer.claims.len() == n_claims =>
            {
                let mut releases = answer.releases.into_iter();
                let mut claims = answer.claims.into_iter();
                let mut parts: Vec<BatchAnswer> = shape
                    .iter()
                    .map(|&(nr, nc)| BatchAnswer {
                        releases: releases.by_ref().take(nr).collect(),
                        claims: claims.by_ref().take(nc).collect(),
                    })
                    .collect();
                if misroute {
                    misroute_claims(&mut parts);
                }
                for (part, reply) in parts.into_iter().zip(replies) {
                    let _ = reply.send(Ok(part));
                }
            }
            Ok(_) => {
                let e = StoreError::Corrupt("a batch answered the wrong number of requests".into());
                for reply in replies {
                    let _ = reply.send(Err(e.clone()));
                }
            }
            Err(e) => {
                for reply in replies {
                    let _ = reply.send(Err(e.clone()));
                }
            }
        }
    }
}

/// The `merged-answers-misrouted` bug: the claim answers of the callers
/// that asked as many claims as the first such caller go round by one.
fn misroute_claims(parts: &mut [BatchAnswer]) {
    let Some(n) = parts.iter().map(|p| p.claims.len()).find(|&n| n > 0) else {
        return;
    };
    let same: Vec<usize> = (0..parts.len())
        .filter(|&i| parts[i].claims.len() == n)
        .collect();
    for w in same.windows(2) {
        let (a, b) = (w[0], w[1]);
        let taken = std::mem::take(&mut parts[a].claims);
        parts[a].claims = std::mem::replace(&mut parts[b].claims, taken);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{JobId, Token, WorkerId};
    use crate::job::{Lease, Outcome, Release};
    use crate::store::{ClaimRequest, ReleaseRequest};
    use crate::time::{Millis, StoreTime};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn release(job: u64) -> ReleaseRequest {
        ReleaseRequest {
            job: JobId(job),
            token: Token(1),
            outcome: Outcome::Returned,
        }
    }

    fn claim(max: u32) -> ClaimRequest {
        ClaimRequest {
            worker: WorkerId::new("w"),
            queue: "q".into(),
            lease: Millis(1000),
            max,
        }
    }

    /// Answers each release with `Committed` for even jobs and `Lost` for
    /// odd ones, and each claim with `max` leases numbered by position.
    async fn fake(req: BatchRequest, calls: Arc<AtomicUsize>) -> Result<BatchAnswer, StoreError> {
        calls.fetch_add(1, Ordering::SeqCst);
        tokio::task::yield_now().await;
        Ok(BatchAnswer {
            releases: req
                .releases
                .iter()
                .map(|r| {
                    Ok(if r.job.0 % 2 == 0 {
                        Release::Committed
                    } else {
                        Release::Lost
                    })
                })
                .collect(),
            claims: req
                .claims
                .iter()
                .map(|c| {
                    Ok((0..c.max)
                        .map(|i| Lease {
                            job: JobId(u64::from(i)),
                            token: Token(1),
                            queue: c.queue.clone(),
                            payload: Vec::new(),
                            attempt: 1,
                            expires_at: StoreTime(0),
                        })
                        .collect())
                })
                .collect(),
        })
    }

    #[tokio::test(flavor = "current_thread")]
    async fn concurrent_batches_share_runs_and_each_gets_its_own_answers() {
        let merger = Arc::new(BatchMerger::new(1));
        let calls = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for k in 0..20u64 {
            let (m, c) = (merger.clone(), calls.clone());
            tasks.push(tokio::spawn(async move {
                let req = BatchRequest {
                    releases: vec![release(k), release(k + 1)],
                    claims: vec![claim((k % 3) as u32 + 1)],
                };
                let a = m.batch(req, |r| fake(r, c.clone())).await.unwrap();
                (k, a)
            }));
        }
        for t in tasks {
            let (k, a) = t.await.unwrap();
            let even = |j: u64| {
                if j % 2 == 0 {
                    Ok(Release::Committed)
                } else {
                    Ok(Release::Lost)
                }
            };
            assert_eq!(a.releases, vec![even(k), even(k + 1)], "request {k}");
            assert_eq!(a.claims.len(), 1);
            assert_eq!(a.claims[0].as_ref().unwrap().len(), (k % 3) as usize + 1);
        }
        let runs = calls.load(Ordering::SeqCst);
        assert!(runs < 20, "merged into fewer runs than requests: {runs}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_failed_run_answers_each_of_its_requests_with_the_error() {
        let merger = BatchMerger::new(2);
        let req = BatchRequest {
            releases: vec![release(2)],
            claims: vec![],
        };
        let e = merger
            .batch(req, |_| async {
                Err::<BatchAnswer, _>(StoreError::Unavailable("down".into()))
            })
            .await
            .unwrap_err();
        assert_eq!(e, StoreError::Unavailable("down".into()));
    }
}
