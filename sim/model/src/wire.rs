//! Wire types and framing.
//!
//! A frame is a 4-byte big-endian length and a bincode body (varint
//! integers). The encoding is invisible to a simulation: the engine's
//! network carries each body as one message whatever its size, and the read pacing of
//! large rows (`hosts::client`) is planned from JSON sizes, an upper bound
//! on bincode's, so `MAX_FRAME` holds for either.

use crate::history::{Blob, LeaseRef, Op, ReadRow, Reply, ScheduleView};
use bincode::Options;
use leasehold_core::{
    CancelOutcome, ClaimRequest, CrashReport, FireRequest, InputError, JobId, JobRecord, Lease,
    ListRequest, ListSchedulesRequest, NewJob, PruneRequest, Release, ReleaseRequest, RenewRequest,
    Renewal, RetryOutcome, Schedule, ScheduleRecord, StoreError, StoreTime, SweepRequest, Token,
};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::io;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The store host's port.
pub const STORE_PORT: u16 = 7000;
/// Largest frame accepted: a page of rows whose payloads and results sit at
/// the largest size limit a scenario may set (JSON spends up to 4 bytes on
/// each byte of a value).
pub const MAX_FRAME: usize = 128 << 20;

/// One request on the wire.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireRequest {
    /// Request id (unique in the run).
    pub id: u64,
    /// Sending host.
    pub host: String,
    /// The operation.
    pub op: WireOp,
}

/// What a client sends on one connection: one request, or a worker's
/// [`leasehold_core::Store::batch`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum WireMessage {
    /// One request, answered by one [`WireReply`].
    One(WireRequest),
    /// A batch: its releases, then its claims, each with a request id of
    /// its own (unique in the run), executed by the store's own `batch` (one
    /// transaction on the SQL stores) and answered by a `Vec<WireReply>`,
    /// one answer per part, in order. It travels, and is lost, held or
    /// answered, as one message.
    Batch(WireBatch),
}

/// The parts of a [`WireMessage::Batch`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireBatch {
    /// Sending host.
    pub host: String,
    /// Each part's request id, and the part: a `Release` or a `Claim`,
    /// releases first (see [`WireBatch::request`]).
    pub parts: Vec<(u64, WireOp)>,
}

impl WireBatch {
    /// The store's [`leasehold_core::BatchRequest`], or what is wrong: a
    /// part that is neither a release nor a claim, or a release after a
    /// claim (a batch is its releases, then its claims).
    pub fn request(&self) -> Result<leasehold_core::BatchRequest, String> {
        let mut req = leasehold_core::BatchRequest::default();
        for (id, op) in &self.parts {
            match op {
                WireOp::Release(r) if req.claims.is_empty() => req.releases.push(r.clone()),
                WireOp::Claim(c) => req.claims.push(c.clone()),
                other => {
                    return Err(format!(
                    "request {id} of a batch is not a release before the claims or a claim: {:?}",
                    other.summary()
                ))
                }
            }
        }
        Ok(req)
    }
}

/// A store operation with its full arguments.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum WireOp {
    /// `now`.
    Now,
    /// `enqueue`.
    Enqueue(NewJob),
    /// `claim`.
    Claim(ClaimRequest),
    /// `renew`.
    Renew(RenewRequest),
    /// `release`.
    Release(ReleaseRequest),
    /// `sweep`, with the sweeper's wall clock under `sweeper-own-clock`.
    Sweep(SweepRequest, Option<StoreTime>),
    /// `cancel`.
    Cancel(JobId),
    /// `get`.
    Get(JobId),
    /// `list`.
    List(ListRequest),
    /// `put_schedule`.
    PutSchedule(Schedule),
    /// `remove_schedule`.
    RemoveSchedule(String),
    /// `fire`.
    Fire(FireRequest),
    /// `list_schedules`.
    ListSchedules(ListSchedulesRequest),
    /// `prune` (appended last, so no earlier request's encoding changes).
    Prune(PruneRequest),
    /// `retry_dead` (appended last: no existing frame changes; the
    /// simulator never sends it).
    RetryDead(JobId),
}

/// A store failure on the wire.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum WireError {
    /// Unknown job.
    UnknownJob(JobId),
    /// Unknown token.
    UnknownToken(JobId, Token),
    /// Other bad input (the simulator never sends any).
    Input(String),
    /// No schedule of this name.
    UnknownSchedule(String),
    /// A fire the schedule's guard refused: (schedule, plan time, why).
    NotAPlanTime(String, StoreTime, String),
    /// Write conflict.
    Conflict(JobId),
    /// Corrupt row.
    Corrupt(String),
    /// Unknown outcome.
    Unavailable(String),
    /// A fire of a plan time at or before the latest pruned one of its
    /// schedule: (schedule, plan time, the latest pruned plan time).
    PlanTimePruned(String, StoreTime, StoreTime),
}

/// An answer with its full data.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)] // built once per request, never stored
pub enum WireReply {
    /// Store clock.
    Time(StoreTime),
    /// Job id.
    Job(JobId),
    /// Leases.
    Leases(Vec<Lease>),
    /// Renew answer.
    Renewal(Renewal),
    /// Release answer.
    Release(Release),
    /// Crash reports.
    Swept(Vec<CrashReport>),
    /// Cancel answer.
    Cancel(CancelOutcome),
    /// One row.
    Row(Option<JobRecord>),
    /// Rows.
    Rows(Vec<JobRecord>),
    /// A put was applied.
    Done,
    /// A remove: whether the schedule existed.
    Removed(bool),
    /// Schedules.
    Schedules(Vec<ScheduleRecord>),
    /// A failure.
    Error(WireError),
    /// The jobs a prune deleted.
    Pruned(Vec<JobId>),
    /// Retry answer (appended last, as [`WireOp::RetryDead`]).
    Retry(RetryOutcome),
}

impl WireError {
    /// From a store error.
    pub fn of(e: &StoreError) -> Self {
        match e {
            StoreError::Input(InputError::UnknownJob(j)) => WireError::UnknownJob(*j),
            StoreError::Input(InputError::UnknownToken { job, token }) => {
                WireError::UnknownToken(*job, *token)
            }
            StoreError::Input(InputError::UnknownSchedule(n)) => {
                WireError::UnknownSchedule(n.clone())
            }
            StoreError::Input(InputError::NotAPlanTime {
                schedule,
                plan_time,
                reason,
            }) => WireError::NotAPlanTime(schedule.clone(), *plan_time, reason.to_string()),
            StoreError::Input(InputError::PlanTimePruned {
                schedule,
                plan_time,
                through,
            }) => WireError::PlanTimePruned(schedule.clone(), *plan_time, *through),
            StoreError::Input(i) => WireError::Input(i.to_string()),
            StoreError::Conflict(j) => WireError::Conflict(*j),
            StoreError::Corrupt(s) => WireError::Corrupt(s.clone()),
            StoreError::Unavailable(s) => WireError::Unavailable(s.clone()),
        }
    }

    /// Back to a store error. Input errors the simulator cannot rebuild
    /// exactly become `Corrupt` with the message (it never sends such input).
    pub fn into_store_error(self) -> StoreError {
        match self {
            WireError::UnknownJob(j) => StoreError::Input(InputError::UnknownJob(j)),
            WireError::UnknownToken(job, token) => {
                StoreError::Input(InputError::UnknownToken { job, token })
            }
            WireError::Input(s) => StoreError::Corrupt(format!("store rejected input: {s}")),
            WireError::UnknownSchedule(n) => StoreError::Input(InputError::UnknownSchedule(n)),
            WireError::NotAPlanTime(schedule, plan_time, reason) => {
                StoreError::Input(InputError::NotAPlanTime {
                    schedule,
                    plan_time,
                    reason: known_reason(&reason),
                })
            }
            WireError::PlanTimePruned(schedule, plan_time, through) => {
                StoreError::Input(InputError::PlanTimePruned {
                    schedule,
                    plan_time,
                    through,
                })
            }
            WireError::Conflict(j) => StoreError::Conflict(j),
            WireError::Corrupt(s) => StoreError::Corrupt(s),
            WireError::Unavailable(s) => StoreError::Unavailable(s),
        }
    }

    fn text(&self) -> String {
        format!("{self:?}")
    }
}

/// The static text of a refusal reason the core gives, from its wire copy.
fn known_reason(r: &str) -> &'static str {
    const KNOWN: [&str; 2] = [
        "it is after the store's now",
        "it is not a plan time of the rule",
    ];
    KNOWN
        .into_iter()
        .find(|k| *k == r)
        .unwrap_or("refused by the store")
}

impl WireOp {
    /// The history's view of this request.
    pub fn summary(&self) -> Op {
        match self {
            WireOp::Now => Op::Now,
            WireOp::Enqueue(j) => Op::Enqueue {
                key: j.idempotency_key.clone(),
                queue: j.queue.clone(),
                payload: Blob::of(&j.payload),
                priority: j.priority,
                delay: j.delay,
                max_attempts: j.max_attempts,
            },
            WireOp::Claim(c) => Op::Claim {
                worker: c.worker.clone(),
                queue: c.queue.clone(),
                lease: c.lease,
                max: c.max,
            },
            WireOp::Renew(r) => Op::Renew {
                job: r.job,
                token: r.token,
                lease: r.lease,
            },
            WireOp::Release(r) => Op::Release {
                job: r.job,
                token: r.token,
                outcome: r.outcome.clone(),
            },
            WireOp::Sweep(s, wall) => Op::Sweep {
                limit: s.limit,
                wall: *wall,
            },
            WireOp::Cancel(j) => Op::Cancel { job: *j },
            WireOp::Get(j) => Op::Get { job: *j },
            WireOp::List(l) => Op::List {
                after: l.after,
                limit: l.limit,
            },
            WireOp::PutSchedule(s) => Op::PutSchedule {
                name: s.name.clone(),
                queue: s.queue.clone(),
                payload: Blob::of(&s.payload),
                rule: s.rule.clone(),
                catch_up: s.catch_up,
                jitter: s.jitter,
                max_attempts: s.max_attempts,
            },
            WireOp::RemoveSchedule(n) => Op::RemoveSchedule { name: n.clone() },
            WireOp::Fire(f) => Op::Fire {
                name: f.name.clone(),
                plan_time: f.plan_time,
            },
            WireOp::ListSchedules(l) => Op::ListSchedules {
                after: l.after.clone(),
                limit: l.limit,
            },
            WireOp::Prune(p) => Op::Prune {
                retention: p.retention,
                limit: p.limit,
                audit_retention: p.audit_retention,
            },
            WireOp::RetryDead(j) => Op::RetryDead { job: *j },
        }
    }
}

impl WireReply {
    /// The history's view of this answer: every field, bytes as blobs.
    pub fn summary(&self) -> Reply {
        match self {
            WireReply::Time(t) => Reply::Time(*t),
            WireReply::Job(j) => Reply::Job(*j),
            WireReply::Leases(ls) => Reply::Leases(
                ls.iter()
                    .map(|l| LeaseRef {
                        job: l.job,
                        token: l.token,
                        attempt: l.attempt,
                        expires_at: l.expires_at,
                        queue: l.queue.clone(),
                        payload: Blob::of(&l.payload),
                    })
                    .collect(),
            ),
            WireReply::Renewal(Renewal::Renewed {
                expires_at,
                cancel_requested,
            }) => Reply::Renewed {
                expires_at: *expires_at,
                cancel_requested: *cancel_requested,
            },
            WireReply::Renewal(Renewal::Lost) => Reply::RenewLost,
            WireReply::Release(Release::Committed) => Reply::Committed,
            WireReply::Release(Release::Lost) => Reply::ReleaseLost,
            WireReply::Swept(r) => Reply::Swept(r.clone()),
            WireReply::Cancel(c) => Reply::Cancel(*c),
            WireReply::Row(r) => Reply::Row(r.as_ref().map(ReadRow::of)),
            WireReply::Rows(rs) => Reply::Rows(rs.iter().map(ReadRow::of).collect()),
            WireReply::Done => Reply::Done,
            WireReply::Removed(b) => Reply::Removed(*b),
            WireReply::Schedules(ss) => Reply::Schedules(ss.iter().map(ScheduleView::of).collect()),
            WireReply::Error(WireError::Unavailable(s)) => Reply::Unavailable(s.clone()),
            WireReply::Error(e) => Reply::Rejected(e.text()),
            WireReply::Pruned(ids) => Reply::Pruned(ids.clone()),
            WireReply::Retry(r) => Reply::Retry(*r),
        }
    }
}

/// The body encoding: bincode with varint integers, bodies bounded by
/// `MAX_FRAME`.
fn codec() -> impl Options {
    bincode::DefaultOptions::new().with_limit(MAX_FRAME as u64)
}

/// One message's body, as a message on the simulated network carries it.
///
/// Written in one pass and measured after: bincode's own limit walks the
/// value once more first, to size it (about 1 % of a memory seed). A body
/// past `MAX_FRAME` is refused with the limit's own words, as before.
pub fn encode<T: Serialize>(v: &T) -> Result<Vec<u8>, String> {
    let mut body = Vec::with_capacity(128);
    codec()
        .with_no_limit()
        .serialize_into(&mut body, v)
        .map_err(|e| e.to_string())?;
    if body.len() > MAX_FRAME {
        return Err(bincode::ErrorKind::SizeLimit.to_string());
    }
    Ok(body)
}

/// Reads a body [`encode`] wrote.
pub fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    if body.len() > MAX_FRAME {
        return Err("frame too large".into());
    }
    codec().deserialize(body).map_err(|e| e.to_string())
}

/// Writes one frame in a single write.
pub async fn write_frame<W: AsyncWrite + Unpin, T: Serialize>(w: &mut W, v: &T) -> io::Result<()> {
    let body = codec().serialize(v).map_err(io::Error::other)?;
    if body.len() > MAX_FRAME {
        return Err(io::Error::other("frame too large"));
    }
    let mut buf = Vec::with_capacity(body.len() + 4);
    buf.extend_from_slice(&(body.len() as u32).to_be_bytes());
    buf.extend_from_slice(&body);
    w.write_all(&buf).await?;
    w.flush().await
}

/// Reads one frame.
pub async fn read_frame<R: AsyncRead + Unpin, T: DeserializeOwned>(r: &mut R) -> io::Result<T> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len).await?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::other("frame too large"));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).await?;
    codec().deserialize(&body).map_err(io::Error::other)
}

#[cfg(test)]
mod tests {
    //! Every request and answer the simulated network carries survives a
    //! frame round trip unchanged: bincode cannot read every serde shape
    //! (no `deserialize_any`), so a wire type that gains one fails here,
    //! not in the middle of a simulation.

    use super::*;
    use leasehold_core::{
        CancelOutcome, CatchUp, CrashReport, JobState, Outcome, Policy, Release, Renewal, Rule,
        Store, WorkerId,
    };
    use leasehold_memory::MemoryStore;

    /// Writes `v` as a frame and reads it back; compares the debug text
    /// (the wire types carry no `PartialEq`).
    async fn round_trip<T: Serialize + DeserializeOwned + std::fmt::Debug>(v: &T) {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        let want = format!("{v:?}");
        let (written, read) = tokio::join!(write_frame(&mut a, v), read_frame::<_, T>(&mut b));
        written.expect("write");
        assert_eq!(format!("{:?}", read.expect("read")), want);
    }

    /// `encode` writes the bytes bincode's limited `serialize` wrote, and
    /// refuses a body past `MAX_FRAME` in its words.
    #[test]
    fn encode_writes_the_limited_codecs_bytes_and_refuses_past_the_frame() {
        let values: Vec<Vec<u8>> = vec![Vec::new(), vec![7; 3], vec![1; 300], vec![9; 70_000]];
        for v in &values {
            let op = WireOp::Enqueue(NewJob::new("q", v.clone()));
            let want = codec().serialize(&op).expect("serialize");
            assert_eq!(encode(&op).expect("encode"), want, "{} bytes", v.len());
        }
        let over = vec![0u8; MAX_FRAME];
        let refused = codec().serialize(&over).expect_err("past the limit");
        assert_eq!(
            encode(&over).expect_err("past the frame"),
            refused.to_string()
        );
    }

    fn schedule() -> Schedule {
        Schedule::new(
            "nightly",
            "reports",
            vec![0u8, 255, 7],
            Rule::cron_in("0 3 * * *", "Europe/Berlin"),
        )
        .catch_up(CatchUp::Each { max: 4 })
    }

    #[tokio::test]
    async fn every_request_round_trips() {
        let mut job = NewJob::new("q", vec![1u8, 2, 3]);
        job.idempotency_key = Some("key-1".into());
        job.priority = -3;
        let ops = vec![
            WireOp::Now,
            WireOp::Enqueue(job),
            WireOp::Claim(ClaimRequest {
                worker: WorkerId::new("worker-1"),
                queue: "q".into(),
                lease: leasehold_core::Millis(30_000),
                max: 4,
            }),
            WireOp::Renew(RenewRequest {
                job: JobId(7),
                token: Token(3),
                lease: leasehold_core::Millis(1),
            }),
            WireOp::Release(ReleaseRequest {
                job: JobId(7),
                token: Token(3),
                outcome: Outcome::Failed {
                    error: "boom ✗".into(),
                    retryable: true,
                },
            }),
            WireOp::Release(ReleaseRequest {
                job: JobId(u64::MAX),
                token: Token(u64::MAX),
                outcome: Outcome::Succeeded(vec![0; 300]),
            }),
            WireOp::Sweep(SweepRequest { limit: 10 }, Some(StoreTime(-5))),
            WireOp::Sweep(SweepRequest { limit: 10 }, None),
            WireOp::Cancel(JobId(1)),
            WireOp::Get(JobId(1)),
            WireOp::List(ListRequest {
                after: Some(JobId(9)),
                limit: 100,
            }),
            WireOp::PutSchedule(schedule()),
            WireOp::PutSchedule(Schedule::new(
                "tick",
                "q",
                "",
                Rule::every(leasehold_core::Millis(200)),
            )),
            WireOp::RemoveSchedule("nightly".into()),
            WireOp::Fire(FireRequest {
                name: "nightly".into(),
                plan_time: StoreTime(1_700_000_000_000),
            }),
            WireOp::ListSchedules(ListSchedulesRequest {
                after: Some("a".into()),
                limit: 5,
            }),
            WireOp::Prune(
                PruneRequest::new(leasehold_core::MIN_RETENTION, 1000)
                    .and_then(|r| r.with_audit_retention(leasehold_core::Millis(u64::MAX)))
                    .expect("a valid prune"),
            ),
            WireOp::RetryDead(JobId(3)),
        ];
        for op in &ops {
            round_trip(&WireRequest {
                id: 42,
                host: "worker-3".into(),
                op: op.clone(),
            })
            .await;
        }
    }

    #[tokio::test]
    async fn every_answer_round_trips() {
        // Rows and schedules as a store really makes them.
        let store = MemoryStore::new(Policy::default());
        let id = store.enqueue(NewJob::new("q", "payload")).await.unwrap();
        let leases = store
            .claim(ClaimRequest {
                worker: WorkerId::new("worker-1"),
                queue: "q".into(),
                lease: leasehold_core::Millis(30_000),
                max: 1,
            })
            .await
            .unwrap();
        let lease = leases.first().cloned().expect("one lease");
        store
            .release(ReleaseRequest {
                job: id,
                token: lease.token,
                outcome: Outcome::Succeeded(b"result".to_vec()),
            })
            .await
            .unwrap();
        let row = store.get(id).await.unwrap();
        assert!(row.as_ref().is_some_and(|r| r.result.is_some()));
        store.put_schedule(schedule()).await.unwrap();
        let schedules = store
            .list_schedules(ListSchedulesRequest {
                after: None,
                limit: 10,
            })
            .await
            .unwrap();
        assert_eq!(schedules.len(), 1);

        let replies = vec![
            WireReply::Time(StoreTime(123)),
            WireReply::Job(id),
            WireReply::Leases(leases),
            WireReply::Renewal(Renewal::Renewed {
                expires_at: StoreTime(9),
                cancel_requested: true,
            }),
            WireReply::Renewal(Renewal::Lost),
            WireReply::Release(Release::Committed),
            WireReply::Release(Release::Lost),
            WireReply::Swept(vec![CrashReport {
                job: id,
                token: Token(1),
                holder: WorkerId::new("worker-2"),
                expired_at: StoreTime(10),
                swept_at: StoreTime(11),
                to: JobState::Pending,
            }]),
            WireReply::Cancel(CancelOutcome::AlreadyTerminal(JobState::Succeeded)),
            WireReply::Row(row.clone()),
            WireReply::Row(None),
            WireReply::Rows(row.into_iter().collect()),
            WireReply::Done,
            WireReply::Removed(false),
            WireReply::Schedules(schedules),
            WireReply::Error(WireError::NotAPlanTime(
                "nightly".into(),
                StoreTime(5),
                "it is after the store's now".into(),
            )),
            WireReply::Error(WireError::UnknownToken(id, Token(2))),
            WireReply::Error(WireError::Unavailable("store down".into())),
            WireReply::Error(WireError::PlanTimePruned(
                "nightly".into(),
                StoreTime(5),
                StoreTime(7),
            )),
            WireReply::Pruned(vec![id, JobId(u64::MAX)]),
            WireReply::Pruned(Vec::new()),
            WireReply::Retry(leasehold_core::RetryOutcome::Retried),
            WireReply::Retry(leasehold_core::RetryOutcome::NotDead(JobState::Running)),
        ];
        for reply in &replies {
            round_trip(reply).await;
        }
    }

    #[tokio::test]
    async fn a_length_over_the_limit_is_refused_before_any_body_is_read() {
        let (mut a, mut b) = tokio::io::duplex(64);
        // A length prefix past MAX_FRAME: refused before any body is read.
        let len = (MAX_FRAME as u32 + 1).to_be_bytes();
        a.write_all(&len).await.unwrap();
        let err = read_frame::<_, WireReply>(&mut b).await.unwrap_err();
        assert!(err.to_string().contains("frame"), "{err}");
    }
}
