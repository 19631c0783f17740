//! The reference model of a store: rows as the protocol (`PROTOCOL.md` §1,
//! §3) says they must be, and what each operation must answer.
//!
//! Written from the spec, not from the core: nothing here calls
//! `leasehold_core::transition`, the policy, or an adapter. Where the spec
//! leaves a choice to the store (the retry delay inside its jitter window,
//! the text of a sweep's "lease expired" error), the row says so
//! ([`RunAt::Between`], [`ErrText::AnyText`]) and the first image of the row
//! settles it.

use super::backoff::{later, Backoff};
use super::note::{Note, Then};
use super::rows::{Open, Rows};
use super::schedule_book::{SchedChange, Schedules, FIRE_KEY_PREFIX};
use leasehold_core::{
    CancelOutcome, CrashReport, JobId, JobState, Millis, Outcome, StoreTime, Token, WorkerId,
    DEFAULT_MAX_ATTEMPTS_CAP, DEFAULT_MAX_CLAIM_BATCH, DEFAULT_MAX_KEY_LEN, DEFAULT_MAX_LEASE,
    DEFAULT_MAX_QUEUE_LEN,
};
use leasehold_model::config::SimConfig;
use leasehold_model::history::{Blob, LeaseRef, Op, ReadRow, Reply};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

/// The store's rules in a scenario: limits, backoff, parallelism.
#[derive(Clone, Debug)]
pub(crate) struct Rules {
    /// Most running jobs per limited queue.
    pub parallelism: Option<u32>,
    /// The queues the limit applies to.
    pub limited: BTreeSet<String>,
    /// Queues with a limit of their own, in place of `parallelism`.
    pub per_queue: BTreeMap<String, u32>,
    /// Largest payload, bytes.
    pub max_payload: u64,
    /// Largest result, bytes.
    pub max_result: u64,
    /// Error messages are cut to this many bytes.
    pub max_error: u64,
    /// Retry backoff.
    pub backoff: Backoff,
}

impl Rules {
    /// The rules the simulator's store runs with (see `leasehold_model::protocol::policy_of`:
    /// the scenario's limits, the defaults elsewhere).
    pub fn of(cfg: &SimConfig) -> Rules {
        let p = &cfg.protocol;
        Rules {
            parallelism: p.parallelism,
            limited: cfg.workload.queues.iter().cloned().collect(),
            per_queue: p.queue_parallelism.clone(),
            max_payload: p.max_payload_bytes,
            max_result: p.max_result_bytes,
            max_error: p.max_error_bytes,
            backoff: Backoff::new(p.backoff_base.as_ms(), p.backoff_cap.as_ms()),
        }
    }

    fn limit_of(&self, queue: &str) -> Option<u32> {
        let own = self.per_queue.get(queue).copied();
        own.or(self.parallelism)
            .filter(|_| self.limited.contains(queue))
    }
}

/// `run_at` as the model knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunAt {
    /// Exactly this time.
    At(StoreTime),
    /// The store picks a time in `[lo, hi]`: the backoff window after
    /// `attempt` failed.
    Between {
        /// Earliest allowed.
        lo: StoreTime,
        /// Latest allowed.
        hi: StoreTime,
        /// The failed attempt.
        attempt: u32,
    },
}

/// The stored error message as the model knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ErrText {
    /// Exactly this.
    Is(Option<String>),
    /// Some message of the store's own wording (a sweep's "lease expired").
    AnyText,
}

/// A release outcome as the store must remember it, for idempotent
/// repeats: bytes as a blob, the error already truncated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Said {
    /// Succeeded with this result.
    Succeeded(Blob),
    /// Failed.
    Failed {
        /// The stored (truncated) message.
        error: String,
        /// Retryable.
        retryable: bool,
    },
    /// Returned.
    Returned,
    /// Cancelled.
    Cancelled,
}

/// The last accepted release of a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    /// Its token.
    pub token: Token,
    /// What it said; `None` when the model learnt the token from an image
    /// only (after resynchronizing) and never saw the outcome.
    pub said: Option<Said>,
}

/// One job row of the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    pub job: JobId,
    pub queue: String,
    pub payload: Blob,
    pub priority: i32,
    pub run_at: RunAt,
    pub state: JobState,
    pub attempt: u32,
    pub max_attempts: u32,
    pub token: Token,
    pub holder: Option<WorkerId>,
    pub expires_at: Option<StoreTime>,
    pub cancel_requested: bool,
    pub released: Option<Mark>,
    /// Releases committed before the last one, by token: the spec answers
    /// a repeat of any committed release `Committed`, not only of the last.
    pub earlier: BTreeMap<Token, Said>,
    pub result: Option<Blob>,
    pub error: ErrText,
    pub key: Option<String>,
    pub version: u64,
    /// False after an answer of unknown outcome on this job: the model does
    /// not judge it until an image shows the row again.
    pub known: bool,
    /// The store time the job reached its terminal state, when the model
    /// applied that transition itself; `None` while it is not terminal, or
    /// when only an image showed it terminal (the instant is then unknown,
    /// and a prune of it is not judged by age).
    pub finished_at: Option<StoreTime>,
}

impl Open for Row {
    fn is_open(&self) -> bool {
        !self.known || matches!(self.state, JobState::Pending | JobState::Running)
    }
}

impl Row {
    /// The row an image shows, keeping what the model knew of the last
    /// release when the image names the same release token.
    pub fn adopt(img: &ReadRow, prev: Option<&Row>) -> Row {
        let released = img.released_token.map(|token| Mark {
            token,
            said: prev
                .and_then(|p| p.released.as_ref())
                .filter(|m| m.token == token)
                .and_then(|m| m.said.clone()),
        });
        // What the model knew of earlier releases still holds while the
        // image's last release is the same or later.
        let mut earlier = BTreeMap::new();
        if let (Some(p), Some(last)) = (prev, img.released_token) {
            earlier.extend(p.earlier.range(..last).map(|(t, s)| (*t, s.clone())));
            if let Some(Mark {
                token,
                said: Some(said),
            }) = &p.released
            {
                if *token < last {
                    earlier.insert(*token, said.clone());
                }
            }
        }
        Row {
            job: img.job,
            queue: img.queue.clone(),
            payload: img.payload,
            priority: img.priority,
            run_at: RunAt::At(img.run_at),
            state: img.state,
            attempt: img.attempt,
            max_attempts: img.max_attempts,
            token: img.token,
            holder: img.holder.clone(),
            expires_at: img.expires_at,
            cancel_requested: img.cancel_requested,
            released,
            earlier,
            result: img.result,
            error: ErrText::Is(img.error.clone()),
            key: img.key.clone(),
            version: img.version,
            known: true,
            // The same terminal state as the model had: it finished then.
            finished_at: prev
                .filter(|p| p.state == img.state && terminal(img.state))
                .and_then(|p| p.finished_at),
        }
    }

    /// The row of a job just made (by an enqueue or a fire), under a
    /// placeholder id: pending, never claimed, version 1.
    pub fn made(
        queue: &str,
        payload: Blob,
        priority: i32,
        run_at: RunAt,
        max_attempts: u32,
        key: Option<String>,
    ) -> Row {
        Row {
            job: JobId(0),
            queue: queue.to_string(),
            payload,
            priority,
            run_at,
            state: JobState::Pending,
            attempt: 0,
            max_attempts,
            token: Token::NONE,
            holder: None,
            expires_at: None,
            cancel_requested: false,
            released: None,
            earlier: BTreeMap::new(),
            result: None,
            error: ErrText::Is(None),
            key,
            version: 1,
            known: true,
            finished_at: None,
        }
    }

    /// The next version of this row (every accepted transition bumps the
    /// version by exactly one).
    fn bumped(&self) -> Row {
        let mut r = self.clone();
        r.version += 1;
        r
    }

    /// Whether a claim at `now` may take it; `None` when the retry time is
    /// still a window that `now` falls inside.
    fn due(&self, now: StoreTime) -> Option<bool> {
        match self.run_at {
            RunAt::At(t) => Some(t <= now),
            RunAt::Between { lo, hi, .. } => {
                if hi <= now {
                    Some(true)
                } else if lo > now {
                    Some(false)
                } else {
                    None
                }
            }
        }
    }

    /// A short account of the row, for the context of a message.
    pub fn describe(&self) -> String {
        let mut s = match self.state {
            JobState::Pending => {
                let due = match self.run_at {
                    RunAt::At(t) => format!("due {t}"),
                    RunAt::Between { lo, hi, .. } => format!("due in [{lo}, {hi}]"),
                };
                format!(
                    "{} is pending ({}, attempt {}/{}), {due}",
                    self.job, self.token, self.attempt, self.max_attempts
                )
            }
            JobState::Running => format!(
                "{} is running under {} by {} until {}{}",
                self.job,
                self.token,
                self.holder.as_ref().map_or("?", |w| w.as_str()),
                self.expires_at.map_or("?".into(), |t| t.to_string()),
                if self.cancel_requested {
                    ", cancel requested"
                } else {
                    ""
                }
            ),
            s => format!("{} is {s} (last token {})", self.job, self.token),
        };
        if let Some(m) = &self.released {
            let what = m.said.as_ref().map_or("an unknown outcome", said_kind);
            s.push_str(&format!("; {} released it with {what}", m.token));
        }
        s
    }
}

/// Whether a state is terminal (spec §1: succeeded, dead, cancelled).
pub(crate) fn terminal(s: JobState) -> bool {
    matches!(
        s,
        JobState::Succeeded | JobState::Dead | JobState::Cancelled
    )
}

fn said_kind(s: &Said) -> &'static str {
    match s {
        Said::Succeeded(_) => "succeeded",
        Said::Failed { .. } => "failed",
        Said::Returned => "returned",
        Said::Cancelled => "cancelled",
    }
}

/// What the model expects a request to be answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Want {
    /// Exactly this answer.
    Exact(Reply),
    /// A new job under an id never seen before.
    NewJob,
    /// A rejection of this `WireError` variant.
    Rejected(&'static str),
    /// `Committed` or `Lost`: a repeat of a release whose outcome the model
    /// never saw, or of a committed release a later lease's release has
    /// overtaken.
    CommittedOrLost,
    /// `get`: the row of this job, or no row.
    Read(Option<JobId>),
    /// `list`: these rows, in this order.
    List(Vec<JobId>),
    /// `prune`: distinct ids, at most `limit`, each a terminal job that
    /// finished at or before `cutoff` (`now − R`); see `prune`.
    Prunable {
        /// `now − R`.
        cutoff: StoreTime,
        /// Most ids.
        limit: u32,
    },
    /// The model cannot tell (a row of unknown state is involved).
    Unjudged,
}

/// The model's view of one request: the answer and the rows it changes.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// The expected answer.
    pub want: Want,
    /// Rows after the accepted transitions, in commit order.
    pub changes: Vec<Row>,
    /// For an enqueue that makes a job: the row, under the id the store
    /// answers (`job` is a placeholder).
    pub new_row: Option<Row>,
    /// Why the model expects this, when it is not obvious from the answer
    /// (written out only for a message: `note.rs`).
    pub note: Option<Note>,
    /// The change to the schedules, if the answer agrees.
    pub schedule: Option<SchedChange>,
}

impl Plan {
    pub(super) fn want(want: Want) -> Plan {
        Plan {
            want,
            changes: Vec::new(),
            new_row: None,
            note: None,
            schedule: None,
        }
    }

    pub(super) fn note(mut self, n: impl Into<Cow<'static, str>>) -> Plan {
        self.note = Some(Note::Text(n.into()));
        self
    }

    /// The note as facts, written out only if the answer differs.
    pub(super) fn about(mut self, note: Note) -> Plan {
        self.note = Some(note);
        self
    }
}

/// The model store.
#[derive(Clone, Debug)]
pub(crate) struct Model {
    /// The rules.
    pub rules: Rules,
    /// Rows by id.
    pub rows: Rows<Row>,
    /// Idempotency keys (schedule fires' keys included).
    pub keys: BTreeMap<String, JobId>,
    /// The schedules.
    pub schedules: Schedules,
    /// Jobs the store pruned: ids never given out again.
    pub pruned: BTreeSet<JobId>,
    /// Jobs a prune of unknown outcome may have deleted: nothing naming
    /// one is judged until an answer or image tells (see `prune`).
    pub maybe_pruned: BTreeSet<JobId>,
}

/// Whether a queue name is acceptable: non-empty, bounded, no control or
/// whitespace characters (spec §1).
pub(super) fn queue_ok(q: &str) -> bool {
    !q.is_empty()
        && q.len() <= DEFAULT_MAX_QUEUE_LEN
        && !q.chars().any(|c| c.is_control() || c.is_whitespace())
}

fn lease_ok(l: Millis) -> bool {
    l.0 > 0 && l <= DEFAULT_MAX_LEASE
}

/// An error message as the store keeps it: every NUL becomes U+FFFD (not
/// every store's text column can hold NUL), then the message is cut to at
/// most `max` bytes at a character boundary.
pub(crate) fn stored_error(s: &str, max: u64) -> String {
    truncate(&s.replace('\0', "\u{FFFD}"), max)
}

/// `s` cut to at most `max` bytes at a character boundary.
pub(crate) fn truncate(s: &str, max: u64) -> String {
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    if s.len() <= max {
        return s.to_string();
    }
    // Index 0 is always a boundary, so this finds one within `max` steps.
    let end = (0..=max)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0);
    s[..end].to_string()
}

impl Model {
    /// An empty store.
    pub fn new(rules: Rules) -> Model {
        Model {
            rules,
            rows: Rows::default(),
            keys: BTreeMap::new(),
            schedules: Default::default(),
            pruned: BTreeSet::new(),
            maybe_pruned: BTreeSet::new(),
        }
    }

    /// The outcome as the store must keep it: the error cut to the limit.
    pub fn normalized(&self, o: &Outcome) -> Outcome {
        match o {
            Outcome::Failed { error, retryable } => Outcome::Failed {
                error: stored_error(error, self.rules.max_error),
                retryable: *retryable,
            },
            other => other.clone(),
        }
    }

    /// What a release with `o` leaves the store to remember.
    pub fn said_of(&self, o: &Outcome) -> Said {
        match self.normalized(o) {
            Outcome::Succeeded(r) => Said::Succeeded(Blob::of(&r)),
            Outcome::Failed { error, retryable } => Said::Failed { error, retryable },
            Outcome::Returned => Said::Returned,
            Outcome::Cancelled => Said::Cancelled,
        }
    }

    /// Records a row (a new job, or an image adopted), with its key.
    pub fn put(&mut self, row: Row) {
        self.maybe_pruned.remove(&row.job);
        if let Some(k) = &row.key {
            // Another job under the key of one a prune of unknown outcome
            // may have deleted: that prune did delete it.
            let old = self.keys.get(k).copied();
            if let Some(old) = old.filter(|o| *o != row.job && self.maybe_pruned.contains(o)) {
                self.forget(&[old]);
            }
            self.keys.entry(k.clone()).or_insert(row.job);
        }
        self.rows.insert(row.job, row);
    }

    /// What `op` at store time `now` must answer and change.
    pub fn plan(&self, op: &Op, now: StoreTime) -> Plan {
        if self.names_maybe_pruned(op) {
            return Plan::want(Want::Unjudged)
                .note("a prune of unknown outcome may have deleted it");
        }
        match op {
            Op::Now => Plan::want(Want::Exact(Reply::Time(now))),
            Op::Enqueue {
                key,
                queue,
                payload,
                priority,
                delay,
                max_attempts,
            } => self.enqueue(key, queue, payload, *priority, *delay, *max_attempts, now),
            Op::Claim {
                worker,
                queue,
                lease,
                max,
            } => self.claim(worker, queue, *lease, *max, now),
            Op::Renew { job, token, lease } => self.renew(*job, *token, *lease, now),
            Op::Release {
                job,
                token,
                outcome,
            } => self.release(*job, *token, outcome, now),
            // `wall` is the sweeper's own clock: a correct store ignores it.
            Op::Sweep { limit, wall: _ } => self.sweep(*limit, now),
            Op::Cancel { job } => self.cancel(*job),
            // An operator's command the simulator never sends: not modelled.
            Op::RetryDead { .. } => Plan::want(Want::Unjudged),
            Op::Get { job } => Plan::want(Want::Read(self.rows.contains_key(job).then_some(*job))),
            Op::List { after, limit } => {
                let from = after.map_or(0, |a| a.0.saturating_add(1));
                let rows: Vec<&Row> = self
                    .rows
                    .range(JobId(from)..)
                    .take(*limit as usize)
                    .map(|(_, r)| r)
                    .collect();
                if rows
                    .iter()
                    .any(|r| !r.known || self.maybe_pruned.contains(&r.job))
                {
                    return Plan::want(Want::Unjudged);
                }
                Plan::want(Want::List(rows.iter().map(|r| r.job).collect()))
            }
            Op::PutSchedule { .. }
            | Op::RemoveSchedule { .. }
            | Op::Fire { .. }
            | Op::ListSchedules { .. } => self.plan_schedule(op, now),
            Op::Prune {
                retention,
                limit,
                audit_retention,
            } => self.prune(*retention, *limit, *audit_retention, now),
        }
    }

    #[allow(clippy::too_many_arguments)] // the fields of one enqueue spec
    fn enqueue(
        &self,
        key: &Option<String>,
        queue: &str,
        payload: &Blob,
        priority: i32,
        delay: Millis,
        max_attempts: u32,
        now: StoreTime,
    ) -> Plan {
        // Keys in the schedules' namespace belong to fires (spec §3).
        let bad_key = key.as_ref().is_some_and(|k| {
            k.is_empty()
                || k.len() > DEFAULT_MAX_KEY_LEN
                || k.contains('\0')
                || k.starts_with(FIRE_KEY_PREFIX)
        });
        if !queue_ok(queue)
            || payload.len > self.rules.max_payload
            || max_attempts == 0
            || max_attempts > DEFAULT_MAX_ATTEMPTS_CAP
            || bad_key
        {
            return Plan::want(Want::Rejected("Input")).note("the spec is invalid");
        }
        if let Some(k) = key {
            if let Some(id) = self.keys.get(k) {
                let Some(old) = self.rows.get(id) else {
                    return Plan::want(Want::Unjudged);
                };
                // Same spec: what the job is (queue, payload, priority,
                // budget). The delay is relative to each call's `now`, so a
                // retried enqueue never differs in intent by its delay.
                let same = old.queue == queue
                    && old.payload == *payload
                    && old.priority == priority
                    && old.max_attempts == max_attempts;
                return if same {
                    Plan::want(Want::Exact(Reply::Job(*id)))
                        .note(format!("key {k:?} already names {id}"))
                } else {
                    Plan::want(Want::Rejected("Input"))
                        .note(format!("key {k:?} already names {id} with another spec"))
                };
            }
        }
        let run_at = RunAt::At(later(now, delay.0));
        let row = Row::made(queue, *payload, priority, run_at, max_attempts, key.clone());
        Plan {
            new_row: Some(row),
            ..Plan::want(Want::NewJob)
        }
    }

    fn claim(
        &self,
        worker: &WorkerId,
        queue: &str,
        lease: Millis,
        max: u32,
        now: StoreTime,
    ) -> Plan {
        if !queue_ok(queue) || !lease_ok(lease) || max == 0 || max > DEFAULT_MAX_CLAIM_BATCH {
            return Plan::want(Want::Rejected("Input")).note("the claim is invalid");
        }
        // Only open rows can be granted, counted as running, or unknown.
        let of_queue: Vec<&Row> = self.rows.open().filter(|r| r.queue == queue).collect();
        if of_queue.iter().any(|r| !r.known) {
            return Plan::want(Want::Unjudged);
        }
        let running = of_queue
            .iter()
            .filter(|r| r.state == JobState::Running)
            .count();
        let running = u32::try_from(running).unwrap_or(u32::MAX);
        let limit = self.rules.limit_of(queue);
        let room = limit.map_or(max, |l| max.min(l.saturating_sub(running)));
        let mut due: Vec<(i32, StoreTime, JobId)> = Vec::new();
        for r in of_queue.iter().filter(|r| r.state == JobState::Pending) {
            match (r.due(now), r.run_at) {
                (Some(true), RunAt::At(t)) => due.push((r.priority, t, r.job)),
                (Some(false), _) => {}
                // A retry time the model has not seen yet decides this claim.
                _ => return Plan::want(Want::Unjudged),
            }
        }
        // Claim order: higher priority first, then earlier run_at, then id.
        due.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let expires_at = later(now, lease.0);
        let mut leases = Vec::new();
        let mut changes = Vec::new();
        for (_, _, id) in due.iter().take(room as usize) {
            let mut r = self.rows[id].bumped();
            r.state = JobState::Running;
            r.token = Token(r.token.0 + 1);
            r.attempt += 1;
            r.holder = Some(worker.clone());
            r.expires_at = Some(expires_at);
            r.cancel_requested = false;
            leases.push(LeaseRef {
                job: r.job,
                token: r.token,
                attempt: r.attempt,
                expires_at,
                queue: r.queue.clone(),
                payload: r.payload,
            });
            changes.push(r);
        }
        let note = Note::Due {
            due: due.len(),
            running: limit.map(|l| (running, l)),
        };
        Plan {
            changes,
            ..Plan::want(Want::Exact(Reply::Leases(leases))).about(note)
        }
    }

    fn renew(&self, job: JobId, token: Token, lease: Millis, now: StoreTime) -> Plan {
        let Some(row) = self.rows.get(&job) else {
            return Plan::want(Want::Rejected("UnknownJob"));
        };
        if !row.known {
            return Plan::want(Want::Unjudged);
        }
        if !lease_ok(lease) {
            return Plan::want(Want::Rejected("Input")).note("the lease is invalid");
        }
        if token > row.token {
            return Plan::want(Want::Rejected("UnknownToken")).about(Note::row(job));
        }
        if row.state != JobState::Running || row.token != token {
            return Plan::want(Want::Exact(Reply::RenewLost)).about(Note::row(job));
        }
        // A renew after expiry but before a sweep is still the holder's.
        let mut r = row.bumped();
        let expires_at = later(now, lease.0);
        r.expires_at = Some(expires_at);
        Plan {
            changes: vec![r],
            ..Plan::want(Want::Exact(Reply::Renewed {
                expires_at,
                cancel_requested: row.cancel_requested,
            }))
            .about(Note::row(job))
        }
    }

    fn release(&self, job: JobId, token: Token, outcome: &Outcome, now: StoreTime) -> Plan {
        let Some(row) = self.rows.get(&job) else {
            return Plan::want(Want::Rejected("UnknownJob"));
        };
        if !row.known {
            return Plan::want(Want::Unjudged);
        }
        if let Outcome::Succeeded(r) = outcome {
            if r.len() as u64 > self.rules.max_result {
                // Truncating a result would lose data: it is rejected.
                return Plan::want(Want::Rejected("Input")).note(format!(
                    "the result of {} bytes exceeds the cap of {}",
                    r.len(),
                    self.rules.max_result
                ));
            }
        }
        if token == Token::NONE || token > row.token {
            return Plan::want(Want::Rejected("UnknownToken")).about(Note::row(job));
        }
        let said = self.said_of(outcome);
        if let Some(m) = row.released.as_ref().filter(|m| m.token == token) {
            match &m.said {
                Some(s) if *s == said => {
                    return Plan::want(Want::Exact(Reply::Committed)).about(Note::Row {
                        job,
                        then: Then::Repeat,
                    });
                }
                None => return Plan::want(Want::CommittedOrLost).about(Note::row(job)),
                Some(_) => {}
            }
        }
        if row.earlier.get(&token) == Some(&said) {
            // PROTOCOL.md §3 answers a repeat of any committed release
            // `Committed`; the core remembers only the last release and
            // answers `Lost` once a later lease has released. Neither
            // answer changes the row, so both are accepted (see the report
            // of this finding in the module docs).
            return Plan::want(Want::CommittedOrLost).about(Note::Row {
                job,
                then: Then::CommittedBefore(token),
            });
        }
        if row.state != JobState::Running || row.token != token {
            return Plan::want(Want::Exact(Reply::ReleaseLost)).about(Note::row(job));
        }
        let mut r = row.bumped();
        r.holder = None;
        r.expires_at = None;
        r.cancel_requested = false;
        if let Some(Mark {
            token: t,
            said: Some(s),
        }) = &row.released
        {
            r.earlier.insert(*t, s.clone());
        }
        r.released = Some(Mark {
            token,
            said: Some(said.clone()),
        });
        match said {
            Said::Succeeded(result) => {
                // The work happened, even if a cancel was requested.
                r.state = JobState::Succeeded;
                r.result = Some(result);
                r.error = ErrText::Is(None);
            }
            Said::Failed { error, retryable } => {
                r.error = ErrText::Is(Some(error));
                if row.cancel_requested {
                    r.state = JobState::Cancelled;
                } else if !retryable || row.attempt >= row.max_attempts {
                    r.state = JobState::Dead;
                } else {
                    let (lo, hi) = self.rules.backoff.window(now, row.attempt);
                    r.state = JobState::Pending;
                    r.run_at = RunAt::Between {
                        lo,
                        hi,
                        attempt: row.attempt,
                    };
                }
            }
            Said::Returned => {
                if row.cancel_requested {
                    r.state = JobState::Cancelled;
                } else {
                    // Graceful return: the attempt is refunded, due at once.
                    r.state = JobState::Pending;
                    r.attempt = row.attempt.saturating_sub(1);
                    r.run_at = RunAt::At(now);
                }
            }
            Said::Cancelled => r.state = JobState::Cancelled,
        }
        Plan {
            changes: vec![r],
            ..Plan::want(Want::Exact(Reply::Committed)).about(Note::row(job))
        }
    }

    fn sweep(&self, limit: u32, now: StoreTime) -> Plan {
        // Only open rows can be unknown or running.
        if self.rows.open().any(|r| !r.known) {
            return Plan::want(Want::Unjudged);
        }
        let mut expired: Vec<(StoreTime, JobId)> = self
            .rows
            .open()
            .filter(|r| r.state == JobState::Running)
            .filter_map(|r| r.expires_at.filter(|e| *e <= now).map(|e| (e, r.job)))
            .collect();
        // Oldest expiry first, then id.
        expired.sort();
        let mut reports = Vec::new();
        let mut changes = Vec::new();
        for (expired_at, id) in expired.iter().take(limit as usize) {
            let row = &self.rows[id];
            let mut r = row.bumped();
            r.holder = None;
            r.expires_at = None;
            r.cancel_requested = false;
            r.state = if row.cancel_requested {
                JobState::Cancelled
            } else if row.attempt >= row.max_attempts {
                // The store words the reason itself.
                r.error = ErrText::AnyText;
                JobState::Dead
            } else {
                r.run_at = RunAt::At(now);
                JobState::Pending
            };
            reports.push(CrashReport {
                job: row.job,
                token: row.token,
                holder: row.holder.clone().unwrap_or_else(|| WorkerId::new("")),
                expired_at: *expired_at,
                swept_at: now,
                to: r.state,
            });
            changes.push(r);
        }
        Plan {
            changes,
            ..Plan::want(Want::Exact(Reply::Swept(reports))).about(Note::Expired {
                expired: expired.len(),
                now,
            })
        }
    }

    fn cancel(&self, job: JobId) -> Plan {
        let Some(row) = self.rows.get(&job) else {
            return Plan::want(Want::Rejected("UnknownJob"));
        };
        if !row.known {
            return Plan::want(Want::Unjudged);
        }
        let (answer, change) = match row.state {
            JobState::Pending => {
                let mut r = row.bumped();
                r.state = JobState::Cancelled;
                (CancelOutcome::Cancelled, Some(r))
            }
            // Asked already: nothing more to change.
            JobState::Running if row.cancel_requested => (CancelOutcome::Requested, None),
            JobState::Running => {
                let mut r = row.bumped();
                r.cancel_requested = true;
                (CancelOutcome::Requested, Some(r))
            }
            // A late cancel never overwrites a terminal state.
            s => (CancelOutcome::AlreadyTerminal(s), None),
        };
        Plan {
            changes: change.into_iter().collect(),
            ..Plan::want(Want::Exact(Reply::Cancel(answer))).about(Note::row(job))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_model::duration::Dur;

    fn model() -> Model {
        let mut cfg = SimConfig::default();
        cfg.protocol.backoff_base = Dur::ms(1000);
        cfg.protocol.backoff_cap = Dur::ms(60_000);
        cfg.protocol.max_error_bytes = 4;
        cfg.protocol.max_result_bytes = 8;
        cfg.protocol.parallelism = Some(1);
        cfg.workload.queues = vec!["q".into()];
        Model::new(Rules::of(&cfg))
    }

    /// An enqueue on `q` with a budget of 2.
    fn enqueue_op(key: Option<&str>, payload: &[u8], priority: i32, delay: u64) -> Op {
        Op::Enqueue {
            key: key.map(str::to_string),
            queue: "q".into(),
            payload: Blob::of(payload),
            priority,
            delay: Millis(delay),
            max_attempts: 2,
        }
    }

    fn enqueue(m: &mut Model, id: u64, key: Option<&str>, priority: i32, delay: u64) {
        let op = enqueue_op(key, format!("p{id}").as_bytes(), priority, delay);
        let plan = m.plan(&op, StoreTime(0));
        assert_eq!(plan.want, Want::NewJob);
        let mut row = plan.new_row.unwrap();
        row.job = JobId(id);
        m.put(row);
    }

    /// A model whose job 1 was claimed by `w` at 10 ms (token 1).
    fn claimed() -> Model {
        let mut m = model();
        enqueue(&mut m, 1, None, 0, 0);
        let p = m.plan(&claim(1), StoreTime(10));
        apply(&mut m, &p);
        m
    }

    fn apply(m: &mut Model, plan: &Plan) {
        for r in &plan.changes {
            m.rows.insert(r.job, r.clone());
        }
    }

    fn claim(max: u32) -> Op {
        Op::Claim {
            worker: WorkerId::new("w"),
            queue: "q".into(),
            lease: Millis(100),
            max,
        }
    }

    #[test]
    fn claim_order_is_priority_then_run_at_then_id_within_parallelism() {
        let mut m = model();
        m.rules.parallelism = None;
        enqueue(&mut m, 1, None, 0, 10);
        enqueue(&mut m, 2, None, 5, 20);
        enqueue(&mut m, 3, None, 0, 5);
        enqueue(&mut m, 4, None, 0, 5);
        enqueue(&mut m, 5, None, 9, 999);
        let plan = m.plan(&claim(10), StoreTime(50));
        let Want::Exact(Reply::Leases(ls)) = &plan.want else {
            panic!("{:?}", plan.want)
        };
        let ids: Vec<u64> = ls.iter().map(|l| l.job.0).collect();
        assert_eq!(ids, vec![2, 3, 4, 1], "job 5 is not due yet");
        assert!(ls
            .iter()
            .all(|l| l.token == Token(1) && l.attempt == 1 && l.expires_at == StoreTime(150)));

        m.rules.parallelism = Some(1);
        let plan = m.plan(&claim(10), StoreTime(50));
        assert_eq!(plan.changes.len(), 1);
        apply(&mut m, &plan);
        let plan = m.plan(&claim(10), StoreTime(60));
        assert_eq!(plan.want, Want::Exact(Reply::Leases(vec![])), "queue full");
    }

    #[test]
    fn repeated_key_answers_the_same_job_or_rejects_another_spec() {
        let mut m = model();
        enqueue(&mut m, 1, Some("k"), 0, 0);
        let same = enqueue_op(Some("k"), b"p1", 0, 77);
        assert_eq!(
            m.plan(&same, StoreTime(5)).want,
            Want::Exact(Reply::Job(JobId(1)))
        );
        let other = enqueue_op(Some("k"), b"other", 0, 0);
        assert_eq!(m.plan(&other, StoreTime(5)).want, Want::Rejected("Input"));
        // A NUL cannot be stored in every store's text column: refused.
        let nul = enqueue_op(Some("a\0b"), b"p1", 0, 0);
        assert_eq!(m.plan(&nul, StoreTime(5)).want, Want::Rejected("Input"));
    }

    fn release(job: u64, token: u64, outcome: Outcome) -> Op {
        Op::Release {
            job: JobId(job),
            token: Token(token),
            outcome,
        }
    }

    fn failed(e: &str, retryable: bool) -> Outcome {
        Outcome::Failed {
            error: e.into(),
            retryable,
        }
    }

    #[test]
    fn release_effects_and_idempotent_repeats() {
        let mut m = claimed();
        // Unknown token, stale-free: token 2 was never granted.
        assert_eq!(
            m.plan(&release(1, 2, Outcome::Returned), StoreTime(20))
                .want,
            Want::Rejected("UnknownToken")
        );
        assert_eq!(
            m.plan(&release(1, 0, Outcome::Returned), StoreTime(20))
                .want,
            Want::Rejected("UnknownToken")
        );
        assert_eq!(
            m.plan(&release(9, 1, Outcome::Returned), StoreTime(20))
                .want,
            Want::Rejected("UnknownJob")
        );
        // A retryable failure: pending in the backoff window, error truncated.
        let p = m.plan(&release(1, 1, failed("ééé", true)), StoreTime(20));
        assert_eq!(p.want, Want::Exact(Reply::Committed));
        let r = &p.changes[0];
        assert_eq!(r.state, JobState::Pending);
        assert_eq!(r.error, ErrText::Is(Some("éé".into())));
        assert_eq!(
            r.run_at,
            RunAt::Between {
                lo: StoreTime(820),
                hi: StoreTime(1220),
                attempt: 1
            }
        );
        assert_eq!(r.version, 3);
        apply(&mut m, &p);
        // The same release again: committed (the truncated text is the same).
        assert_eq!(
            m.plan(&release(1, 1, failed("éééé", true)), StoreTime(30))
                .want,
            Want::Exact(Reply::Committed)
        );
        // Same token, another outcome: lost.
        assert_eq!(
            m.plan(&release(1, 1, Outcome::Returned), StoreTime(30))
                .want,
            Want::Exact(Reply::ReleaseLost)
        );
        // Oversized result: rejected before anything else.
        assert_eq!(
            m.plan(
                &release(1, 1, Outcome::Succeeded(vec![0; 9])),
                StoreTime(30)
            )
            .want,
            Want::Rejected("Input")
        );
    }

    #[test]
    fn a_repeat_of_an_overtaken_release_may_answer_either() {
        let mut m = claimed();
        let first = release(1, 1, failed("x", true));
        let p = m.plan(&first, StoreTime(20));
        apply(&mut m, &p);
        m.rows
            .update(&JobId(1), |r| r.run_at = RunAt::At(StoreTime(20)))
            .unwrap();
        let p = m.plan(&claim(1), StoreTime(30));
        apply(&mut m, &p);
        // Before t2 releases, the repeat is the last release: committed.
        assert_eq!(
            m.plan(&first, StoreTime(35)).want,
            Want::Exact(Reply::Committed)
        );
        let p = m.plan(&release(1, 2, Outcome::Succeeded(vec![])), StoreTime(40));
        apply(&mut m, &p);
        // After it, the spec says committed and the core says lost.
        assert_eq!(m.plan(&first, StoreTime(50)).want, Want::CommittedOrLost);
        // Another outcome under t1 is lost either way.
        assert_eq!(
            m.plan(&release(1, 1, failed("y", true)), StoreTime(50))
                .want,
            Want::Exact(Reply::ReleaseLost)
        );
    }

    #[test]
    fn last_attempt_failure_is_dead_and_cancel_requested_failure_is_cancelled() {
        let mut m = model();
        enqueue(&mut m, 1, None, 0, 0);
        let mut r = m.rows[&JobId(1)].clone();
        r.state = JobState::Running;
        r.token = Token(2);
        r.attempt = 2;
        r.holder = Some(WorkerId::new("w"));
        r.expires_at = Some(StoreTime(100));
        m.rows.insert(JobId(1), r.clone());
        let p = m.plan(&release(1, 2, failed("x", true)), StoreTime(50));
        assert_eq!(p.changes[0].state, JobState::Dead);
        r.attempt = 1;
        r.cancel_requested = true;
        m.rows.insert(JobId(1), r);
        let p = m.plan(&release(1, 2, Outcome::Returned), StoreTime(50));
        assert_eq!(p.changes[0].state, JobState::Cancelled);
        assert_eq!(p.changes[0].attempt, 1, "no refund when cancelled");
        let p = m.plan(&release(1, 2, Outcome::Succeeded(vec![1])), StoreTime(50));
        assert_eq!(p.changes[0].state, JobState::Succeeded);
    }

    #[test]
    fn sweep_takes_expired_leases_oldest_first_up_to_the_limit() {
        let mut m = model();
        m.rules.parallelism = None;
        for id in 1..=3 {
            enqueue(&mut m, id, None, 0, 0);
        }
        for (id, exp) in [(1u64, 300i64), (2, 100), (3, 900)] {
            m.rows
                .update(&JobId(id), |r| {
                    r.state = JobState::Running;
                    r.token = Token(1);
                    r.attempt = if id == 2 { 2 } else { 1 };
                    r.holder = Some(WorkerId::new("w"));
                    r.expires_at = Some(StoreTime(exp));
                })
                .unwrap();
        }
        let p = m.plan(
            &Op::Sweep {
                limit: 5,
                wall: Some(StoreTime(10_000)),
            },
            StoreTime(300),
        );
        let Want::Exact(Reply::Swept(rs)) = &p.want else {
            panic!()
        };
        let ids: Vec<(u64, JobState)> = rs.iter().map(|r| (r.job.0, r.to)).collect();
        assert_eq!(
            ids,
            vec![(2, JobState::Dead), (1, JobState::Pending)],
            "wall is ignored"
        );
        assert_eq!(p.changes[0].error, ErrText::AnyText);
        assert_eq!(p.changes[1].run_at, RunAt::At(StoreTime(300)));
    }

    #[test]
    fn truncation_stops_at_a_char_boundary() {
        let m = model();
        assert_eq!(
            m.normalized(&failed("ééé", false)),
            failed("éé", false),
            "max_error_bytes is 4"
        );
        assert_eq!(truncate("abc", 5), "abc");
        assert_eq!(truncate("abcdef", 3), "abc");
        assert_eq!(truncate("aé", 2), "a");
        assert_eq!(truncate("é", 0), "");
    }
}
