//! Differential state-machine test of the memory adapter: random operation
//! sequences and clock advances applied to the store, every answer and
//! every row judged after each step by the checker's reference model of
//! the spec (`leasehold_check::checker::answers::reference`, the model
//! behind I11, which shares no code with the core's transitions). I1, I2,
//! I7 and I8 are also checked on the adapter's own event history after
//! every step.

use leasehold_check::checker::answers::reference::Reference;
use leasehold_core::*;
use leasehold_memory::MemoryStore;
use leasehold_model::config::SimConfig;
use leasehold_model::duration::Dur;
use leasehold_model::history::ReadRow;
use leasehold_model::protocol::policy_of;
use leasehold_model::wire::WireOp;
use leasehold_model::wire_store::apply;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Queue "a" is limited to `LIMIT_A` running jobs; "b" is not.
const QUEUES: [&str; 2] = ["a", "b"];
const LIMIT_A: u32 = 2;
const BASE: u64 = 100;
const CAP: u64 = 1000;

/// The one configuration both sides read: the store's policy is built from
/// it exactly as the simulator builds a store's, and the model takes its
/// rules from it.
fn config() -> SimConfig {
    let mut cfg = SimConfig::default();
    cfg.workload.queues = vec![QUEUES[0].to_string()];
    cfg.protocol.parallelism = Some(LIMIT_A);
    cfg.protocol.backoff_base = Dur::ms(BASE);
    cfg.protocol.backoff_cap = Dur::ms(CAP);
    cfg
}

#[derive(Clone, Debug)]
enum Op {
    Enqueue {
        queue: usize,
        priority: i32,
        delay: u64,
        max_attempts: u32,
        key: Option<u8>,
        payload: u8,
    },
    Claim {
        worker: u8,
        queue: usize,
        lease: u64,
        n: u32,
    },
    Renew {
        job: u64,
        token_back: u64,
        lease: u64,
    },
    Release {
        job: u64,
        token_back: u64,
        outcome: u8,
    },
    Sweep {
        limit: u32,
    },
    Cancel {
        job: u64,
    },
    Advance {
        ms: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..2usize, -1..2i32, prop_oneof![Just(0u64), 1..300u64], 0..4u32, proptest::option::weighted(0.3, 0..3u8), 0..3u8)
            .prop_map(|(queue, priority, delay, max_attempts, key, payload)| Op::Enqueue { queue, priority, delay, max_attempts, key, payload }),
        3 => (0..3u8, 0..2usize, prop_oneof![Just(0u64), 50..500u64], 0..4u32)
            .prop_map(|(worker, queue, lease, n)| Op::Claim { worker, queue, lease, n }),
        2 => (1..8u64, 0..2u64, 1..500u64).prop_map(|(job, token_back, lease)| Op::Renew { job, token_back, lease }),
        3 => (1..8u64, 0..2u64, 0..6u8).prop_map(|(job, token_back, outcome)| Op::Release { job, token_back, outcome }),
        1 => (1..4u32).prop_map(|limit| Op::Sweep { limit }),
        1 => (1..8u64).prop_map(|job| Op::Cancel { job }),
        3 => (1..400u64).prop_map(|ms| Op::Advance { ms }),
    ]
}

fn outcome_of(code: u8) -> Outcome {
    match code {
        0 => Outcome::Succeeded(b"ok".to_vec()),
        1 => Outcome::Succeeded(b"other".to_vec()),
        2 => Outcome::Failed {
            error: "e".into(),
            retryable: true,
        },
        3 => Outcome::Failed {
            error: "e".into(),
            retryable: false,
        },
        4 => Outcome::Returned,
        _ => Outcome::Cancelled,
    }
}

/// The token a renew or release names: the job's current one, `back`
/// tokens earlier (stale), or 1 for a job the store does not hold.
fn token_of(rows: &[JobRecord], job: u64, back: u64) -> Token {
    rows.iter()
        .find(|r| r.id == JobId(job))
        .map_or(Token(1), |r| Token(r.token.0.saturating_sub(back)))
}

/// The store request of a step; `None` for a clock advance.
fn request(op: &Op, rows: &[JobRecord]) -> Option<WireOp> {
    Some(match op.clone() {
        Op::Enqueue {
            queue,
            priority,
            delay,
            max_attempts,
            key,
            payload,
        } => {
            let mut spec = NewJob::new(QUEUES[queue], vec![payload])
                .priority(priority)
                .delay(Millis(delay))
                .max_attempts(max_attempts);
            spec.idempotency_key = key.map(|k| format!("k{k}"));
            WireOp::Enqueue(spec)
        }
        Op::Claim {
            worker,
            queue,
            lease,
            n,
        } => WireOp::Claim(ClaimRequest {
            worker: WorkerId::new(format!("w{worker}")),
            queue: QUEUES[queue].into(),
            lease: Millis(lease),
            max: n,
        }),
        Op::Renew {
            job,
            token_back,
            lease,
        } => WireOp::Renew(RenewRequest {
            job: JobId(job),
            token: token_of(rows, job, token_back),
            lease: Millis(lease),
        }),
        Op::Release {
            job,
            token_back,
            outcome,
        } => WireOp::Release(ReleaseRequest {
            job: JobId(job),
            token: token_of(rows, job, token_back),
            outcome: outcome_of(outcome),
        }),
        Op::Sweep { limit } => WireOp::Sweep(SweepRequest { limit }, None),
        Op::Cancel { job } => WireOp::Cancel(JobId(job)),
        Op::Advance { .. } => return None,
    })
}

/// I1, I2, I7, I8 on the adapter's own history and rows.
fn check_invariants(events: &[Event], rows: &[JobRecord]) -> Result<(), String> {
    let mut last_token: BTreeMap<JobId, Token> = BTreeMap::new();
    let mut terminal: BTreeMap<JobId, JobState> = BTreeMap::new();
    let mut live: BTreeMap<JobId, Token> = BTreeMap::new();
    let mut cancelled_pending: BTreeMap<JobId, bool> = BTreeMap::new();
    for e in events {
        if let Some(t) = terminal.get(&e.job) {
            return Err(format!("I2: {} changed after terminal {t}: {e:?}", e.job));
        }
        match &e.kind {
            EventKind::Claimed { .. } => {
                let prev = last_token.insert(e.job, e.token).unwrap_or(Token(0));
                if e.token <= prev {
                    return Err(format!(
                        "I1: token {} not above {prev} for {}",
                        e.token, e.job
                    ));
                }
                if live.insert(e.job, e.token).is_some() {
                    return Err(format!("I1: two live leases on {}", e.job));
                }
                if cancelled_pending.get(&e.job) == Some(&true) {
                    return Err(format!(
                        "I7: {} ran after being cancelled while pending",
                        e.job
                    ));
                }
            }
            EventKind::Released { .. } if live.remove(&e.job) != Some(e.token) => {
                return Err(format!(
                    "I2: release of {} by {} which did not hold it",
                    e.job, e.token
                ));
            }
            EventKind::Swept { .. } => {
                live.remove(&e.job);
            }
            EventKind::Cancelled => {
                cancelled_pending.insert(e.job, true);
            }
            _ => {}
        }
        if e.from == Some(JobState::Cancelled) || (e.from.is_some_and(|f| f.is_terminal())) {
            return Err(format!("I7: {} left a terminal state", e.job));
        }
        if e.to.is_terminal() {
            terminal.insert(e.job, e.to);
        }
    }
    for r in rows {
        if r.attempt > r.max_attempts {
            return Err(format!(
                "I8: {} attempt {} > {}",
                r.id, r.attempt, r.max_attempts
            ));
        }
        if r.state == JobState::Dead && r.attempt < r.max_attempts {
            let not_retryable = r.error.as_deref() == Some("e")
                && events.iter().any(|e| {
                    e.job == r.id
                        && matches!(
                            &e.kind,
                            EventKind::Released {
                                outcome: Outcome::Failed {
                                    retryable: false,
                                    ..
                                },
                                ..
                            }
                        )
                });
            if !not_retryable {
                return Err(format!(
                    "I8: {} dead with budget left and no permanent failure",
                    r.id
                ));
            }
        }
    }
    Ok(())
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let cfg = config();
    let clock = ManualStoreClock::new(StoreTime(0));
    let store = MemoryStore::with_clock(policy_of(&cfg, 0).unwrap(), clock.clone());
    let mut model = Reference::new(&cfg);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for (step, op) in ops.into_iter().enumerate() {
        let Some(req) = request(&op, &store.rows()) else {
            if let Op::Advance { ms } = op {
                clock.advance(Millis(ms));
            }
            continue;
        };
        let now = clock.now();
        let reply = rt.block_on(apply(&store, req.clone())).summary();
        let rows = store.rows();
        let images: Vec<ReadRow> = rows.iter().map(ReadRow::of).collect();
        let found = model.judge(&req.summary(), now, &reply, &images);
        prop_assert!(
            found.is_empty(),
            "step {}: {:?} answered {:?}: {:#?}",
            step,
            op,
            reply,
            found.iter().map(|v| &v.message).collect::<Vec<_>>()
        );
        check_invariants(&store.events(), &rows)
            .map_err(|e| TestCaseError::fail(format!("step {step} {op:?}: {e}")))?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn memory_store_agrees_with_the_reference_model(ops in proptest::collection::vec(op(), 1..80)) {
        run(ops)?;
    }
}

#[test]
fn invariant_checks_bite() {
    // A release by a token that never held the lease must be flagged (I2).
    let ev = |kind, token, to| Event {
        job: JobId(1),
        token: Token(token),
        worker: None,
        from: Some(JobState::Running),
        to,
        at: StoreTime(0),
        version: 1,
        kind,
    };
    let claimed = ev(
        EventKind::Claimed {
            attempt: 1,
            expires_at: StoreTime(5),
        },
        2,
        JobState::Running,
    );
    let stale = ev(
        EventKind::Released {
            outcome: Outcome::Returned,
            run_at: None,
        },
        1,
        JobState::Pending,
    );
    assert!(check_invariants(&[claimed.clone(), stale], &[])
        .unwrap_err()
        .starts_with("I2"));
    let again = ev(
        EventKind::Claimed {
            attempt: 2,
            expires_at: StoreTime(5),
        },
        2,
        JobState::Running,
    );
    assert!(check_invariants(&[claimed, again], &[])
        .unwrap_err()
        .starts_with("I1"));
}
