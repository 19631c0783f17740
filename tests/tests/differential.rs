//! Differential test: the same random operation sequences against memory,
//! SQLite and Postgres give the same answers, the same final rows and the
//! same audit events.
//!
//! All three stores read one kind of manual clock started at the same
//! instant and stepped by the sequence's `Advance` operations (Postgres via
//! its test-only clock override), and ids are assigned in enqueue order by
//! all three, so answers compare exactly: no normalisation is needed.
//! Without `DATABASE_URL` (and without `CI`), memory and SQLite are compared
//! and Postgres is skipped loudly.
//!
//! `PROPTEST_CASES` sets the number of sequences (default 48).

use leasehold_core::{
    CancelOutcome, ClaimRequest, CrashReport, Event, JobId, JobRecord, Lease, ListRequest,
    ManualStoreClock, Millis, NewJob, Outcome, Policy, Release, ReleaseRequest, RenewRequest,
    Renewal, Store, StoreError, SweepRequest, Token, WorkerId,
};
use leasehold_tests::{database_url, pg_store, sqlite_store, MANUAL_EPOCH};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

const QUEUES: [&str; 2] = ["alpha", "beta"];
const LEASES: [u64; 4] = [0, 100, 1_000, 5_000];
const ADVANCES: [u64; 4] = [1, 50, 500, 2_500];

/// One client request (or a step of the store clock).
#[derive(Clone, Debug)]
enum Op {
    Enqueue {
        queue: usize,
        payload: Vec<u8>,
        priority: i32,
        delay: u64,
        max_attempts: u32,
        key: Option<u8>,
    },
    Claim {
        worker: u8,
        queue: usize,
        lease: usize,
        max: u32,
    },
    Renew {
        job: usize,
        token_delta: i8,
        lease: usize,
    },
    Release {
        job: usize,
        token_delta: i8,
        outcome: Outcome,
    },
    Sweep {
        limit: u32,
    },
    Cancel {
        job: usize,
    },
    Get {
        job: usize,
    },
    Advance {
        by: usize,
    },
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..3).prop_map(Outcome::Succeeded),
        (any::<bool>(), 0..2u8).prop_map(|(retryable, e)| Outcome::Failed {
            error: format!("e{e}"),
            retryable
        }),
        Just(Outcome::Returned),
        Just(Outcome::Cancelled),
        // Oversized for the test policy's result cap: bad input.
        Just(Outcome::Succeeded(vec![7; 40])),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..2usize, prop::collection::vec(any::<u8>(), 0..3), -1..2i32, prop::sample::select(vec![0u64, 0, 200, 3_000]), 1..4u32, prop::option::of(0..3u8))
            .prop_map(|(queue, payload, priority, delay, max_attempts, key)| Op::Enqueue { queue, payload, priority, delay, max_attempts, key }),
        4 => (0..3u8, 0..2usize, 0..4usize, 1..4u32)
            .prop_map(|(worker, queue, lease, max)| Op::Claim { worker, queue, lease, max }),
        2 => (0..12usize, -1..2i8, 0..4usize)
            .prop_map(|(job, token_delta, lease)| Op::Renew { job, token_delta, lease }),
        4 => (0..12usize, -1..2i8, outcome())
            .prop_map(|(job, token_delta, outcome)| Op::Release { job, token_delta, outcome }),
        2 => (1..4u32).prop_map(|limit| Op::Sweep { limit }),
        1 => (0..12usize).prop_map(|job| Op::Cancel { job }),
        1 => (0..12usize).prop_map(|job| Op::Get { job }),
        3 => (0..4usize).prop_map(|by| Op::Advance { by }),
    ]
}

/// Every kind of answer, compared with `==` across stores.
#[derive(Clone, Debug, PartialEq)]
enum Answer {
    Id(Result<JobId, StoreError>),
    Leases(Result<Vec<Lease>, StoreError>),
    Renewal(Result<Renewal, StoreError>),
    Release(Result<Release, StoreError>),
    Reports(Result<Vec<CrashReport>, StoreError>),
    Cancel(Result<CancelOutcome, StoreError>),
    Row(Result<Option<JobRecord>, StoreError>),
    Advanced,
}

/// A store under test and its clock.
struct Subject<S> {
    name: &'static str,
    store: S,
    clock: ManualStoreClock,
}

fn policy() -> Policy {
    Policy::builder()
        .limits(leasehold_core::Limits {
            max_result_bytes: 16,
            ..Default::default()
        })
        .parallelism("beta", 2)
        .build()
        .expect("policy")
}

/// The job an op names: an existing one by index, or one that does not exist.
fn job_of(ids: &[JobId], i: usize) -> JobId {
    ids.get(i).copied().unwrap_or(JobId(10_000 + i as u64))
}

/// The token an op names: the job's current token moved by `delta`.
fn token_of(current: Option<&JobRecord>, delta: i8) -> Token {
    let t = current.map_or(1, |r| r.token.0) as i64 + i64::from(delta);
    Token(t.max(0) as u64)
}

async fn apply<S: Store>(
    s: &Subject<S>,
    op: &Op,
    ids: &[JobId],
    reference: Option<&JobRecord>,
) -> Answer {
    let st = &s.store;
    match op {
        Op::Enqueue {
            queue,
            payload,
            priority,
            delay,
            max_attempts,
            key,
        } => {
            let mut spec = NewJob::new(QUEUES[*queue], payload.clone())
                .priority(*priority)
                .delay(Millis(*delay))
                .max_attempts(*max_attempts);
            if let Some(k) = key {
                spec = spec.idempotency_key(format!("key-{k}"));
            }
            Answer::Id(st.enqueue(spec).await)
        }
        Op::Claim {
            worker,
            queue,
            lease,
            max,
        } => Answer::Leases(
            st.claim(ClaimRequest {
                worker: WorkerId::new(format!("w{worker}")),
                queue: QUEUES[*queue].into(),
                lease: Millis(LEASES[*lease]),
                max: *max,
            })
            .await,
        ),
        Op::Renew {
            job,
            token_delta,
            lease,
        } => Answer::Renewal(
            st.renew(RenewRequest {
                job: job_of(ids, *job),
                token: token_of(reference, *token_delta),
                lease: Millis(LEASES[*lease]),
            })
            .await,
        ),
        Op::Release {
            job,
            token_delta,
            outcome,
        } => Answer::Release(
            st.release(ReleaseRequest {
                job: job_of(ids, *job),
                token: token_of(reference, *token_delta),
                outcome: outcome.clone(),
            })
            .await,
        ),
        Op::Sweep { limit } => Answer::Reports(st.sweep(SweepRequest { limit: *limit }).await),
        Op::Cancel { job } => Answer::Cancel(st.cancel(job_of(ids, *job)).await),
        Op::Get { job } => Answer::Row(st.get(job_of(ids, *job)).await),
        Op::Advance { by } => {
            s.clock.advance(Millis(ADVANCES[*by]));
            Answer::Advanced
        }
    }
}

async fn all_rows<S: Store>(s: &S) -> Vec<JobRecord> {
    s.list(ListRequest {
        after: None,
        limit: 10_000,
    })
    .await
    .expect("list")
}

/// Runs `ops` against every subject; the first one is the reference.
async fn check(ops: Vec<Op>, url: Option<String>) -> Result<(), TestCaseError> {
    let clock = || ManualStoreClock::new(MANUAL_EPOCH);
    let mem_clock = clock();
    let memory = Subject {
        name: "memory",
        store: leasehold_memory::MemoryStore::with_clock(policy(), mem_clock.clone()),
        clock: mem_clock,
    };
    let sq_clock = clock();
    let sqlite = Subject {
        name: "sqlite",
        store: sqlite_store(policy(), sq_clock.clone()).await,
        clock: sq_clock,
    };
    let pg_clock = clock();
    let postgres = match &url {
        Some(u) => Some(Subject {
            name: "postgres",
            store: pg_store(u, policy(), Some(pg_clock.clone())).await,
            clock: pg_clock,
        }),
        None => None,
    };

    let mut ids: Vec<JobId> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        let target = match op {
            Op::Renew { job, .. } | Op::Release { job, .. } => Some(job_of(&ids, *job)),
            _ => None,
        };
        let reference = match target {
            Some(j) => memory.store.get(j).await.expect("memory get"),
            None => None,
        };
        let expected = apply(&memory, op, &ids, reference.as_ref()).await;
        let got_sqlite = apply(&sqlite, op, &ids, reference.as_ref()).await;
        prop_assert_eq!(
            &got_sqlite,
            &expected,
            "step {}: {:?}: {} vs {}",
            step,
            op,
            sqlite.name,
            memory.name
        );
        if let Some(pg) = &postgres {
            let got_pg = apply(pg, op, &ids, reference.as_ref()).await;
            prop_assert_eq!(
                &got_pg,
                &expected,
                "step {}: {:?}: {} vs {}",
                step,
                op,
                pg.name,
                memory.name
            );
        }
        if let Answer::Id(Ok(id)) = expected {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }

    let final_rows = all_rows(&memory.store).await;
    let events: Vec<Event> = memory.store.events();
    // Each SQL store's rows and events, against the memory store's.
    let mut ends = vec![(
        "sqlite",
        all_rows(&sqlite.store).await,
        sqlite.store.inner().events().await.expect("events"),
    )];
    if let Some(pg) = &postgres {
        let pg_events = pg.store.inner().events().await.expect("events");
        ends.push(("postgres", all_rows(&pg.store).await, pg_events));
    }
    for (store, rows, store_events) in ends {
        prop_assert_eq!(&rows, &final_rows, "final rows: {} vs memory", store);
        prop_assert_eq!(&store_events, &events, "events: {} vs memory", store);
    }
    Ok(())
}

#[test]
fn same_operations_give_same_answers_and_states_on_every_adapter() {
    let url = database_url();
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut runner = TestRunner::new(Config {
        cases,
        max_shrink_iters: 300,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = prop::collection::vec(op(), 1..48);
    let result = runner.run(&strategy, |ops| rt.block_on(check(ops, url.clone())));
    if let Err(e) = result {
        panic!("differential test failed: {e}");
    }
}
