//! Concurrent cases: many clients racing on one store (I1, I2, I9).

use super::cases::{enqueue, row, rows};
use super::{suite_policy, Harness, LONG_LEASE, RACE_CLAIMERS};
use leasehold_core::Policy;
use leasehold_core::{ClaimRequest, ReleaseRequest, Store};
use leasehold_core::{JobId, Token, WorkerId};
use leasehold_core::{JobState, Lease, NewJob, Outcome, Release};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::Barrier;

/// Enqueues `n` jobs on `queue` from [`RACE_CLAIMERS`] tasks; answers their ids.
async fn enqueue_in_parallel<S: Store>(store: &Arc<S>, queue: &str, n: usize) -> Vec<JobId> {
    let mut tasks = Vec::new();
    for t in 0..RACE_CLAIMERS {
        let (s, q) = (store.clone(), queue.to_string());
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in (t..n).step_by(RACE_CLAIMERS) {
                let payload = (i as u64).to_le_bytes().to_vec();
                ids.push(enqueue(&*s, NewJob::new(q.clone(), payload)).await);
            }
            ids
        }));
    }
    let mut ids = Vec::with_capacity(n);
    for t in tasks {
        ids.extend(t.await.expect("enqueue task"));
    }
    ids.sort();
    ids
}

/// [`RACE_CLAIMERS`] workers start together and claim `batch` at a time
/// until a claim comes back empty; answers every lease granted.
async fn claim_in_parallel<S: Store>(
    store: &Arc<S>,
    queue: &str,
    batch: u32,
    bound: usize,
) -> Vec<Lease> {
    let barrier = Arc::new(Barrier::new(RACE_CLAIMERS));
    let mut tasks = Vec::new();
    for c in 0..RACE_CLAIMERS {
        let (s, q, b) = (store.clone(), queue.to_string(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            b.wait().await;
            let mut got = Vec::new();
            // Bounded: every non-empty claim takes at least one job.
            for _ in 0..=bound {
                let req = ClaimRequest {
                    worker: WorkerId::new(format!("claimer-{c}")),
                    queue: q.clone(),
                    lease: LONG_LEASE,
                    max: batch,
                };
                let leases = match s.claim(req).await {
                    Ok(l) => l,
                    Err(e) => panic!("claimer-{c}: claim failed: {e}"),
                };
                if leases.is_empty() {
                    break;
                }
                got.extend(leases);
            }
            got
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("claim task"));
    }
    all
}

/// Releases every lease with `outcome(lease)` from [`RACE_CLAIMERS`] tasks;
/// every answer must be `Committed`.
async fn release_in_parallel<S: Store>(
    store: &Arc<S>,
    leases: &[Lease],
    outcome: fn(&Lease) -> Outcome,
) {
    let mut tasks = Vec::new();
    for t in 0..RACE_CLAIMERS {
        let s = store.clone();
        let mine: Vec<Lease> = leases
            .iter()
            .skip(t)
            .step_by(RACE_CLAIMERS)
            .cloned()
            .collect();
        tasks.push(tokio::spawn(async move {
            for l in mine {
                let req = ReleaseRequest {
                    job: l.job,
                    token: l.token,
                    outcome: outcome(&l),
                };
                match s.release(req).await {
                    Ok(Release::Committed) => {}
                    other => panic!("release of {} {} answered {other:?}", l.job, l.token),
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("release task");
    }
}

/// Each job is granted exactly once with `token`; none is missing.
fn assert_each_once(name: &str, round: u64, ids: &[JobId], leases: &[Lease]) {
    let mut by_job: BTreeMap<JobId, Vec<Token>> = BTreeMap::new();
    for l in leases {
        by_job.entry(l.job).or_default().push(l.token);
    }
    let twice: Vec<_> = by_job.iter().filter(|(_, t)| t.len() > 1).take(5).collect();
    assert!(
        twice.is_empty(),
        "{name}: round {round}: jobs granted twice: {twice:?}"
    );
    let granted: Vec<JobId> = by_job.keys().copied().collect();
    assert_eq!(
        granted.len(),
        ids.len(),
        "{name}: round {round}: jobs granted"
    );
    assert_eq!(granted, ids, "{name}: round {round}: every job granted");
    let wrong: Vec<_> = leases
        .iter()
        .filter(|l| l.token != Token(round))
        .take(5)
        .collect();
    assert!(
        wrong.is_empty(),
        "{name}: round {round}: wrong tokens: {wrong:?}"
    );
}

/// I1/I2: [`RACE_CLAIMERS`] claimers racing over [`Harness::race_jobs`]
/// jobs grant each job exactly once per token, twice over (the jobs are
/// returned and raced for again), and lose none; every result lands.
pub async fn concurrent_claimers_claim_each_job_exactly_once_per_token<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let name = h.name();
    let n = h.race_jobs();
    let ids = enqueue_in_parallel(&f.store, "race", n).await;
    assert_eq!(ids.len(), n, "{name}");

    let first = claim_in_parallel(&f.store, "race", 8, n).await;
    assert_each_once(&name, 1, &ids, &first);
    let claimers: std::collections::BTreeSet<&str> =
        first.iter().map(|l| l.queue.as_str()).collect();
    assert_eq!(claimers.len(), 1, "{name}");
    let all = rows(&*f.store).await;
    assert!(
        all.iter()
            .all(|r| r.state == JobState::Running && r.token == Token(1)),
        "{name}: every job running under token 1"
    );
    release_in_parallel(&f.store, &first, |_| Outcome::Returned).await;

    let second = claim_in_parallel(&f.store, "race", 8, n).await;
    assert_each_once(&name, 2, &ids, &second);
    assert!(
        second.iter().all(|l| l.attempt == 1),
        "{name}: returned attempts were refunded"
    );
    release_in_parallel(&f.store, &second, |l| Outcome::Succeeded(l.payload.clone())).await;

    let done = rows(&*f.store).await;
    assert_eq!(done.len(), n, "{name}: no job lost or added");
    for r in &done {
        assert_eq!(r.state, JobState::Succeeded, "{name}: {r:?}");
        assert_eq!(r.token, Token(2), "{name}: {}", r.id);
        assert_eq!(
            r.result.as_ref(),
            Some(&r.payload),
            "{name}: {} result",
            r.id
        );
    }
}

/// I9: a queue limited to 3 running jobs never grants more than 3, however
/// many claimers race; a release frees exactly one slot; other queues are
/// unaffected.
pub async fn parallelism_limit_holds_under_concurrent_claimers<H: Harness>(h: &H) {
    let policy = Policy {
        parallelism: [("limited".to_string(), 3)].into_iter().collect(),
        ..suite_policy()
    };
    let f = h.fresh(policy).await;
    let s = &f.store;
    let name = h.name();
    for i in 0..20u8 {
        enqueue(&**s, NewJob::new("limited", vec![i])).await;
    }
    for i in 0..5u8 {
        enqueue(&**s, NewJob::new("free", vec![i])).await;
    }
    let granted = claim_in_parallel(s, "limited", 2, 3).await;
    assert_eq!(granted.len(), 3, "{name}: at most the limit: {granted:?}");
    let running = rows(&**s)
        .await
        .into_iter()
        .filter(|r| r.queue == "limited" && r.state == JobState::Running)
        .count();
    assert_eq!(running, 3, "{name}");
    let l = &granted[0];
    let req = ReleaseRequest {
        job: l.job,
        token: l.token,
        outcome: Outcome::Succeeded(vec![]),
    };
    assert_eq!(
        s.release(req).await.expect("release"),
        Release::Committed,
        "{name}"
    );
    let more = claim_in_parallel(s, "limited", 5, 3).await;
    assert_eq!(more.len(), 1, "{name}: one slot was freed");
    assert_eq!(
        claim_in_parallel(s, "free", 5, 5).await.len(),
        5,
        "{name}: free queue unlimited"
    );
}

/// Concurrent enqueues of one idempotency key make one job and all answer
/// its id.
pub async fn concurrent_enqueues_of_one_key_make_one_job<H: Harness>(h: &H) {
    let f = h.fresh(suite_policy()).await;
    let name = h.name();
    let barrier = Arc::new(Barrier::new(RACE_CLAIMERS));
    let mut tasks = Vec::new();
    for _ in 0..RACE_CLAIMERS {
        let (s, b) = (f.store.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            b.wait().await;
            let mut ids = Vec::new();
            for k in 0..4 {
                let spec = NewJob::new("q", b"same".to_vec()).idempotency_key(format!("key-{k}"));
                ids.push(enqueue(&*s, spec).await);
            }
            ids
        }));
    }
    let mut answers: Vec<Vec<JobId>> = Vec::new();
    for t in tasks {
        answers.push(t.await.expect("enqueue task"));
    }
    let first = answers[0].clone();
    assert!(answers.iter().all(|a| *a == first), "{name}: {answers:?}");
    let all = rows(&*f.store).await;
    assert_eq!(all.len(), 4, "{name}: one job per key");
    for (k, id) in first.iter().enumerate() {
        let r = row(&*f.store, *id).await;
        assert_eq!(r.idempotency_key, Some(format!("key-{k}")), "{name}");
    }
    if let Some(events) = h.events(&f.store).await {
        assert_eq!(events.len(), 4, "{name}: one enqueue event per job");
    }
}
