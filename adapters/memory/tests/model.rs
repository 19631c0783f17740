//! Differential state-machine test: random operation sequences and clock
//! advances applied to the memory adapter and to a deliberately simple
//! reference model written here from the spec, sharing no code with the
//! core. Answers and rows must agree after every step, and I1, I2, I7, I8
//! are checked on the adapter's history after every step.

use leasehold_core::*;
use leasehold_memory::MemoryStore;
use proptest::prelude::*;
use std::collections::BTreeMap;

const QUEUES: [&str; 2] = ["a", "b"];
const LIMIT_A: u32 = 2;
const BASE: u64 = 100;
const CAP: u64 = 1000;

fn policy() -> Policy {
    Policy::builder()
        .backoff(Backoff {
            base: Millis(BASE),
            cap: Millis(CAP),
            jitter_permille: 0,
            seed: 0,
        })
        .parallelism("a", LIMIT_A)
        .build()
        .unwrap()
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

/// The reference model's row.
#[derive(Clone, Debug, PartialEq)]
struct M {
    queue: String,
    payload: Vec<u8>,
    priority: i32,
    run_at: i64,
    state: JobState,
    attempt: u32,
    max: u32,
    token: u64,
    holder: Option<String>,
    expires: Option<i64>,
    cancel_req: bool,
    result: Option<Vec<u8>>,
    released: Option<(u64, Outcome)>,
    key: Option<String>,
}

#[derive(Default)]
struct Model {
    jobs: BTreeMap<u64, M>,
    now: i64,
}

/// Every answer reduced to comparable data.
#[derive(Clone, Debug, PartialEq)]
enum Answer {
    Err,
    Id(u64),
    Leases(Vec<(u64, u64, u32, i64)>),
    Renewal(Renewal),
    Release(Release),
    Swept(Vec<(u64, u64, String, JobState)>),
    Cancel(CancelOutcome),
}

impl Model {
    fn enqueue(
        &mut self,
        queue: &str,
        payload: Vec<u8>,
        priority: i32,
        delay: u64,
        max: u32,
        key: Option<String>,
    ) -> Answer {
        if !(1..=1000).contains(&max) {
            return Answer::Err;
        }
        if let Some(k) = &key {
            if let Some((id, m)) = self.jobs.iter().find(|(_, m)| m.key.as_ref() == Some(k)) {
                let same = m.queue == queue
                    && m.payload == payload
                    && m.priority == priority
                    && m.max == max;
                return if same { Answer::Id(*id) } else { Answer::Err };
            }
        }
        let id = self.jobs.len() as u64 + 1;
        self.jobs.insert(
            id,
            M {
                queue: queue.into(),
                payload,
                priority,
                run_at: self.now + delay as i64,
                state: JobState::Pending,
                attempt: 0,
                max,
                token: 0,
                holder: None,
                expires: None,
                cancel_req: false,
                result: None,
                released: None,
                key,
            },
        );
        Answer::Id(id)
    }

    fn claim(&mut self, worker: &str, queue: &str, lease: u64, n: u32) -> Answer {
        if lease == 0 || n == 0 {
            return Answer::Err;
        }
        let running = self
            .jobs
            .values()
            .filter(|m| m.queue == queue && m.state == JobState::Running)
            .count() as u32;
        let room = if queue == "a" {
            LIMIT_A.saturating_sub(running)
        } else {
            u32::MAX
        };
        let mut due: Vec<(i32, i64, u64)> = self
            .jobs
            .iter()
            .filter(|(_, m)| {
                m.queue == queue && m.state == JobState::Pending && m.run_at <= self.now
            })
            .map(|(id, m)| (-m.priority, m.run_at, *id))
            .collect();
        due.sort();
        let mut out = Vec::new();
        for (_, _, id) in due.into_iter().take(n.min(room) as usize) {
            let m = self.jobs.get_mut(&id).unwrap();
            m.state = JobState::Running;
            m.token += 1;
            m.attempt += 1;
            m.holder = Some(worker.into());
            m.expires = Some(self.now + lease as i64);
            out.push((id, m.token, m.attempt, self.now + lease as i64));
        }
        Answer::Leases(out)
    }

    fn renew(&mut self, id: u64, token: u64, lease: u64) -> Answer {
        let now = self.now;
        let Some(m) = self.jobs.get_mut(&id) else {
            return Answer::Err;
        };
        if token > m.token {
            return Answer::Err;
        }
        if m.state != JobState::Running || m.token != token {
            return Answer::Renewal(Renewal::Lost);
        }
        m.expires = Some(now + lease as i64);
        Answer::Renewal(Renewal::Renewed {
            expires_at: StoreTime(now + lease as i64),
            cancel_requested: m.cancel_req,
        })
    }

    fn release(&mut self, id: u64, token: u64, outcome: Outcome) -> Answer {
        let now = self.now;
        let Some(m) = self.jobs.get_mut(&id) else {
            return Answer::Err;
        };
        if token > m.token || token == 0 {
            return Answer::Err;
        }
        if m.released.as_ref() == Some(&(token, outcome.clone())) {
            return Answer::Release(Release::Committed);
        }
        if m.state != JobState::Running || m.token != token {
            return Answer::Release(Release::Lost);
        }
        m.holder = None;
        m.expires = None;
        m.released = Some((token, outcome.clone()));
        m.state = match outcome {
            Outcome::Succeeded(r) => {
                m.result = Some(r);
                JobState::Succeeded
            }
            Outcome::Failed { retryable, .. } => {
                if m.cancel_req {
                    JobState::Cancelled
                } else if !retryable || m.attempt >= m.max {
                    JobState::Dead
                } else {
                    let backoff = (BASE << (m.attempt - 1).min(40)).min(CAP);
                    m.run_at = now + backoff as i64;
                    JobState::Pending
                }
            }
            Outcome::Returned => {
                if m.cancel_req {
                    JobState::Cancelled
                } else {
                    m.attempt -= 1;
                    m.run_at = now;
                    JobState::Pending
                }
            }
            Outcome::Cancelled => JobState::Cancelled,
        };
        m.cancel_req = false;
        Answer::Release(Release::Committed)
    }

    fn sweep(&mut self, limit: u32) -> Answer {
        let now = self.now;
        let mut expired: Vec<(i64, u64)> = self
            .jobs
            .iter()
            .filter(|(_, m)| m.state == JobState::Running && m.expires.unwrap() <= now)
            .map(|(id, m)| (m.expires.unwrap(), *id))
            .collect();
        expired.sort();
        let mut out = Vec::new();
        for (_, id) in expired.into_iter().take(limit as usize) {
            let m = self.jobs.get_mut(&id).unwrap();
            let holder = m.holder.take().unwrap();
            m.expires = None;
            m.state = if m.cancel_req {
                JobState::Cancelled
            } else if m.attempt >= m.max {
                JobState::Dead
            } else {
                m.run_at = now;
                JobState::Pending
            };
            m.cancel_req = false;
            out.push((id, m.token, holder, m.state));
        }
        Answer::Swept(out)
    }

    fn cancel(&mut self, id: u64) -> Answer {
        let Some(m) = self.jobs.get_mut(&id) else {
            return Answer::Err;
        };
        Answer::Cancel(match m.state {
            JobState::Pending => {
                m.state = JobState::Cancelled;
                CancelOutcome::Cancelled
            }
            JobState::Running => {
                m.cancel_req = true;
                CancelOutcome::Requested
            }
            s => CancelOutcome::AlreadyTerminal(s),
        })
    }
}

fn store_answer<T>(r: Result<T, StoreError>, f: impl FnOnce(T) -> Answer) -> Answer {
    match r {
        Ok(v) => f(v),
        Err(StoreError::Input(_)) => Answer::Err,
        Err(e) => panic!("the memory store never fails otherwise: {e}"),
    }
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

fn compare_rows(model: &Model, rows: &[JobRecord]) -> Result<(), String> {
    if model.jobs.len() != rows.len() {
        return Err(format!(
            "{} model jobs vs {} rows",
            model.jobs.len(),
            rows.len()
        ));
    }
    for r in rows {
        let m = &model.jobs[&r.id.0];
        let same = m.state == r.state
            && m.attempt == r.attempt
            && m.token == r.token.0
            && m.holder.as_deref() == r.holder.as_ref().map(|h| h.as_str())
            && m.expires == r.expires_at.map(|t| t.0)
            && m.cancel_req == r.cancel_requested
            && m.result == r.result
            && m.run_at == r.run_at.0;
        if !same {
            return Err(format!("{} differs:\nmodel {m:?}\nstore {r:?}", r.id));
        }
    }
    Ok(())
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let clock = ManualStoreClock::new(StoreTime(0));
    let store = MemoryStore::with_clock(policy(), clock.clone());
    let mut model = Model::default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for (step, op) in ops.into_iter().enumerate() {
        let (want, got) = match op.clone() {
            Op::Enqueue {
                queue,
                priority,
                delay,
                max_attempts,
                key,
                payload,
            } => {
                let key = key.map(|k| format!("k{k}"));
                let want = model.enqueue(
                    QUEUES[queue],
                    vec![payload],
                    priority,
                    delay,
                    max_attempts,
                    key.clone(),
                );
                let mut spec = NewJob::new(QUEUES[queue], vec![payload])
                    .priority(priority)
                    .delay(Millis(delay))
                    .max_attempts(max_attempts);
                spec.idempotency_key = key;
                (
                    want,
                    store_answer(rt.block_on(store.enqueue(spec)), |id| Answer::Id(id.0)),
                )
            }
            Op::Claim {
                worker,
                queue,
                lease,
                n,
            } => {
                let w = format!("w{worker}");
                let want = model.claim(&w, QUEUES[queue], lease, n);
                let req = ClaimRequest {
                    worker: WorkerId::new(w),
                    queue: QUEUES[queue].into(),
                    lease: Millis(lease),
                    max: n,
                };
                let got = store_answer(rt.block_on(store.claim(req)), |ls| {
                    Answer::Leases(
                        ls.into_iter()
                            .map(|l| (l.job.0, l.token.0, l.attempt, l.expires_at.0))
                            .collect(),
                    )
                });
                (want, got)
            }
            Op::Renew {
                job,
                token_back,
                lease,
            } => {
                let token = model
                    .jobs
                    .get(&job)
                    .map(|m| m.token.saturating_sub(token_back))
                    .unwrap_or(1);
                let want = model.renew(job, token, lease);
                let req = RenewRequest {
                    job: JobId(job),
                    token: Token(token),
                    lease: Millis(lease),
                };
                (
                    want,
                    store_answer(rt.block_on(store.renew(req)), Answer::Renewal),
                )
            }
            Op::Release {
                job,
                token_back,
                outcome,
            } => {
                let token = model
                    .jobs
                    .get(&job)
                    .map(|m| m.token.saturating_sub(token_back))
                    .unwrap_or(1);
                let want = model.release(job, token, outcome_of(outcome));
                let req = ReleaseRequest {
                    job: JobId(job),
                    token: Token(token),
                    outcome: outcome_of(outcome),
                };
                (
                    want,
                    store_answer(rt.block_on(store.release(req)), Answer::Release),
                )
            }
            Op::Sweep { limit } => {
                let want = model.sweep(limit);
                let got = store_answer(rt.block_on(store.sweep(SweepRequest { limit })), |rs| {
                    Answer::Swept(
                        rs.into_iter()
                            .map(|r| (r.job.0, r.token.0, r.holder.0, r.to))
                            .collect(),
                    )
                });
                (want, got)
            }
            Op::Cancel { job } => {
                let want = model.cancel(job);
                (
                    want,
                    store_answer(rt.block_on(store.cancel(JobId(job))), Answer::Cancel),
                )
            }
            Op::Advance { ms } => {
                model.now += ms as i64;
                clock.advance(Millis(ms));
                (Answer::Err, Answer::Err)
            }
        };
        prop_assert_eq!(&want, &got, "step {}: {:?}", step, op);
        let rows = store.rows();
        compare_rows(&model, &rows)
            .map_err(|e| TestCaseError::fail(format!("step {step} {op:?}: {e}")))?;
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
