//! The SQL stores' set-based batches (one load, one version-checked write
//! per batch) answer every request exactly as the same requests sent one
//! by one: a batch mixing committed, repeated, lost (stale token), refused
//! (token never issued) and unknown-job releases, a `Returned` job claimed
//! again by the batch's own claims, and a bad claim; then a batch larger
//! than one statement carries (the adapters split it), a claim wider than
//! one read page, and the SQL stores' `release_many` and `enqueue_many`
//! outside a batch.
//!
//! The reference is the memory store answering the same requests one after
//! another, on the same manual clock; answers, final rows and audit events
//! must be equal. Postgres needs `DATABASE_URL` (skipped loudly without it).

use leasehold_core::{
    list_all, BatchAnswer, BatchRequest, ClaimRequest, Event, JobId, JobRecord, Lease,
    ManualStoreClock, Millis, NewJob, Outcome, Policy, ReleaseRequest, Store, Token, WorkerId,
};
use leasehold_memory::MemoryStore;
use leasehold_tests::{database_url, pg_store, sqlite_store, MANUAL_EPOCH};

const LEASE: Millis = Millis(60_000);

fn claim_req(worker: &str, queue: &str, max: u32) -> ClaimRequest {
    ClaimRequest {
        worker: WorkerId::new(worker),
        queue: queue.into(),
        lease: LEASE,
        max,
    }
}

fn release(job: JobId, token: Token, outcome: Outcome) -> ReleaseRequest {
    ReleaseRequest {
        job,
        token,
        outcome,
    }
}

fn done(tag: &str) -> Outcome {
    Outcome::Succeeded(tag.as_bytes().to_vec())
}

fn failed(error: &str, retryable: bool) -> Outcome {
    Outcome::Failed {
        error: error.into(),
        retryable,
    }
}

/// What a run leaves behind, compared across stores.
#[derive(Debug, PartialEq)]
struct Outcome3 {
    answer: BatchAnswer,
    rows: Vec<JobRecord>,
    events: Option<Vec<Event>>,
}

/// Sends `req` as one batch, or (`one_by_one`) as its releases then its
/// claims, each alone, in order.
async fn send<S: Store>(s: &S, req: BatchRequest, one_by_one: bool) -> BatchAnswer {
    if !one_by_one {
        return s.batch(req).await.expect("batch");
    }
    let mut answer = BatchAnswer::default();
    for r in req.releases {
        answer.releases.push(s.release(r).await);
    }
    for c in req.claims {
        answer.claims.push(s.claim(c).await);
    }
    answer
}

/// Enqueues one job on `queue` per payload, then moves the clock on 5 ms.
async fn enqueue_all<S: Store>(
    s: &S,
    clock: &ManualStoreClock,
    queue: &str,
    payloads: impl Iterator<Item = Vec<u8>>,
) {
    for payload in payloads {
        s.enqueue(NewJob::new(queue, payload))
            .await
            .expect("enqueue");
    }
    clock.advance(Millis(5));
}

/// Moves the clock on 5 ms, then sends `req` (see [`send`]).
async fn send_later<S: Store>(
    s: &S,
    clock: &ManualStoreClock,
    req: BatchRequest,
    one_by_one: bool,
) -> BatchAnswer {
    clock.advance(Millis(5));
    send(s, req, one_by_one).await
}

/// Enqueues `n` jobs on `q` and claims them all as `w1`, then returns the
/// second one (`ids[1]`), so that its first token is stale once it is
/// claimed again: the jobs' ids and the leases first held.
async fn hold_and_return_second<S: Store>(
    s: &S,
    clock: &ManualStoreClock,
    n: u8,
) -> (Vec<JobId>, Vec<Lease>) {
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(s.enqueue(NewJob::new("q", vec![i])).await.expect("enqueue"));
    }
    clock.advance(Millis(5));
    let held: Vec<Lease> = s
        .claim(claim_req("w1", "q", u32::from(n)))
        .await
        .expect("claim");
    assert_eq!(held.len(), usize::from(n));
    let token = held.iter().find(|l| l.job == ids[1]).expect("held").token;
    let answer = s.release(release(ids[1], token, Outcome::Returned)).await;
    assert_eq!(answer, Ok(leasehold_core::Release::Committed));
    clock.advance(Millis(5));
    (ids, held)
}

/// The releases both mixed batches open with: one committed, one on
/// `ids[1]`'s stale first token, one of an unknown job, one with a token
/// never issued, and a repeat of the first.
fn refusals_and_repeat(ids: &[JobId], token: impl Fn(JobId) -> Token) -> Vec<ReleaseRequest> {
    vec![
        release(ids[0], token(ids[0]), done("a")),
        release(ids[1], token(ids[1]), done("stale")),
        release(JobId(9_999), Token(1), done("unknown")),
        release(ids[2], Token(token(ids[2]).0 + 1_000), done("never issued")),
        release(ids[0], token(ids[0]), done("a")),
    ]
}

/// Asserts the answers to [`refusals_and_repeat`]'s releases, the first
/// five of `rel`, are what the protocol says.
fn assert_refusals_and_repeat(rel: &[Result<leasehold_core::Release, leasehold_core::StoreError>]) {
    use leasehold_core::{Release, StoreError};
    assert_eq!(rel[0], Ok(Release::Committed));
    assert_eq!(rel[1], Ok(Release::Lost), "stale token");
    assert!(matches!(rel[2], Err(StoreError::Input(_))), "unknown job");
    assert!(matches!(rel[3], Err(StoreError::Input(_))), "never issued");
    assert_eq!(rel[4], Ok(Release::Committed), "a repeat");
}

/// Holds leases on six jobs (one re-claimed after a return, so its first
/// token is stale) with one more job pending, then sends the mixed batch.
async fn mixed<S: Store>(s: &S, clock: &ManualStoreClock, one_by_one: bool) -> BatchAnswer {
    let (mut ids, held) = hold_and_return_second(s, clock, 6).await;
    let token = |job: JobId| held.iter().find(|l| l.job == job).expect("held").token;
    let again = s.claim(claim_req("w1", "q", 1)).await.expect("claim");
    assert_eq!(
        again.iter().map(|l| l.job).collect::<Vec<_>>(),
        vec![ids[1]]
    );
    clock.advance(Millis(5));
    ids.push(s.enqueue(NewJob::new("q", vec![6])).await.expect("enqueue"));
    let req = BatchRequest {
        releases: [
            refusals_and_repeat(&ids, token),
            vec![
                release(
                    ids[0],
                    token(ids[0]),
                    failed("same token, other outcome", true),
                ),
                release(ids[3], token(ids[3]), Outcome::Returned),
                release(ids[4], token(ids[4]), failed("retry later", true)),
                release(ids[5], token(ids[5]), Outcome::Cancelled),
            ],
        ]
        .concat(),
        claims: vec![
            claim_req("w2", "q", 2),
            claim_req("w2", "", 1),
            claim_req("w3", "q", 10),
            claim_req("w3", "other", 3),
        ],
    };
    send_later(s, clock, req, one_by_one).await
}

/// Like [`mixed`], but no release can make a job claimable and the claims
/// name one queue: the batch shape PostgreSQL answers with one read.
async fn no_requeue<S: Store>(s: &S, clock: &ManualStoreClock, one_by_one: bool) -> BatchAnswer {
    let (mut ids, held) = hold_and_return_second(s, clock, 5).await;
    let token = |job: JobId| held.iter().find(|l| l.job == job).expect("held").token;
    let again = s.claim(claim_req("w1", "q", 1)).await.expect("claim");
    assert_eq!(again.len(), 1);
    for i in 5..8u8 {
        ids.push(s.enqueue(NewJob::new("q", vec![i])).await.expect("enqueue"));
    }
    s.cancel(ids[4]).await.expect("cancel");
    let req = BatchRequest {
        releases: [
            refusals_and_repeat(&ids, token),
            vec![
                release(ids[3], token(ids[3]), failed("poison", false)),
                release(ids[4], token(ids[4]), Outcome::Cancelled),
                release(ids[5], Token(1), done("pending, never claimed")),
            ],
        ]
        .concat(),
        claims: vec![claim_req("w2", "q", 1), claim_req("w3", "q", 5)],
    };
    send_later(s, clock, req, one_by_one).await
}

/// A queue limited to two running jobs, both slots taken: a batch that
/// releases one lease and claims frees and takes exactly that slot, as the
/// release then the claim would.
async fn limited<S: Store>(s: &S, clock: &ManualStoreClock, one_by_one: bool) -> BatchAnswer {
    enqueue_all(s, clock, "lim", (0..4u8).map(|i| vec![i])).await;
    let held = s.claim(claim_req("w1", "lim", 4)).await.expect("claim");
    assert_eq!(held.len(), 2, "the limit");
    let req = BatchRequest {
        releases: vec![release(held[0].job, held[0].token, done("one"))],
        claims: vec![claim_req("w2", "lim", 3)],
    };
    send_later(s, clock, req, one_by_one).await
}

/// Claims `n` jobs in one queue, then releases them all in one batch
/// (every seventh with a stale token), larger than one statement's bound.
async fn large<S: Store>(
    s: &S,
    clock: &ManualStoreClock,
    one_by_one: bool,
    n: usize,
) -> BatchAnswer {
    enqueue_all(s, clock, "big", (0..n).map(|i| i.to_le_bytes().to_vec())).await;
    let mut held = Vec::new();
    while held.len() < n {
        let got = s.claim(claim_req("w", "big", 100)).await.expect("claim");
        assert!(!got.is_empty(), "jobs left to claim");
        held.extend(got);
    }
    clock.advance(Millis(5));
    let releases = held
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let token = if i % 7 == 3 {
                Token(l.token.0 - 1)
            } else {
                l.token
            };
            release(l.job, token, done("big"))
        })
        .collect();
    let req = BatchRequest {
        releases,
        claims: vec![claim_req("w", "big", 5)],
    };
    send(s, req, one_by_one).await
}

/// `jobs` pending jobs, then one batch of claims for `maxes` of them.
async fn wide<S: Store>(
    s: &S,
    clock: &ManualStoreClock,
    one_by_one: bool,
    jobs: u32,
    maxes: &[u32],
) -> BatchAnswer {
    let payloads = (0..jobs).map(|i| i.to_le_bytes().to_vec());
    enqueue_all(s, clock, "wide", payloads).await;
    let req = BatchRequest {
        releases: Vec::new(),
        claims: maxes.iter().map(|&m| claim_req("w", "wide", m)).collect(),
    };
    send(s, req, one_by_one).await
}

async fn finish<S: Store>(s: &S, answer: BatchAnswer, events: Option<Vec<Event>>) -> Outcome3 {
    Outcome3 {
        answer,
        rows: list_all(s).await.expect("rows"),
        events,
    }
}

/// Runs `$body` with `$s` bound to a fresh SQLite store applying `$policy`,
/// then (with `DATABASE_URL`) to a fresh PostgreSQL one, each on a manual
/// clock of its own bound to `$clock`, and `$name` naming the store.
macro_rules! on_each_sql_store {
    ($policy:expr, |$s:ident, $clock:ident, $name:ident| $body:block) => {{
        let policy: Policy = $policy;
        {
            let $clock = ManualStoreClock::new(MANUAL_EPOCH);
            let lite = sqlite_store(policy.clone(), $clock.clone()).await;
            let $s = lite.inner();
            let $name = "sqlite";
            $body
        }
        if let Some(url) = database_url() {
            let $clock = ManualStoreClock::new(MANUAL_EPOCH);
            let pg = pg_store(&url, policy.clone(), Some($clock.clone())).await;
            let $s = pg.inner();
            let $name = "postgres";
            $body
        }
    }};
}

/// Runs `scenario` on the memory reference (one by one) and on every SQL
/// store (as one batch), and compares everything.
macro_rules! compare {
    ($policy:expr, $scenario:ident $(, $arg:expr)*) => {{
        let policy: Policy = $policy;
        let clock = ManualStoreClock::new(MANUAL_EPOCH);
        let mem = MemoryStore::with_clock(policy.clone(), clock.clone());
        let a = $scenario(&mem, &clock, true $(, $arg)*).await;
        let reference = finish(&mem, a, Some(mem.events())).await;
        on_each_sql_store!(policy, |s, clock, name| {
            let a = $scenario(s, &clock, false $(, $arg)*).await;
            let events = s.events().await.expect("events");
            let got = finish(s, a, Some(events)).await;
            assert_eq!(got.answer, reference.answer, "{name} answers");
            assert_eq!(got.rows, reference.rows, "{name} rows");
            assert_eq!(got.events, reference.events, "{name} audit events");
        });
        reference
    }};
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_batch_answers_as_its_requests_one_by_one() {
    let r = compare!(Policy::default(), mixed);
    // The reference itself answers what the protocol says.
    use leasehold_core::{Release, StoreError};
    let rel = &r.answer.releases;
    assert_refusals_and_repeat(rel);
    assert_eq!(rel[5], Ok(Release::Lost), "same token, other outcome");
    assert_eq!(rel[6], Ok(Release::Committed), "returned");
    let claims = &r.answer.claims;
    let first = claims[0].as_ref().expect("claim");
    assert_eq!(first.len(), 2, "the returned job and the last pending one");
    assert!(matches!(claims[1], Err(StoreError::Input(_))), "bad queue");
    assert_eq!(claims[2].as_ref().map(Vec::len), Ok(0));
    assert_eq!(claims[3].as_ref().map(Vec::len), Ok(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_without_requeues_answers_as_its_requests_one_by_one() {
    let r = compare!(Policy::default(), no_requeue);
    assert_refusals_and_repeat(&r.answer.releases);
    let claimed: usize = r
        .answer
        .claims
        .iter()
        .map(|c| c.as_ref().map_or(0, Vec::len))
        .sum();
    assert_eq!(
        claimed, 3,
        "the three jobs still pending: {:?}",
        r.answer.claims
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_frees_a_limited_queue_slot_for_the_claims_of_its_batch() {
    let r = compare!(
        Policy::builder()
            .parallelism("lim", 2)
            .build()
            .expect("policy"),
        limited
    );
    let granted = r.answer.claims[0].as_ref().map(Vec::len);
    assert_eq!(granted, Ok(1), "the freed slot: {:?}", r.answer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_larger_than_one_statement_answers_as_one_by_one() {
    // Above the SQLite adapter's 500 rows per update and 1,000 ids per load.
    let r = compare!(Policy::default(), large, 1_203);
    for (i, a) in r.answer.releases.iter().enumerate() {
        let committed = *a == Ok(leasehold_core::Release::Committed);
        assert_eq!(committed, i % 7 != 3, "release {i}: {a:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_wider_than_one_read_page_takes_its_max() {
    // Above the SQLite adapter's 200 rows per aggregate read, which it
    // reads page by page; every page but the last is full, and the last
    // stops at what the batch may take though more jobs wait: its claims'
    // maxes, or (below them) the queue's parallelism limit.
    let granted = |r: &Outcome3| -> Vec<usize> {
        r.answer
            .claims
            .iter()
            .map(|c| c.as_ref().map_or(0, Vec::len))
            .collect()
    };
    let r = compare!(Policy::default(), wide, 450, &[450]);
    assert_eq!(granted(&r), [450], "as many jobs as asked");
    let r = compare!(Policy::default(), wide, 500, &[450]);
    assert_eq!(granted(&r), [450], "no more than asked");
    let limited = Policy::builder()
        .parallelism("wide", 450)
        .build()
        .expect("policy");
    let r = compare!(limited, wide, 700, &[300, 300]);
    assert_eq!(granted(&r), [300, 150], "no more than the limit");
}

/// The releases of `mixed` (committed, repeated, lost, refused, unknown
/// job, returned) for four leases of queue `rm` held by `s`.
async fn release_many_requests<S: Store>(s: &S, clock: &ManualStoreClock) -> Vec<ReleaseRequest> {
    for i in 0..4u8 {
        s.enqueue(NewJob::new("rm", vec![i]))
            .await
            .expect("enqueue");
    }
    clock.advance(Millis(5));
    let l = s.claim(claim_req("w", "rm", 4)).await.expect("claim");
    assert_eq!(l.len(), 4);
    clock.advance(Millis(5));
    vec![
        release(l[0].job, l[0].token, done("a")),
        release(l[0].job, l[0].token, done("a")),
        release(l[0].job, l[0].token, done("other")),
        release(l[1].job, Token(l[1].token.0 + 5), done("b")),
        release(JobId(999_999), Token(1), done("g")),
        release(l[2].job, l[2].token, Outcome::Returned),
        release(l[3].job, l[3].token, failed("x", true)),
    ]
}

/// `release_many` (the SQL stores' one-transaction releases, outside
/// `Store::batch`) answers each request, and leaves rows and audit events,
/// as the memory store answering the same requests one by one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_many_answers_as_its_requests_one_by_one() {
    let clock = ManualStoreClock::new(MANUAL_EPOCH);
    let mem = MemoryStore::with_clock(Policy::default(), clock.clone());
    let reqs = release_many_requests(&mem, &clock).await;
    let mut answers = Vec::new();
    for r in reqs {
        answers.push(mem.release(r).await);
    }
    use leasehold_core::Release;
    assert_eq!(answers.len(), 7);
    assert_eq!(answers[0], Ok(Release::Committed));
    assert_eq!(answers[2], Ok(Release::Lost), "same token, other outcome");
    let answer = BatchAnswer {
        releases: answers,
        claims: Vec::new(),
    };
    let reference = finish(&mem, answer, Some(mem.events())).await;
    on_each_sql_store!(Policy::default(), |s, clock, name| {
        let reqs = release_many_requests(s, &clock).await;
        let answers = s.release_many(&reqs).await.expect("release_many");
        let answer = BatchAnswer {
            releases: answers,
            claims: Vec::new(),
        };
        let events = s.events().await.expect("events");
        let got = finish(s, answer, Some(events)).await;
        assert_eq!(got, reference, "{name}");
    });
}

/// The job whose key is taken before `enqueue_many` is called.
fn taken() -> NewJob {
    NewJob::new("em", b"b".to_vec()).idempotency_key("taken")
}

/// The jobs of the `enqueue_many` cases: plain ones, a key already taken
/// before the call, and a key repeated inside it.
fn many_jobs() -> Vec<NewJob> {
    vec![
        NewJob::new("em", b"a".to_vec()),
        taken(),
        NewJob::new("em", b"c".to_vec()).priority(3),
        NewJob::new("em", b"d".to_vec()).idempotency_key("twice"),
        NewJob::new("em", b"d".to_vec()).idempotency_key("twice"),
        NewJob::new("other", b"f".to_vec()),
    ]
}

/// What `enqueue_many` must leave: the ids and rows of the same jobs
/// enqueued one by one.
async fn enqueued_one_by_one(clock: &ManualStoreClock) -> (Vec<JobId>, Outcome3) {
    let mem = MemoryStore::with_clock(Policy::default(), clock.clone());
    mem.enqueue(taken()).await.expect("enqueue");
    let mut ids = Vec::new();
    for job in many_jobs() {
        ids.push(mem.enqueue(job).await.expect("enqueue"));
    }
    let events = Some(mem.events());
    (ids, finish(&mem, BatchAnswer::default(), events).await)
}

/// `enqueue_many` (the SQL stores' one-transaction enqueue) answers each
/// job's id, and leaves rows and audit events, as the same jobs enqueued
/// one by one; one bad job refuses the whole call and stores nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueue_many_answers_as_its_jobs_one_by_one() {
    let (ids, reference) = enqueued_one_by_one(&ManualStoreClock::new(MANUAL_EPOCH)).await;
    assert_eq!(ids.len(), 6);
    assert_eq!(ids[1], JobId(1), "the taken key answers the first job");
    assert_eq!(ids[3], ids[4], "a key repeated in the call is one job");
    let bad = [
        NewJob::new("em", b"x".to_vec()),
        NewJob::new("", b"y".to_vec()),
    ];

    on_each_sql_store!(Policy::default(), |s, _clock, name| {
        s.enqueue(taken()).await.expect("enqueue");
        let got = s.enqueue_many(&many_jobs()).await.expect("enqueue_many");
        assert_eq!(got, ids, "{name} ids");
        let refused = s.enqueue_many(&bad).await;
        assert!(
            matches!(refused, Err(leasehold_core::StoreError::Input(_))),
            "{name}: {refused:?}"
        );
        let events = s.events().await.expect("events");
        let got = finish(s, BatchAnswer::default(), Some(events)).await;
        assert_eq!(got, reference, "{name}");
    });
}
