//! The record types of a history.

use super::blob::Blob;
use crate::config::ScriptedFault;
use leasehold_core::{
    CancelOutcome, CatchUp, CrashReport, Event, JobId, JobRecord, JobState, Millis, Outcome,
    RetryOutcome, Rule, ScheduleRecord, StoreTime, Token, WorkerId,
};
use serde::{Deserialize, Serialize};

/// A request as the history shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Read the store clock.
    Now,
    /// Enqueue a job (every field of the spec, the payload as a blob).
    Enqueue {
        /// Idempotency key.
        key: Option<String>,
        /// Queue.
        queue: String,
        /// Payload.
        payload: Blob,
        /// Priority (higher first).
        priority: i32,
        /// Delay before the first claim.
        delay: Millis,
        /// Attempt budget.
        max_attempts: u32,
    },
    /// Claim leases.
    Claim {
        /// Claimer.
        worker: WorkerId,
        /// Queue.
        queue: String,
        /// Lease length.
        lease: Millis,
        /// Most leases.
        max: u32,
    },
    /// Renew a lease.
    Renew {
        /// Job.
        job: JobId,
        /// Token.
        token: Token,
        /// Lease length.
        lease: Millis,
    },
    /// Release a lease.
    Release {
        /// Job.
        job: JobId,
        /// Token.
        token: Token,
        /// Outcome.
        outcome: Outcome,
    },
    /// Sweep expired leases.
    Sweep {
        /// Most reclaims.
        limit: u32,
        /// The sweeper's own wall clock (sent only under `sweeper-own-clock`).
        wall: Option<StoreTime>,
    },
    /// Cancel a job.
    Cancel {
        /// Job.
        job: JobId,
    },
    /// Read one job.
    Get {
        /// Job.
        job: JobId,
    },
    /// List jobs.
    List {
        /// After this id.
        after: Option<JobId>,
        /// At most.
        limit: u32,
    },
    /// Store a schedule (every field, the payload as a blob).
    PutSchedule {
        /// Name.
        name: String,
        /// Queue of its jobs.
        queue: String,
        /// Payload of its jobs.
        payload: Blob,
        /// Its plan times.
        rule: Rule,
        /// Catch-up policy.
        catch_up: CatchUp,
        /// Jitter bound.
        jitter: Millis,
        /// Attempt budget of its jobs.
        max_attempts: u32,
    },
    /// Remove a schedule.
    RemoveSchedule {
        /// Name.
        name: String,
    },
    /// Enqueue the job of one plan time.
    Fire {
        /// Schedule.
        name: String,
        /// Plan time (store time).
        plan_time: StoreTime,
    },
    /// List schedules.
    ListSchedules {
        /// After this name.
        after: Option<String>,
        /// At most.
        limit: u32,
    },
    /// Prune finished jobs (appended last: no earlier history changes).
    Prune {
        /// Retention `R`.
        retention: Millis,
        /// Most jobs (and audit rows).
        limit: u32,
        /// Audit retention.
        audit_retention: Millis,
    },
    /// An operator's retry of a dead job (appended last: no existing
    /// history's encoding changes; the simulator never sends it).
    RetryDead {
        /// Job.
        job: JobId,
    },
}

/// A schedule as a reader saw it (the payload as a blob).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleView {
    /// Name.
    pub name: String,
    /// Queue.
    pub queue: String,
    /// Payload.
    pub payload: Blob,
    /// Rule.
    pub rule: Rule,
    /// Catch-up policy.
    pub catch_up: CatchUp,
    /// Jitter bound.
    pub jitter: Millis,
    /// Attempt budget.
    pub max_attempts: u32,
    /// Version (bumped by each put that changed it).
    pub version: u64,
    /// Store time of the first put.
    pub created_at: StoreTime,
    /// Store time of the last put that changed it.
    pub updated_at: StoreTime,
}

impl ScheduleView {
    /// The reader's view of a stored schedule.
    pub fn of(r: &ScheduleRecord) -> Self {
        let s = &r.schedule;
        ScheduleView {
            name: s.name.clone(),
            queue: s.queue.clone(),
            payload: Blob::of(&s.payload),
            rule: s.rule.clone(),
            catch_up: s.catch_up,
            jitter: s.jitter,
            max_attempts: s.max_attempts,
            version: r.version,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// What a reader saw of one job: every protocol field of the row (spec §1),
/// bytes as blobs. Also the image of a row right after a request touched it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadRow {
    /// Job.
    pub job: JobId,
    /// Queue.
    pub queue: String,
    /// Payload.
    pub payload: Blob,
    /// Priority.
    pub priority: i32,
    /// Earliest claim time.
    pub run_at: StoreTime,
    /// State.
    pub state: JobState,
    /// Attempts started.
    pub attempt: u32,
    /// Attempt budget.
    pub max_attempts: u32,
    /// Current token.
    pub token: Token,
    /// Holder of the live lease.
    pub holder: Option<WorkerId>,
    /// Expiry of the live lease.
    pub expires_at: Option<StoreTime>,
    /// A cancel was requested while running.
    pub cancel_requested: bool,
    /// Token of the last accepted release, if any.
    pub released_token: Option<Token>,
    /// The result, if any.
    pub result: Option<Blob>,
    /// The stored error message, if any.
    pub error: Option<String>,
    /// Idempotency key.
    pub key: Option<String>,
    /// Row version.
    pub version: u64,
}

impl ReadRow {
    /// The reader's view of a row.
    pub fn of(r: &JobRecord) -> Self {
        ReadRow {
            job: r.id,
            queue: r.queue.clone(),
            payload: Blob::of(&r.payload),
            priority: r.priority,
            run_at: r.run_at,
            state: r.state,
            attempt: r.attempt,
            max_attempts: r.max_attempts,
            token: r.token,
            holder: r.holder.clone(),
            expires_at: r.expires_at,
            cancel_requested: r.cancel_requested,
            released_token: r.released.map(|m| m.token),
            result: r.result.as_deref().map(Blob::of),
            error: r.error.clone(),
            key: r.idempotency_key.clone(),
            version: r.version,
        }
    }
}

/// A lease as the history shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRef {
    /// Job.
    pub job: JobId,
    /// Token.
    pub token: Token,
    /// Attempt.
    pub attempt: u32,
    /// Expiry (store time).
    pub expires_at: StoreTime,
    /// Queue.
    pub queue: String,
    /// Payload handed to the handler.
    pub payload: Blob,
}

/// An answer as the history shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reply", content = "value", rename_all = "snake_case")]
pub enum Reply {
    /// Store clock.
    Time(StoreTime),
    /// A job id.
    Job(JobId),
    /// Granted leases.
    Leases(Vec<LeaseRef>),
    /// Renewed.
    Renewed {
        /// New expiry.
        expires_at: StoreTime,
        /// Cancel requested.
        cancel_requested: bool,
    },
    /// Renew answered lost.
    RenewLost,
    /// Release committed.
    Committed,
    /// Release answered lost.
    ReleaseLost,
    /// Crash reports of a sweep.
    Swept(Vec<CrashReport>),
    /// Cancel answer.
    Cancel(CancelOutcome),
    /// One row read.
    Row(Option<ReadRow>),
    /// Rows read.
    Rows(Vec<ReadRow>),
    /// A schedule was stored (or was already stored as given).
    Done,
    /// Whether a removed schedule existed.
    Removed(bool),
    /// Schedules listed.
    Schedules(Vec<ScheduleView>),
    /// A definite rejection (nothing changed).
    Rejected(String),
    /// Unknown outcome: the network or the store failed.
    Unavailable(String),
    /// The jobs a prune deleted (appended last: no earlier history
    /// changes).
    Pruned(Vec<JobId>),
    /// An operator's retry answer (appended last, as [`Op::RetryDead`]).
    Retry(RetryOutcome),
}

impl Reply {
    /// Whether the request's outcome is known (an answer arrived).
    pub fn is_known(&self) -> bool {
        !matches!(self, Reply::Unavailable(_))
    }
}

/// What the store did with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fate {
    /// Executed and answered.
    Answered,
    /// Lost on the way in: never executed (message loss).
    RequestLost,
    /// Executed, then the answer was lost (ambiguous outcome).
    AnswerLost,
    /// Dropped by its caller while the store was inside its transaction,
    /// before the commit: nothing of it may have committed, and no answer
    /// was sent (the caller sees an unknown outcome).
    Cancelled,
}

/// A worker's belief or lease-task milestone (from its runtime observer).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum BeliefWhat {
    /// A lease was granted; belief until `until_local` (`until_true` in true time, `None` = never fences).
    Claimed {
        /// Local deadline.
        until_local: u64,
        /// The same deadline in true time.
        until_true: Option<u64>,
    },
    /// A renew succeeded; belief extended.
    Renewed {
        /// Local deadline.
        until_local: u64,
        /// The same deadline in true time.
        until_true: Option<u64>,
    },
    /// A renew's outcome was unknown.
    RenewUnavailable,
    /// Belief ended.
    Ended {
        /// Why (`HandlerDone`, `Lost`, `Fenced`, ...).
        why: String,
    },
    /// The release finished (`answer` is `None` when every try was unknown).
    Released {
        /// Outcome kind.
        outcome: String,
        /// `Committed`, `Lost` or none.
        answer: Option<String>,
    },
}

/// A handler execution milestone (ground truth, in true time).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum HandlerPhase {
    /// The handler started.
    Start,
    /// The handler returned (its side effect happened now if `ok`).
    Done {
        /// Whether it succeeded.
        ok: bool,
    },
    /// The handler was dropped before returning (hard stop).
    Dropped,
}

/// Serializes a [`ScriptedFault`] as its sentence form.
mod fault_text {
    use crate::config::ScriptedFault;
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(f: &ScriptedFault, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&f.to_string())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ScriptedFault, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One history record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// The run's parameters (first record).
    Run {
        /// Scenario name.
        scenario: String,
        /// Seed.
        seed: u64,
        /// Buggy variant in force.
        variant: Option<String>,
        /// Faults heal at this true time.
        heal_ms: u64,
        /// Configured duration.
        duration_ms: u64,
        /// Tick.
        tick_ms: u64,
        /// Message loss probability drawn for this seed (inside the window).
        message_loss: f64,
        /// Answer loss probability drawn for this seed (inside the window).
        answer_loss: f64,
        /// Probability drawn for this seed that the store answers a write
        /// `Conflict` without applying it (inside the window; absent when 0).
        #[serde(default, skip_serializing_if = "is_zero")]
        store_conflict: f64,
        /// Probability drawn for this seed that a wake-up is lost (inside
        /// the window; absent when 0).
        #[serde(default, skip_serializing_if = "is_zero")]
        wake_loss: f64,
        /// Probability drawn for this seed that a worker's batch is
        /// cancelled mid-transaction (inside the window; absent when 0).
        #[serde(default, skip_serializing_if = "is_zero")]
        store_cancel: f64,
        /// A drift beyond ρ or a store clock step: I3 is not asserted.
        timing_assumption_broken: bool,
    },
    /// One fault of the resolved schedule (ground truth).
    Fault {
        /// Scheduled start.
        t: u64,
        /// The fault.
        #[serde(with = "fault_text")]
        fault: ScriptedFault,
    },
    /// A host's process started (first start or restart).
    HostStarted {
        /// True time.
        t: u64,
        /// Host.
        host: String,
        /// Incarnation (0 = first start).
        incarnation: u32,
        /// The worker identity it runs under, for worker hosts.
        worker: Option<WorkerId>,
    },
    /// A host's process was killed (applied at a tick boundary).
    HostCrashed {
        /// True time.
        t: u64,
        /// Host.
        host: String,
    },
    /// A link changed state (applied at a tick boundary).
    Link {
        /// True time.
        t: u64,
        /// One end.
        a: String,
        /// Other end.
        b: String,
        /// Messages from `a` to `b` are dropped.
        drop_ab: bool,
        /// Messages from `b` to `a` are dropped.
        drop_ba: bool,
        /// Messages that are not dropped are held until the hold ends.
        held: bool,
    },
    /// A request was sent.
    Request {
        /// True time.
        t: u64,
        /// Sender's local time.
        local: u64,
        /// Sender.
        host: String,
        /// Request id.
        id: u64,
        /// The request.
        op: Op,
        /// Asked of the worker process's merger: it leaves when a merged
        /// batch carries it (a `sent` record names it), or never. A request
        /// that is not merged left when it was recorded.
        #[serde(default, skip_serializing_if = "is_false")]
        merged: bool,
    },
    /// A merged batch left its worker process as one message, carrying
    /// these requests (in the message's order). A request is recorded when
    /// its worker asks; it waits in the process's merger until a merged
    /// batch carries it, so this is when it went on the wire. A request
    /// no `sent` names either went alone (it left when recorded) or was
    /// never sent (its caller gave up while it waited).
    Sent {
        /// True time.
        t: u64,
        /// Sender's local time.
        local: u64,
        /// Sender.
        host: String,
        /// The requests the message carries.
        ids: Vec<u64>,
    },
    /// The store handled a request.
    Served {
        /// True time.
        t: u64,
        /// Store time.
        store_time: StoreTime,
        /// Request id.
        id: u64,
        /// Sender.
        host: String,
        /// What happened to it.
        fate: Fate,
        /// The answer computed (sent only if `fate` is `answered`).
        reply: Option<Reply>,
        /// The rows the request touched, as read right after it.
        after: Vec<ReadRow>,
    },
    /// An answer (or a network failure) reached the sender.
    Answer {
        /// True time.
        t: u64,
        /// Sender's local time.
        local: u64,
        /// Sender.
        host: String,
        /// Request id.
        id: u64,
        /// The answer.
        reply: Reply,
    },
    /// A worker's lease milestone.
    Belief {
        /// True time.
        t: u64,
        /// Local time.
        local: u64,
        /// Host.
        host: String,
        /// Worker identity.
        worker: WorkerId,
        /// Job.
        job: JobId,
        /// Token.
        token: Token,
        /// What happened.
        #[serde(flatten)]
        what: BeliefWhat,
    },
    /// A sweeper reported a crash (reclaim).
    CrashReported {
        /// True time.
        t: u64,
        /// Local time.
        local: u64,
        /// Sweeper host.
        host: String,
        /// The report.
        report: CrashReport,
    },
    /// A handler execution milestone.
    Handler {
        /// True time.
        t: u64,
        /// Host.
        host: String,
        /// Worker identity.
        worker: WorkerId,
        /// Job.
        job: JobId,
        /// Token.
        token: Token,
        /// Milestone.
        #[serde(flatten)]
        phase: HandlerPhase,
    },
    /// The client finished its enqueue/cancel schedule.
    ClientDone {
        /// True time.
        t: u64,
    },
    /// A committed store transition, in commit order.
    StoreEvent {
        /// True time of the request that committed it.
        t: u64,
        /// Commit index.
        seq: u64,
        /// The request that committed it.
        req: Option<u64>,
        /// The event.
        event: Event,
    },
    /// A row of the final store state.
    Final {
        /// The row.
        row: JobRecord,
    },
    /// The run ended.
    End {
        /// True time covered.
        t: u64,
        /// Whether the run stopped early because nothing could change any more.
        quiet: bool,
    },
}

impl Record {
    /// The record's true time, if it has one.
    pub fn time(&self) -> Option<u64> {
        match self {
            Record::Run { .. } | Record::Final { .. } => None,
            Record::Fault { t, .. }
            | Record::HostStarted { t, .. }
            | Record::HostCrashed { t, .. }
            | Record::Link { t, .. }
            | Record::Request { t, .. }
            | Record::Sent { t, .. }
            | Record::Served { t, .. }
            | Record::Answer { t, .. }
            | Record::Belief { t, .. }
            | Record::CrashReported { t, .. }
            | Record::Handler { t, .. }
            | Record::ClientDone { t }
            | Record::StoreEvent { t, .. }
            | Record::End { t, .. } => Some(*t),
        }
    }
}

/// Whether a flag is off (left out of the history, as histories recorded
/// before the flag had it).
fn is_false(b: &bool) -> bool {
    !*b
}

/// Whether a probability is zero (left out of the history, which keeps the
/// histories of scenarios without that fault as they were).
fn is_zero(p: &f64) -> bool {
    *p == 0.0
}
