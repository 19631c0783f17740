//! [`Store::batch`]: a worker's releases and claims in one call, each
//! answered exactly as it would have been alone.

use super::cases::{claim, enqueue, row, worker};
use super::{suite_policy, Harness, LONG_LEASE};
use leasehold_core::StoreError;
use leasehold_core::Token;
use leasehold_core::{BatchRequest, ClaimRequest, ReleaseRequest, Store};
use leasehold_core::{JobState, Lease, NewJob, Outcome, Release};

/// One batch: a good release, a release with a token never issued, the
/// good release repeated, then a claim and a claim with bad input. Each
/// gets its own answer: the good release commits (its repeat too), the
/// bad token is refused and leaves its lease running, the claim takes the
/// one free job and the bad claim is refused alone.
pub async fn batch_answers_each_release_and_claim_on_its_own<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let name = h.name();
    let s = &*f.store;
    let a = enqueue(s, NewJob::new("b", b"a".to_vec())).await;
    let b = enqueue(s, NewJob::new("b", b"b".to_vec())).await;
    let c = enqueue(s, NewJob::new("b", b"c".to_vec())).await;
    let held = claim(s, "w1", "b", LONG_LEASE, 2).await;
    assert_eq!(held.len(), 2, "{name}: {held:?}");
    let (la, lb) = if held[0].job == a {
        (&held[0], &held[1])
    } else {
        (&held[1], &held[0])
    };
    assert_eq!((la.job, lb.job), (a, b), "{name}: the two oldest jobs");
    let done = |job, token| ReleaseRequest {
        job,
        token,
        outcome: Outcome::Succeeded(b"ok".to_vec()),
    };
    let req = BatchRequest {
        releases: vec![
            done(a, la.token),
            done(b, Token(lb.token.0 + 1000)),
            done(a, la.token),
        ],
        claims: vec![
            ClaimRequest {
                worker: worker("w2"),
                queue: "b".into(),
                lease: LONG_LEASE,
                max: 5,
            },
            ClaimRequest {
                worker: worker("w2"),
                queue: String::new(),
                lease: LONG_LEASE,
                max: 1,
            },
        ],
    };
    let answer = match s.batch(req).await {
        Ok(a) => a,
        Err(e) => panic!("{name}: batch failed: {e}"),
    };
    assert_eq!(answer.releases.len(), 3, "{name}: one answer per release");
    assert_eq!(answer.releases[0], Ok(Release::Committed), "{name}");
    assert!(
        matches!(answer.releases[1], Err(StoreError::Input(_))),
        "{name}: a token never issued is refused: {:?}",
        answer.releases[1]
    );
    assert_eq!(
        answer.releases[2],
        Ok(Release::Committed),
        "{name}: a repeat"
    );
    assert_eq!(answer.claims.len(), 2, "{name}: one answer per claim");
    let granted = answer.claims[0].as_ref().expect("the good claim");
    assert_eq!(
        granted.iter().map(|l| l.job).collect::<Vec<_>>(),
        vec![c],
        "{name}: only the free job"
    );
    assert!(
        matches!(answer.claims[1], Err(StoreError::Input(_))),
        "{name}: {:?}",
        answer.claims[1]
    );
    assert_eq!(row(s, a).await.state, JobState::Succeeded, "{name}");
    let rb = row(s, b).await;
    assert_eq!(rb.state, JobState::Running, "{name}: b untouched");
    assert_eq!(rb.token, lb.token, "{name}");
    let rc = row(s, c).await;
    assert_eq!(rc.state, JobState::Running, "{name}");
    assert_eq!(rc.holder, Some(worker("w2")), "{name}");
}

/// An empty batch answers nothing and changes nothing.
pub async fn empty_batch_answers_nothing<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let name = h.name();
    let s = &*f.store;
    let j = enqueue(s, NewJob::new("b", b"x".to_vec())).await;
    let answer = s
        .batch(BatchRequest::default())
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(
        answer.releases.is_empty() && answer.claims.is_empty(),
        "{name}"
    );
    assert_eq!(row(s, j).await.state, JobState::Pending, "{name}");
}

/// A batch answers as its requests would have one after another: a job
/// returned by a release is claimable by a claim later in the same batch.
pub async fn a_job_returned_in_a_batch_is_claimable_by_its_claims<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let name = h.name();
    let s = &*f.store;
    let j = enqueue(s, NewJob::new("b", b"x".to_vec())).await;
    let held = claim(s, "w1", "b", LONG_LEASE, 1).await;
    assert_eq!(held.len(), 1, "{name}");
    let release = ReleaseRequest {
        job: j,
        token: held[0].token,
        outcome: Outcome::Returned,
    };
    let granted = release_then_claim_one(s, &name, release, "w2", "b").await;
    assert_eq!(granted.len(), 1, "{name}: the returned job: {granted:?}");
    assert_eq!(granted[0].job, j, "{name}");
    assert!(granted[0].token > held[0].token, "{name}: a new token");
    assert_eq!(row(s, j).await.holder, Some(worker("w2")), "{name}");
}

/// Sends one batch: `release`, then a claim of one job of `queue` for
/// `who`. The release must commit; answers the claim's leases.
async fn release_then_claim_one<S: Store>(
    s: &S,
    name: &str,
    release: ReleaseRequest,
    who: &str,
    queue: &str,
) -> Vec<Lease> {
    let req = BatchRequest {
        releases: vec![release],
        claims: vec![ClaimRequest {
            worker: worker(who),
            queue: queue.into(),
            lease: LONG_LEASE,
            max: 1,
        }],
    };
    let answer = s.batch(req).await.unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(answer.releases, vec![Ok(Release::Committed)], "{name}");
    answer.claims[0].clone().expect("the claim")
}

/// A batch answers as its requests would have one after another: a slot of
/// a queue with a parallelism limit, freed by a release, is claimable by a
/// claim later in the same batch (the claim must count the queue's running
/// jobs after the release, not before).
pub async fn a_slot_freed_in_a_batch_is_claimable_by_its_claims<H: Harness>(h: &H) {
    let policy = leasehold_core::Policy::builder()
        .parallelism("lim", 1)
        .build()
        .expect("a valid policy");
    let f = h.fresh(policy).await;
    let name = h.name();
    let s = &*f.store;
    let first = enqueue(s, NewJob::new("lim", b"1".to_vec())).await;
    let second = enqueue(s, NewJob::new("lim", b"2".to_vec())).await;
    let held = claim(s, "w1", "lim", LONG_LEASE, 2).await;
    assert_eq!(held.len(), 1, "{name}: the limit is one");
    assert_eq!(held[0].job, first, "{name}");
    let release = ReleaseRequest {
        job: first,
        token: held[0].token,
        outcome: Outcome::Succeeded(b"done".to_vec()),
    };
    let granted = release_then_claim_one(s, &name, release, "w1", "lim").await;
    assert_eq!(granted.len(), 1, "{name}: the freed slot: {granted:?}");
    assert_eq!(granted[0].job, second, "{name}");
    assert_eq!(row(s, first).await.state, JobState::Succeeded, "{name}");
    assert_eq!(row(s, second).await.state, JobState::Running, "{name}");
}
