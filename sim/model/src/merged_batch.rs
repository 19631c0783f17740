//! A merged batch on the wire: the pure bookkeeping a worker process's
//! store client does around the production
//! [`BatchMerger`](leasehold_core::BatchMerger) when each merged batch
//! travels as one [`WireMessage::Batch`](crate::wire::WireMessage::Batch).
//! The simulator's worker process (`leasehold-sim`) and the madsim
//! embedding both use it, so both record and route a merged batch alike
//! and one checker judges both.
//!
//! A caller's batch is recorded as its parts, each under a request id of
//! its own ([`part_summaries`]); the caller queues its ids in a
//! [`MergeQueue`] in the merger's order; a merged batch (a prefix of the
//! merger's queue) takes the same prefix of the ids ([`MergeQueue::take`]),
//! goes out as [`wire_parts`], and its wire replies are rebuilt into the
//! merger's answer ([`BatchShape::answer`]); each caller then records the
//! replies of its own parts ([`caller_replies`]).
//!
//! Everything here is synchronous: how a part is recorded, sent and
//! awaited stays with each embedding.

use crate::history::{Op, Reply};
use crate::wire::{WireError, WireOp, WireReply};
use crate::wire_store::wire;
use leasehold_core::{BatchAnswer, BatchRequest, StoreError};
use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

/// How many releases and claims a batch carries, in wire order: releases
/// first, then claims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchShape {
    /// Its releases (the first parts).
    pub releases: usize,
    /// Its claims (the parts after the releases).
    pub claims: usize,
}

impl BatchShape {
    /// The shape of `req`.
    pub fn of(req: &BatchRequest) -> Self {
        BatchShape {
            releases: req.releases.len(),
            claims: req.claims.len(),
        }
    }

    /// Its parts, releases and claims.
    pub fn len(self) -> usize {
        self.releases + self.claims
    }

    /// Whether it has no part.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The answer to a batch of this shape from its wire `replies`, one a
    /// part in wire order: releases first, then claims. Another count of
    /// replies is [`StoreError::Unavailable`] (the message that came back
    /// is not this batch's answer); a reply of the wrong kind for its part
    /// is that part's [`StoreError::Corrupt`].
    pub fn answer(self, replies: Vec<WireReply>) -> Result<BatchAnswer, StoreError> {
        let n = self.len();
        if replies.len() != n {
            return Err(StoreError::Unavailable(format!(
                "{} answers for a batch of {n}",
                replies.len()
            )));
        }
        let mut answer = BatchAnswer {
            releases: Vec::with_capacity(self.releases),
            claims: Vec::with_capacity(self.claims),
        };
        for (i, r) in replies.into_iter().enumerate() {
            if i < self.releases {
                answer.releases.push(match r {
                    WireReply::Release(r) => Ok(r),
                    WireReply::Error(e) => Err(e.into_store_error()),
                    r => Err(unexpected(r)),
                });
            } else {
                answer.claims.push(match r {
                    WireReply::Leases(l) => Ok(l),
                    WireReply::Error(e) => Err(e.into_store_error()),
                    r => Err(unexpected(r)),
                });
            }
        }
        Ok(answer)
    }
}

fn unexpected(r: WireReply) -> StoreError {
    StoreError::Corrupt(format!("unexpected answer {r:?}"))
}

/// The history summaries of `req`'s parts, in wire order: releases first,
/// then claims.
pub fn part_summaries(req: &BatchRequest) -> Vec<Op> {
    req.releases
        .iter()
        .map(|r| WireOp::Release(r.clone()).summary())
        .chain(
            req.claims
                .iter()
                .map(|c| WireOp::Claim(c.clone()).summary()),
        )
        .collect()
}

/// The wire parts of the merged batch `req` under `ids` (from
/// [`MergeQueue::take`]), in wire order: releases first, then claims.
pub fn wire_parts(ids: Vec<u64>, req: BatchRequest) -> Vec<(u64, WireOp)> {
    ids.into_iter()
        .zip(
            req.releases
                .into_iter()
                .map(WireOp::Release)
                .chain(req.claims.into_iter().map(WireOp::Claim)),
        )
        .collect()
}

/// What a caller records for each of its `n` parts once the merger
/// answered it: each part's reply, or, for a failed merged batch, its
/// error on every part. A part the answer lacks (the merger answered fewer
/// parts than the caller asked) is recorded as unanswered, so every part
/// gets exactly one answer record.
pub fn caller_replies(answer: &Result<BatchAnswer, StoreError>, n: usize) -> Vec<Reply> {
    let replies: Vec<WireReply> = match answer {
        Ok(a) => a
            .releases
            .iter()
            .map(|r| wire(r.clone(), WireReply::Release))
            .chain(a.claims.iter().map(|c| wire(c.clone(), WireReply::Leases)))
            .collect(),
        Err(e) => vec![WireReply::Error(WireError::of(e)); n],
    };
    (0..n)
        .map(|i| {
            replies.get(i).map_or_else(
                || Reply::Unavailable("no answer for this part".into()),
                WireReply::summary,
            )
        })
        .collect()
}

/// The request ids of the batches queued in a process's merger, in the
/// merger's order: each caller's release count and ids (releases', then
/// claims'). The merger runs a prefix of its queue as one batch, and
/// [`MergeQueue::take`] takes the same prefix of these.
///
/// Bounded as the merger's queue is: a caller pushes once, before the
/// merger queues its request, and leaves when a merged batch takes it or
/// when it withdraws with the merger.
#[derive(Debug, Default)]
pub struct MergeQueue {
    callers: Mutex<VecDeque<(usize, Vec<u64>)>>,
}

impl MergeQueue {
    fn lock(&self) -> MutexGuard<'_, VecDeque<(usize, Vec<u64>)>> {
        // A panic while holding the lock leaves a consistent queue.
        self.callers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a caller's `ids`, of which the first `n_releases` are its
    /// releases'.
    pub fn push(&self, n_releases: usize, ids: Vec<u64>) {
        self.lock().push_back((n_releases, ids));
    }

    /// Takes the caller with `ids` out of the queue (it gave up while its
    /// request was still queued in the merger); nothing if no caller has
    /// them.
    pub fn withdraw(&self, ids: &[u64]) {
        let mut q = self.lock();
        if let Some(i) = q.iter().position(|(_, mine)| *mine == ids) {
            q.remove(i);
        }
    }

    /// The request ids of a merged batch of `shape`: the oldest queued
    /// callers' ids whose parts add up to its parts, releases first (in
    /// caller order), then claims. [`StoreError::Corrupt`] if the queue's
    /// callers do not add up to `shape` (the merger ran something else than
    /// a prefix of its queue); the callers taken stay taken.
    pub fn take(&self, shape: BatchShape) -> Result<Vec<u64>, StoreError> {
        let mut q = self.lock();
        let (mut releases, mut claims) = (Vec::new(), Vec::new());
        // Bounded by the queue: each turn takes one caller's ids.
        while releases.len() + claims.len() < shape.len() {
            let Some((nr, ids)) = q.pop_front() else {
                break;
            };
            releases.extend_from_slice(&ids[..nr]);
            claims.extend_from_slice(&ids[nr..]);
        }
        let got = (releases.len(), claims.len());
        if got.0 + got.1 != shape.len() {
            return Err(StoreError::Corrupt(format!(
                "{} request ids for a merged batch of {}",
                got.0 + got.1,
                shape.len()
            )));
        }
        if got != (shape.releases, shape.claims) {
            return Err(StoreError::Corrupt(format!(
                "{} release and {} claim request ids for a merged batch of {} releases and {} claims",
                got.0, got.1, shape.releases, shape.claims
            )));
        }
        releases.extend(claims);
        Ok(releases)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_core::{
        ClaimRequest, JobId, Millis, Outcome, Release, ReleaseRequest, Token, WorkerId,
    };

    fn release(job: u64) -> ReleaseRequest {
        ReleaseRequest {
            job: JobId(job),
            token: Token(job),
            outcome: Outcome::Succeeded(vec![]),
        }
    }

    fn claim(queue: &str) -> ClaimRequest {
        ClaimRequest {
            worker: WorkerId::new("worker-1"),
            queue: queue.into(),
            lease: Millis(30_000),
            max: 1,
        }
    }

    /// Two releases and one claim.
    fn req() -> BatchRequest {
        BatchRequest {
            releases: vec![release(1), release(2)],
            claims: vec![claim("q")],
        }
    }

    #[test]
    fn parts_go_releases_first_then_claims() {
        let r = req();
        assert_eq!(
            part_summaries(&r),
            vec![
                WireOp::Release(release(1)).summary(),
                WireOp::Release(release(2)).summary(),
                WireOp::Claim(claim("q")).summary(),
            ]
        );
        // WireOp has no equality: compare each part's id and summary.
        let parts: Vec<(u64, Op)> = wire_parts(vec![10, 11, 12], r)
            .into_iter()
            .map(|(id, op)| (id, op.summary()))
            .collect();
        assert_eq!(
            parts,
            vec![
                (10, WireOp::Release(release(1)).summary()),
                (11, WireOp::Release(release(2)).summary()),
                (12, WireOp::Claim(claim("q")).summary()),
            ]
        );
        let shape = BatchShape::of(&req());
        assert_eq!((shape.releases, shape.claims, shape.len()), (2, 1, 3));
        assert!(BatchShape::of(&BatchRequest::default()).is_empty());
    }

    #[test]
    fn a_merged_batch_takes_the_oldest_callers_ids_releases_first() {
        let q = MergeQueue::default();
        q.push(1, vec![1, 2]); // one release, one claim
        q.push(0, vec![3]); // one claim
        q.push(2, vec![4, 5]); // two releases
        let first = BatchShape {
            releases: 1,
            claims: 2,
        };
        assert_eq!(q.take(first).unwrap(), vec![1, 2, 3]);
        let second = BatchShape {
            releases: 2,
            claims: 0,
        };
        assert_eq!(q.take(second).unwrap(), vec![4, 5]);
        // Nothing left: a batch of one finds no ids.
        let one = BatchShape {
            releases: 0,
            claims: 1,
        };
        assert_eq!(
            q.take(one),
            Err(StoreError::Corrupt(
                "0 request ids for a merged batch of 1".into()
            ))
        );
    }

    #[test]
    fn a_withdrawn_caller_is_skipped_and_a_wrong_shape_is_corrupt() {
        let q = MergeQueue::default();
        q.push(1, vec![1]);
        q.push(1, vec![2]);
        q.push(0, vec![3]);
        q.withdraw(&[2]);
        q.withdraw(&[99]); // nobody: no change
        let shape = BatchShape {
            releases: 1,
            claims: 1,
        };
        assert_eq!(q.take(shape).unwrap(), vec![1, 3]);
        // Two parts as asked, but split otherwise than the batch.
        q.push(2, vec![4, 5]);
        assert_eq!(
            q.take(shape),
            Err(StoreError::Corrupt(
                "2 release and 0 claim request ids for a merged batch of 1 releases and 1 claims"
                    .into()
            ))
        );
    }

    #[test]
    fn the_answer_is_rebuilt_releases_then_claims() {
        let shape = BatchShape::of(&req());
        let boom = StoreError::Unavailable("boom".into());
        let answer = shape
            .answer(vec![
                WireReply::Release(Release::Committed),
                WireReply::Error(WireError::of(&boom)),
                WireReply::Leases(vec![]),
            ])
            .unwrap();
        assert_eq!(answer.releases, vec![Ok(Release::Committed), Err(boom)]);
        assert_eq!(answer.claims, vec![Ok(vec![])]);
        // A reply of the wrong kind is that part's corruption.
        let answer = shape
            .answer(vec![
                WireReply::Leases(vec![]),
                WireReply::Release(Release::Lost),
                WireReply::Release(Release::Lost),
            ])
            .unwrap();
        assert!(
            matches!(&answer.releases[0], Err(StoreError::Corrupt(m)) if m.starts_with("unexpected answer Leases"))
        );
        assert_eq!(answer.releases[1], Ok(Release::Lost));
        assert!(
            matches!(&answer.claims[0], Err(StoreError::Corrupt(m)) if m.starts_with("unexpected answer Release"))
        );
        // Another count of replies is not this batch's answer.
        assert_eq!(
            shape.answer(vec![WireReply::Leases(vec![])]),
            Err(StoreError::Unavailable("1 answers for a batch of 3".into()))
        );
    }

    #[test]
    fn a_caller_records_one_reply_a_part() {
        let ok: Result<BatchAnswer, StoreError> = Ok(BatchAnswer {
            releases: vec![Ok(Release::Committed)],
            claims: vec![Ok(vec![])],
        });
        assert_eq!(
            caller_replies(&ok, 3),
            vec![
                WireReply::Release(Release::Committed).summary(),
                WireReply::Leases(vec![]).summary(),
                Reply::Unavailable("no answer for this part".into()),
            ]
        );
        let e = StoreError::Unavailable("cut".into());
        let failed = caller_replies(&Err(e.clone()), 2);
        let each = WireReply::Error(WireError::of(&e)).summary();
        assert_eq!(failed, vec![each.clone(), each]);
    }
}
