//! Builders of hand-written histories for the invariant tests: store
//! events, records and rows with every field a test does not care about
//! set once here, so each test names only what its case is about.
//!
//! Store times are offsets from [`T0`]; true times are ms from the start
//! of the run. Each test binary uses a part of these builders.

// Event builders mirror every field of an event.
#![allow(clippy::too_many_arguments, dead_code)]

use leasehold_check::checker::{check, check_store_events};
use leasehold_core::{
    Event, EventKind, JobId, JobRecord, JobState, Millis, Outcome, StoreTime, Token, WorkerId,
};
use leasehold_model::config::{InvariantId, SimConfig};
use leasehold_model::history::{BeliefWhat, HandlerPhase, History, Op, Record, Reply};

/// The store clock at the start of every hand-written history.
pub const T0: i64 = 1_704_067_200_000;

/// A store event with every field given.
pub fn ev(
    job: u64,
    token: u64,
    w: Option<&str>,
    from: Option<JobState>,
    to: JobState,
    at: i64,
    version: u64,
    kind: EventKind,
) -> Event {
    Event {
        job: JobId(job),
        token: Token(token),
        worker: w.map(WorkerId::new),
        from,
        to,
        at: StoreTime(T0 + at),
        version,
        kind,
    }
}

/// Job `job` enqueued on queue `q` (3 attempts) at `at`, due at once.
pub fn enq(job: u64, at: i64) -> Event {
    ev(
        job,
        0,
        None,
        None,
        JobState::Pending,
        at,
        1,
        EventKind::Enqueued {
            queue: "q".into(),
            max_attempts: 3,
            run_at: StoreTime(T0 + at),
        },
    )
}

/// A pending job claimed by `w` at `at` for 5 s.
pub fn claim(job: u64, token: u64, w: &str, attempt: u32, at: i64, version: u64) -> Event {
    ev(
        job,
        token,
        Some(w),
        Some(JobState::Pending),
        JobState::Running,
        at,
        version,
        EventKind::Claimed {
            attempt,
            expires_at: StoreTime(T0 + at + 5_000),
        },
    )
}

/// A running job released by `w` with `outcome` at `at`.
pub fn released(
    job: u64,
    token: u64,
    w: &str,
    outcome: Outcome,
    to: JobState,
    at: i64,
    version: u64,
    run_at: Option<i64>,
) -> Event {
    ev(
        job,
        token,
        Some(w),
        Some(JobState::Running),
        to,
        at,
        version,
        EventKind::Released {
            outcome,
            run_at: run_at.map(|r| StoreTime(T0 + r)),
        },
    )
}

/// `w`'s lease on `job` (its first attempt), expired at `expired`, swept
/// back to pending at `at`.
pub fn swept(job: u64, token: u64, w: &str, at: i64, version: u64, expired: i64) -> Event {
    ev(
        job,
        token,
        Some(w),
        Some(JobState::Running),
        JobState::Pending,
        at,
        version,
        EventKind::Swept {
            expired_at: StoreTime(T0 + expired),
            attempt: 1,
        },
    )
}

/// A cancel of `job` taking it from `from` to `to` at `at`.
pub fn cancelled(
    job: u64,
    token: u64,
    from: JobState,
    to: JobState,
    at: i64,
    version: u64,
) -> Event {
    ev(
        job,
        token,
        None,
        Some(from),
        to,
        at,
        version,
        EventKind::Cancelled,
    )
}

/// `w1`'s first lease on job 1 (claimed at 10) released at 20 with a
/// retryable failure, the job due again at `run_at`.
pub fn w1_fails_retryably(run_at: i64) -> Event {
    let failure = failed("x", true);
    released(1, 1, "w1", failure, JobState::Pending, 20, 3, Some(run_at))
}

/// A success with these result bytes.
pub fn ok(bytes: &[u8]) -> Outcome {
    Outcome::Succeeded(bytes.to_vec())
}

/// A failure with message `error`.
pub fn failed(error: &str, retryable: bool) -> Outcome {
    Outcome::Failed {
        error: error.into(),
        retryable,
    }
}

/// The invariants the events-only check reports, each once, in order.
pub fn invariants(events: &[Event], parallelism: Option<u32>) -> Vec<InvariantId> {
    let mut v: Vec<InvariantId> = check_store_events(events, parallelism)
        .iter()
        .map(|v| v.invariant)
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The scenario every hand-written history ran: 5 s leases, no client
/// schedule.
pub fn cfg() -> SimConfig {
    let mut c = SimConfig::default();
    c.protocol.lease = leasehold_model::duration::Dur::secs(5);
    // Hand-written histories have no client schedule to compare against.
    c.workload.jobs = 0;
    c
}

/// The run's opening record, faults healed at `heal` ms.
pub fn run_record(heal: u64) -> Record {
    Record::Run {
        scenario: "hand".into(),
        seed: 0,
        variant: None,
        heal_ms: heal,
        duration_ms: 600_000,
        tick_ms: 10,
        message_loss: 0.0,
        answer_loss: 0.0,
        store_conflict: 0.0,
        wake_loss: 0.0,
        store_cancel: 0.0,
        timing_assumption_broken: false,
    }
}

/// The run's closing record.
pub fn end(t: u64, quiet: bool) -> Record {
    Record::End { t, quiet }
}

/// A store event recorded at true time `t`, after request `req` if any.
pub fn store_event(t: u64, seq: u64, req: Option<u64>, e: Event) -> Record {
    Record::StoreEvent {
        t,
        seq,
        req,
        event: e,
    }
}

/// `w1`'s lease on job 1 swept at true time `t` (store time `t` too).
pub fn sweep_of_w1(t: u64, seq: u64, version: u64, expired: i64) -> Record {
    store_event(t, seq, None, swept(1, 1, "w1", t as i64, version, expired))
}

/// Worker `w` (its own host) believes what of `job` at `t`.
pub fn belief(t: u64, w: &str, job: u64, token: u64, what: BeliefWhat) -> Record {
    Record::Belief {
        t,
        local: t,
        host: w.into(),
        worker: WorkerId::new(w),
        job: JobId(job),
        token: Token(token),
        what,
    }
}

/// A claim believed held until `until` (local and true time alike).
pub fn claimed_until(until: u64) -> BeliefWhat {
    BeliefWhat::Claimed {
        until_local: until,
        until_true: Some(until),
    }
}

/// A request sent by `host` at `t` (its local time equals true time).
pub fn request_by(host: &str, t: u64, id: u64, op: Op, merged: bool) -> Record {
    Record::Request {
        t,
        local: t,
        host: host.into(),
        id,
        op,
        merged,
    }
}

/// A request sent by `w1`.
pub fn request(t: u64, id: u64, op: Op, merged: bool) -> Record {
    request_by("w1", t, id, op, merged)
}

/// An answer received by `host` at `t`.
pub fn answer_by(host: &str, t: u64, id: u64, reply: Reply) -> Record {
    Record::Answer {
        t,
        local: t,
        host: host.into(),
        id,
        reply,
    }
}

/// An answer received by `w1`.
pub fn answer(t: u64, id: u64, reply: Reply) -> Record {
    answer_by("w1", t, id, reply)
}

/// `w1`'s renew of job 1 under token 1 for 5 s.
pub fn renew_of_w1() -> Op {
    Op::Renew {
        job: JobId(1),
        token: Token(1),
        lease: Millis(5_000),
    }
}

/// `w1`'s release of job 1 under token 1 with a success.
pub fn release_of_w1() -> Op {
    Op::Release {
        job: JobId(1),
        token: Token(1),
        outcome: ok(b"r"),
    }
}

/// A handler phase of worker `w` (its host the part before a `.`) on
/// `job` under token 1.
pub fn handler(t: u64, w: &str, job: u64, phase: HandlerPhase) -> Record {
    Record::Handler {
        t,
        host: w.split('.').next().unwrap_or(w).into(),
        worker: WorkerId::new(w),
        job: JobId(job),
        token: Token(1),
        phase,
    }
}

/// The final image of job `job` (attempt 1 of 3, token 1, version 2),
/// held by `w1` for 5 s when running.
pub fn row(job: u64, state: JobState, result: Option<&[u8]>) -> JobRecord {
    JobRecord {
        id: JobId(job),
        queue: "q".into(),
        payload: vec![],
        priority: 0,
        run_at: StoreTime(T0),
        state,
        attempt: 1,
        max_attempts: 3,
        token: Token(1),
        holder: (state == JobState::Running).then(|| WorkerId::new("w1")),
        expires_at: (state == JobState::Running).then_some(StoreTime(T0 + 5_000)),
        cancel_requested: false,
        result: result.map(<[u8]>::to_vec),
        error: None,
        released: None,
        idempotency_key: None,
        version: 2,
        created_at: StoreTime(T0),
        updated_at: StoreTime(T0),
    }
}

/// The invariants the whole check reports on `h` under [`cfg`], each
/// once, in order.
pub fn only(h: &History) -> Vec<InvariantId> {
    let mut v: Vec<InvariantId> = check(h, &cfg()).iter().map(|v| v.invariant).collect();
    v.sort();
    v.dedup();
    v
}

/// The messages of the whole check's reports of `inv` on `h` under `c`,
/// in report order.
pub fn messages(h: &History, c: &SimConfig, inv: InvariantId) -> Vec<String> {
    check(h, c)
        .into_iter()
        .filter(|v| v.invariant == inv)
        .map(|v| v.message)
        .collect()
}

/// The opening of most histories: job 1 enqueued at 10 and claimed by
/// `w1` at 20 (store event after request `claim_req`, if any).
pub fn w1_holds_job_1(claim_req: Option<u64>) -> Vec<Record> {
    vec![
        store_event(10, 0, None, enq(1, 10)),
        store_event(20, 1, claim_req, claim(1, 1, "w1", 1, 20, 2)),
    ]
}

/// The answer a caller that stopped waiting records: outcome unknown.
pub fn gave_up() -> Reply {
    Reply::Unavailable("caller gave up waiting".into())
}

/// The link between `w1` and the store dropping everything both ways
/// from `t` on (every attempt then is lost, and explained).
pub fn w1_cut_off_at(t: u64) -> Record {
    Record::Link {
        t,
        a: "store".into(),
        b: "w1".into(),
        drop_ab: true,
        drop_ba: true,
        held: false,
    }
}
