//! [`BatchMerger`]: answers concurrent [`Store::batch`] calls (the workers
//! of one process on one store) with as few transactions as possible.
//!
//! Each caller queues its request. A caller that gets one of the
//! `flushers` permits takes everything queued, merges it into one
//! [`BatchRequest`] (every release in queue order, then every claim in
//! queue order: a serial order of the concurrent calls), runs it, and
//! hands each caller its own answers. The other callers wait for theirs:
//! a request waits at most for the merged batches already in flight. No
//! task is spawned: callers run the transactions themselves.
//!
//! A caller with [`Patience`] (the `Worker`'s, through
//! [`Store::batch_within`]) gives up at its limit while its request is
//! still queued, and takes it out of the queue: never sent, it is never
//! applied (a claim applied after its caller stopped waiting grants a lease
//! no one holds, swept later as a crash). Once a merged batch carries its request, it waits for that
//! batch past its limit, for at most one more limit; the caller running the
//! batch finishes it the same way. Giving up there threw the batch away
//! with every other caller's part (the runner's limit counts its wait for a
//! flusher, so it is often the first to pass), or left a committed claim
//! with no one to take its answer: the production-shape chaos run found
//! such leases, swept as crashes of live workers. A caller alone in its
//! batch keeps its own limit.
//!
//! Invariants:
//! - every request is answered exactly once, with the answers the merged
//!   batch gave its own releases and claims, in order; an outer failure
//!   answers every request of that batch with the same error;
//! - at most `flushers` merged batches run at once, each with at most
//!   [`MAX_BATCH_REQUESTS`] releases and as many claims;
//! - a caller whose patience runs out while its request is queued takes it
//!   out: it is never applied; a caller that is dropped leaves its request
//!   queued, like a request lost in the network: it may still be applied;
//! - with patience, a caller waits at most two limits, and past the first
//!   only while a batch carries its request (or, alone, never); a batch is
//!   dropped by its runner only when one more limit passed after its own.
//!
//! [`Store::batch`]: crate::Store::batch
//! [`Store::batch_within`]: crate::Store::batch_within

use crate::clock::BoxFuture;
use crate::error::StoreError;
use crate::patience::{expired_after, Grace, Patience};
use crate::store::{BatchAnswer, BatchRequest, MAX_BATCH_REQUESTS};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use tokio::sync::{oneshot, Semaphore};

/// Default number of merged batches in flight at once.
pub const DEFAULT_MERGE_FLUSHERS: usize = 2;

struct Queued {
    /// Which call queued it (see [`BatchMerger::callers`]).
    caller: u64,
    req: BatchRequest,
    reply: oneshot::Sender<Result<BatchAnswer, StoreError>>,
}

/// Merges concurrent batches. See the module docs.
pub struct BatchMerger {
    queue: Mutex<Vec<Queued>>,
    /// Numbers the calls, so a caller running a batch knows whether it
    /// carries anyone else's request.
    callers: AtomicU64,
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
            callers: AtomicU64::new(0),
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
    /// one-transaction batch), however long that takes.
    pub async fn batch<F, Fut>(&self, req: BatchRequest, run: F) -> Result<BatchAnswer, StoreError>
    where
        F: Fn(BatchRequest) -> Fut,
        Fut: Future<Output = Result<BatchAnswer, StoreError>>,
    {
        self.answer(req, run, None, &mut || {}).await
    }

    /// [`BatchMerger::batch`], waited for with `patience`: a caller gives
    /// up at its limit, except while it runs a merged batch, which it
    /// finishes for at most one more limit (see [`Patience`]) and then
    /// answers what the batch gave it, if it carried its request.
    pub async fn batch_within<F, Fut>(
        &self,
        req: BatchRequest,
        run: F,
        patience: Patience,
    ) -> Result<BatchAnswer, StoreError>
    where
        F: Fn(BatchRequest) -> Fut,
        Fut: Future<Output = Result<BatchAnswer, StoreError>>,
    {
        self.answer(req, run, Some(patience), &mut || {}).await
    }

    /// [`BatchMerger::batch_within`], calling `withdrawn` (at once, under
    /// the merger's lock) if the caller's limit passes while its request is
    /// still queued and it is taken out of the queue: for a caller that
    /// keeps its own record of the queue's order (the simulator's store
    /// client).
    pub async fn batch_within_then<F, Fut>(
        &self,
        req: BatchRequest,
        run: F,
        patience: Patience,
        withdrawn: &mut (dyn FnMut() + Send),
    ) -> Result<BatchAnswer, StoreError>
    where
        F: Fn(BatchRequest) -> Fut,
        Fut: Future<Output = Result<BatchAnswer, StoreError>>,
    {
        self.answer(req, run, Some(patience), withdrawn).await
    }

    async fn answer<F, Fut>(
        &self,
        req: BatchRequest,
        run: F,
        patience: Option<Patience>,
        withdrawn: &mut (dyn FnMut() + Send),
    ) -> Result<BatchAnswer, StoreError>
    where
        F: Fn(BatchRequest) -> Fut,
        Fut: Future<Output = Result<BatchAnswer, StoreError>>,
    {
        let limit = patience.as_ref().map(Patience::limit);
        let expired = move || limit.map_or_else(gone, expired_after);
        let (mut wait, grace) = match patience.map(Patience::into_parts) {
            Some((first, grace)) => (Wait::Limit(first), Some(grace)),
            None => (Wait::Forever, None),
        };
        let (reply, mut answer) = oneshot::channel();
        let caller = self.callers.fetch_add(1, Ordering::Relaxed);
        self.lock().push(Queued { caller, req, reply });
        // Ends: each flush here answers at least the oldest queued request,
        // and requests queued after this one are taken after it, so this
        // request is answered within as many flushes as were queued ahead;
        // with patience, by its limit while queued, else one limit later.
        loop {
            tokio::select! {
                biased;
                a = &mut answer => return a.unwrap_or_else(|_| Err(gone())),
                permit = self.flushers.acquire(), if !wait.past_limit() => {
                    let Ok(_permit) = permit else { return Err(gone()) };
                    let taken = self.take();
                    if taken.is_empty() {
                        // Another flusher took this request and answers it.
                        drop(_permit);
                        break;
                    }
                    // Grace only for a batch that carries others' requests:
                    // alone, a caller's limit is its own to keep.
                    let others = taken.iter().any(|q| q.caller != caller);
                    let flush = Self::flush(taken, &run, self.misroute);
                    let ran = match (&mut wait, grace.as_ref()) {
                        (Wait::Forever, _) => {
                            flush.await;
                            true
                        }
                        (Wait::Limit(first), _) if !others => tokio::select! {
                            biased;
                            () = flush => true,
                            () = first => false,
                        },
                        (_, Some(grace)) => finish(flush, &mut wait, grace).await,
                        (_, None) => unreachable!("a limit comes with its grace"),
                    };
                    if !ran {
                        return Err(expired());
                    }
                }
                () = wait.limit(), if wait.is_limit() => {
                    if self.withdraw(caller, withdrawn) {
                        // Never sent, so never applied: a claim granted
                        // after its caller stopped waiting would be a
                        // lease no one holds, swept as a crash.
                        return Err(expired());
                    }
                    let Some(grace) = grace.as_ref() else { unreachable!("a limit comes with its grace") };
                    wait = Wait::Grace(grace.start());
                }
            }
            if wait.past_limit() {
                if self.withdraw(caller, withdrawn) {
                    // Past its limit and in no batch: never sent.
                    return Err(expired());
                }
                break;
            }
        }
        // This request is in a batch another caller runs: its answer, or,
        // past the limit, within one grace.
        loop {
            tokio::select! {
                biased;
                a = &mut answer => return a.unwrap_or_else(|_| Err(gone())),
                limit = wait.timer(), if !matches!(wait, Wait::Forever) => {
                    let Some(grace) = grace.as_ref().filter(|_| limit) else {
                        return Err(expired());
                    };
                    wait = Wait::Grace(grace.start());
                }
            }
        }
    }

    /// Takes `caller`'s request out of the queue if no batch took it yet
    /// (then calls `withdrawn`, under the lock); false if a batch has it.
    fn withdraw(&self, caller: u64, withdrawn: &mut (dyn FnMut() + Send)) -> bool {
        let mut q = self.lock();
        let Some(i) = q.iter().position(|q| q.caller == caller) else {
            return false;
        };
        q.remove(i);
        withdrawn();
        true
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

fn gone() -> StoreError {
    StoreError::Unavailable("the merged batch was dropped".into())
}

/// How long a caller still waits.
enum Wait {
    /// Without patience (`BatchMerger::batch`).
    Forever,
    /// Until its limit.
    Limit(BoxFuture<()>),
    /// Past its limit, while a batch carries its request: until this grace
    /// ends.
    Grace(BoxFuture<()>),
}

impl Wait {
    fn is_limit(&self) -> bool {
        matches!(self, Wait::Limit(_))
    }

    fn past_limit(&self) -> bool {
        matches!(self, Wait::Grace(_))
    }

    /// The limit's timer (only polled while `is_limit`).
    async fn limit(&mut self) {
        match self {
            Wait::Limit(t) => t.await,
            _ => std::future::pending().await,
        }
    }

    /// The running timer: true when the limit passed, false when the
    /// grace did (never completes without patience).
    async fn timer(&mut self) -> bool {
        match self {
            Wait::Limit(t) => {
                t.await;
                true
            }
            Wait::Grace(t) => {
                t.await;
                false
            }
            Wait::Forever => std::future::pending().await,
        }
    }
}

/// Runs `flush` to its end, past the caller's limit by at most one grace;
/// false when the grace ran out first (the flush is dropped, and every
/// caller in it answered "dropped"). A timer is polled no more once it
/// completed.
async fn finish(flush: impl Future<Output = ()>, wait: &mut Wait, grace: &Grace) -> bool {
    let mut flush = std::pin::pin!(flush);
    if let Wait::Limit(first) = wait {
        tokio::select! {
            biased;
            () = &mut flush => return true,
            () = first => {}
        }
        *wait = Wait::Grace(grace.start());
    }
    let Wait::Grace(g) = wait else {
        flush.await;
        return true;
    };
    tokio::select! {
        biased;
        () = flush => true,
        () = g => false,
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

    /// A store that answers a merged batch with one release too few (or
    /// one claim too many) cannot be split among its callers: each gets a
    /// `Corrupt` error, never another caller's answer.
    #[tokio::test(flavor = "current_thread")]
    async fn a_run_answering_the_wrong_number_of_requests_is_an_error_to_each_caller() {
        for (drop_release, extra_claim) in [(true, false), (false, true)] {
            let merger = BatchMerger::new(2);
            let req = BatchRequest {
                releases: vec![release(2), release(4)],
                claims: vec![claim(1)],
            };
            let e = merger
                .batch(req, |req| async move {
                    let mut a = fake(req, Arc::new(AtomicUsize::new(0))).await?;
                    if drop_release {
                        a.releases.pop();
                    }
                    if extra_claim {
                        a.claims.push(Ok(Vec::new()));
                    }
                    Ok(a)
                })
                .await
                .unwrap_err();
            assert!(matches!(e, StoreError::Corrupt(_)), "{e:?}");
        }
    }

    /// A request that takes `ms` (tokio's clock) and answers like [`fake`].
    async fn slow(
        req: BatchRequest,
        ms: u64,
        calls: Arc<AtomicUsize>,
    ) -> Result<BatchAnswer, StoreError> {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        fake(req, calls).await
    }

    fn one_release(job: u64) -> BatchRequest {
        BatchRequest {
            releases: vec![release(job)],
            claims: vec![claim(1)],
        }
    }

    /// The cap bounds a merged batch at exactly [`MAX_BATCH_REQUESTS`] of
    /// each kind: requests that fill it to the cap merge, one more splits
    /// them, and a single request over the cap still runs, alone.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn merged_batches_fill_to_the_cap_and_a_request_over_it_runs_alone() {
        let half = MAX_BATCH_REQUESTS / 2;
        let claims = |n: usize| BatchRequest {
            releases: vec![],
            claims: (0..n).map(|_| claim(1)).collect(),
        };
        let releases = |from: usize, n: usize| BatchRequest {
            releases: (from..from + n).map(|j| release(j as u64)).collect(),
            claims: vec![],
        };
        // (requests queued behind a running batch, store calls in all)
        let cases = [
            (vec![claims(half), claims(half)], 2),
            (vec![claims(half), claims(half + 1)], 3),
            (vec![releases(0, half), releases(half, half)], 2),
            (vec![releases(0, half), releases(half, half + 1)], 3),
            (vec![claims(MAX_BATCH_REQUESTS + 1)], 2),
        ];
        for (k, (parts, runs)) in cases.into_iter().enumerate() {
            let merger = Arc::new(BatchMerger::new(1));
            let calls = Arc::new(AtomicUsize::new(0));
            let (m, c) = (merger.clone(), calls.clone());
            let blocker =
                tokio::spawn(
                    async move { m.batch(one_release(2), |r| slow(r, 100, c.clone())).await },
                );
            // The blocker takes the one flusher; the rest queue behind it.
            tokio::task::yield_now().await;
            let mut tasks = Vec::new();
            for part in parts {
                let sizes = (part.releases.len(), part.claims.len());
                let (m, c) = (merger.clone(), calls.clone());
                tasks.push((
                    sizes,
                    tokio::spawn(async move { m.batch(part, |r| fake(r, c.clone())).await }),
                ));
            }
            let limit = std::time::Duration::from_secs(10);
            for (sizes, t) in tasks {
                let a = tokio::time::timeout(limit, t)
                    .await
                    .unwrap_or_else(|_| panic!("case {k}: a request was never run"))
                    .unwrap()
                    .unwrap();
                assert_eq!((a.releases.len(), a.claims.len()), sizes, "case {k}");
            }
            blocker.await.unwrap().unwrap();
            assert_eq!(calls.load(Ordering::SeqCst), runs, "case {k}: store calls");
        }
    }

    /// C's batch runs 0–300 ms; A (limit 400 ms) and B queue behind it; A
    /// then runs A's and B's merged batch, 300–600 ms: A's limit passes
    /// mid-batch. A finishes it, so B gets its answers (a plain timeout on
    /// A dropped B's part with it) and A its own, late.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_caller_past_its_limit_finishes_the_merged_batch_it_runs() {
        let merger = Arc::new(BatchMerger::new(1));
        let calls = Arc::new(AtomicUsize::new(0));
        let rt = crate::TokioRuntime::new();
        let t0 = tokio::time::Instant::now();
        let call = |job: u64, limit: u64| {
            let (m, c, rt) = (merger.clone(), calls.clone(), rt.clone());
            tokio::spawn(async move {
                let p = Patience::new(&rt, Millis(limit));
                let a = m
                    .batch_within(one_release(job), |r| slow(r, 300, c.clone()), p)
                    .await;
                (a, t0.elapsed().as_millis())
            })
        };
        let c = call(2, 10_000);
        tokio::task::yield_now().await;
        let a = call(4, 400);
        tokio::task::yield_now().await;
        let b = call(6, 10_000);
        let (c, a, b) = (c.await.unwrap(), a.await.unwrap(), b.await.unwrap());
        assert_eq!(c.1, 300);
        for (name, (answer, at)) in [("A", a), ("B", b)] {
            let answer = answer.unwrap_or_else(|e| panic!("{name} at {at} ms: {e}"));
            assert_eq!(answer.releases, vec![Ok(Release::Committed)], "{name}");
            assert_eq!(answer.claims.len(), 1, "{name}");
            assert_eq!(at, 600, "{name} is answered when the batch ends");
        }
        assert_eq!(
            calls.load(Ordering::SeqCst),
            2,
            "C's batch, then A's and B's"
        );
    }

    /// A batch that never ends: its runner A gives up one limit past its
    /// own and drops it; B, whose part was in it, is told so then.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_batch_that_never_ends_is_dropped_one_limit_past_its_runners() {
        let merger = Arc::new(BatchMerger::new(1));
        let rt = crate::TokioRuntime::new();
        let t0 = tokio::time::Instant::now();
        let call = |job: u64, limit: u64, hangs: bool| {
            let (m, rt) = (merger.clone(), rt.clone());
            tokio::spawn(async move {
                let p = Patience::new(&rt, Millis(limit));
                let run = |r| async move {
                    if hangs {
                        std::future::pending::<()>().await;
                    }
                    slow(r, 300, Arc::default()).await
                };
                let a = m.batch_within(one_release(job), run, p).await;
                (a, t0.elapsed().as_millis())
            })
        };
        let c = call(2, 10_000, false);
        tokio::task::yield_now().await;
        let a = call(4, 400, true);
        tokio::task::yield_now().await;
        let b = call(6, 10_000, false);
        let (c, a, b) = (c.await.unwrap(), a.await.unwrap(), b.await.unwrap());
        assert!(c.0.is_ok());
        assert_eq!(
            a.0,
            Err(StoreError::Unavailable("no answer within 400ms".into()))
        );
        assert_eq!(a.1, 800, "one limit, then one grace");
        assert_eq!(b.0, Err(gone()), "B's part went with A's batch");
        assert_eq!(b.1, 800);
    }

    /// A caller whose request is still queued (another runs a batch) gives
    /// up at its limit and takes its request out: no later batch applies it.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_queued_caller_gives_up_at_its_limit_and_its_request_is_never_applied() {
        let merger = Arc::new(BatchMerger::new(1));
        let applied = Arc::new(Mutex::new(Vec::<Vec<u64>>::new()));
        let log = applied.clone();
        let run = move |req: BatchRequest| {
            let applied = log.clone();
            async move {
                applied
                    .lock()
                    .unwrap()
                    .push(req.releases.iter().map(|r| r.job.0).collect());
                slow(req, 300, Arc::default()).await
            }
        };
        let rt = crate::TokioRuntime::new();
        let t0 = tokio::time::Instant::now();
        let (m, rt2, run2) = (merger.clone(), rt.clone(), run.clone());
        let first = tokio::spawn(async move {
            let p = Patience::new(&rt2, Millis(10_000));
            m.batch_within(one_release(2), run2, p).await
        });
        tokio::task::yield_now().await;
        let p = Patience::new(&rt, Millis(100));
        let mut withdrawn = 0;
        let gave_up = merger
            .batch_within_then(one_release(4), run.clone(), p, &mut || withdrawn += 1)
            .await;
        assert_eq!(withdrawn, 1);
        assert_eq!(
            gave_up,
            Err(StoreError::Unavailable("no answer within 100ms".into()))
        );
        assert_eq!(t0.elapsed().as_millis(), 100);
        assert!(first.await.unwrap().is_ok());
        let p = Patience::new(&rt, Millis(10_000));
        let next = merger.batch_within(one_release(6), run, p).await.unwrap();
        assert_eq!(next.releases, vec![Ok(Release::Committed)]);
        assert_eq!(*applied.lock().unwrap(), vec![vec![2], vec![6]]);
    }

    /// A caller whose batch carries no one else's request keeps its own
    /// limit: no grace for a batch only it waits for.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_caller_alone_in_its_batch_gives_up_at_its_limit() {
        let merger = BatchMerger::new(1);
        let rt = crate::TokioRuntime::new();
        let t0 = tokio::time::Instant::now();
        let p = Patience::new(&rt, Millis(400));
        let hang = |_| std::future::pending::<Result<BatchAnswer, StoreError>>();
        let a = merger.batch_within(one_release(4), hang, p).await;
        assert_eq!(
            a,
            Err(StoreError::Unavailable("no answer within 400ms".into()))
        );
        assert_eq!(t0.elapsed().as_millis(), 400);
    }

    /// X's batch runs 0–300 ms; C then runs C's and A's, 300–600 ms. A's
    /// limit (500 ms) passes while a batch carries its request: A waits
    /// for it, one grace at most, and gets its answer at 600 ms. (Giving
    /// up at 500 would leave A's claims granted to a worker that never
    /// learns of them once the batch commits.)
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_caller_whose_request_is_in_a_running_batch_waits_for_it_past_its_limit() {
        let merger = Arc::new(BatchMerger::new(1));
        let rt = crate::TokioRuntime::new();
        let t0 = tokio::time::Instant::now();
        let call = |job: u64, limit: u64| {
            let (m, rt) = (merger.clone(), rt.clone());
            tokio::spawn(async move {
                let p = Patience::new(&rt, Millis(limit));
                let run = |r| slow(r, 300, Arc::default());
                let a = m.batch_within(one_release(job), run, p).await;
                (a, t0.elapsed().as_millis())
            })
        };
        let x = call(2, 10_000);
        tokio::task::yield_now().await;
        let c = call(4, 10_000);
        tokio::task::yield_now().await;
        let a = call(6, 500);
        let (x, c, a) = (x.await.unwrap(), c.await.unwrap(), a.await.unwrap());
        assert_eq!(x.1, 300);
        assert_eq!(c.1, 600);
        assert_eq!(a.0.map(|a| a.releases), Ok(vec![Ok(Release::Committed)]));
        assert_eq!(a.1, 600);
    }

    /// The same, with C's batch running past A's grace too (A's limit
    /// 150 ms, grace to 300 ms): A gives up then, its outcome unknown.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_caller_in_a_running_batch_gives_up_one_limit_past_its_own() {
        let merger = Arc::new(BatchMerger::new(1));
        let rt = crate::TokioRuntime::new();
        let t0 = tokio::time::Instant::now();
        let call = |job: u64, limit: u64, ms: u64| {
            let (m, rt) = (merger.clone(), rt.clone());
            tokio::spawn(async move {
                let p = Patience::new(&rt, Millis(limit));
                let run = move |r| slow(r, ms, Arc::default());
                let a = m.batch_within(one_release(job), run, p).await;
                (a, t0.elapsed().as_millis())
            })
        };
        let x = call(2, 10_000, 100);
        tokio::task::yield_now().await;
        let c = call(4, 10_000, 1_000);
        tokio::task::yield_now().await;
        let a = call(6, 150, 1_000);
        let (x, c, a) = (x.await.unwrap(), c.await.unwrap(), a.await.unwrap());
        assert_eq!(x.1, 100);
        assert_eq!(c.1, 1_100);
        assert_eq!(
            a.0,
            Err(StoreError::Unavailable("no answer within 150ms".into()))
        );
        assert_eq!(a.1, 300);
    }

    #[test]
    fn debug_shows_the_free_flushers() {
        let shown = format!("{:?}", BatchMerger::new(3));
        assert_eq!(shown, "BatchMerger { flushers_free: 3 }");
    }
}
