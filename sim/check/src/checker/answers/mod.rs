//! I11 (answers): an independent reference model of the store judges every
//! answer the store gave.
//!
//! The store host serializes requests, and the history records each one it
//! executed as a `Served` record, in execution order. This module replays
//! the executed requests (`answered`, and `answer_lost`: executed and
//! committed, only the answer was not delivered) through its own model of
//! a store (`model`), written from `PROTOCOL.md` §1 and §3 without any
//! of the core's transition, policy or adapter code, and requires:
//!
//! 1. **Answers.** Every answer equals the model's: the store clock for
//!    `now`; a fresh id for a new job, the existing id for a repeated
//!    idempotency key with the same spec (and never a second job), a
//!    rejection for the same key with another spec; exactly the leases the
//!    model grants (pending, due jobs of the queue in claim order —
//!    priority, then `run_at`, then id — up to `max` and within the queue's
//!    parallelism limit, each with the next token and attempt and
//!    `expires_at = now + lease`); `Renewed`/`Lost`; `Committed`/`Lost`
//!    (a repeat of a committed release answers `Committed`, the same token
//!    with another outcome `Lost`); the crash reports of the expired leases
//!    (oldest expiry first, then id, up to the limit, judged by the store's
//!    clock only: a sweep's `wall` field must not matter); cancel outcomes;
//!    and reads. A rejection must be one the model makes too, of the same
//!    `WireError` variant.
//! 2. **Rows.** Every image of a row the store shows (the `after` images
//!    read right after a request, and every row a read returns) equals the
//!    model's row in every field, `version` included: exactly one bump per
//!    accepted transition, none otherwise.
//! 3. **Backoff.** The one free choice of a store, the retry time after a
//!    retryable failure, lies in `now + [raw − span, min(raw + span, cap)]`
//!    with `raw = min(base·2^(attempt−1), cap)` and
//!    `span = raw·jitter/1000`. The model learns the actual time from the
//!    row's image instead of reproducing the store's jitter.
//!
//! After a mismatch the model takes the store's row images as the truth for
//! the jobs they show (and leaves the rows the store's answer did not touch
//! as they were), so one bug yields one or a few violations, not one per
//! later request.
//!
//! **Unknown outcomes.** A store answer `Unavailable` (the store itself
//! could not tell whether it committed; the memory store never answers it)
//! is not judged. On a single-job request (renew, release, cancel) the model
//! stops judging that job until an image of its row shows the truth again,
//! which the `after` image of the same request normally does at once. On a
//! request that may touch rows the model cannot name (enqueue, claim,
//! sweep) the model no longer knows the set of rows, and stops judging the
//! rest of the run rather than raise false alarms; it still follows the
//! row images for [`model_events`]. A prune of unknown outcome is bounded:
//! only the rows it could have deleted are no longer judged (see `prune`).
//!
//! **Where the spec and the core differ.** PROTOCOL.md §3 answers a repeat
//! of *any* committed release `Committed`. The core remembers only the last
//! accepted release, so once the job was claimed again and that later
//! lease released, a late repeat of the earlier release (a worker retrying
//! after its answer was lost) is answered `Lost` although it committed.
//! Such a repeat changes nothing either way, so the model accepts both
//! answers there rather than fail the core or a store that follows the
//! spec to the letter; every other repeat is judged exactly.
//!
//! **Conflicts.** A renew, release, cancel, claim, sweep, enqueue or prune answered `Conflict` was
//! not applied (the protocol's rule for that answer, which a store may give
//! any write it could not serialize, and gives every part of a batch whose
//! transaction failed): the model applies nothing, and the image of each
//! row it names after it must equal the model's row as it was.
//!
//! **Cancelled requests.** A worker batch whose caller dropped it while
//! the store was inside its transaction (fate `cancelled`) got no answer
//! and must have committed nothing: the model applies nothing and judges
//! the images of the rows its releases name, as for a conflict. A claim in
//! it that committed anyway shows up at the next claim or sweep of the
//! rows it took, whose answers the model then disagrees with.
//!
//! **Pruning.** The model prunes exactly what the store pruned, judges
//! each pruned job was prunable (terminal, finished at or before
//! `now − R`, at most `limit`), and judges every later answer against what
//! is left: a pruned job is an unknown job, its key is free, its plan time
//! is refused. A prune of unknown outcome suspends judging only the jobs it
//! could have deleted (see `prune`).
//!
//! [`model_events`] gives the accepted transitions as store events, for
//! stores without an audit log.

mod backoff;
mod compare;
mod model;
mod note;
mod prune;
pub mod reference;
mod rows;
mod schedule_book;
mod schedules;
pub(crate) use model::stored_error;

use crate::checker::Violation;
use compare::{diffs_text, op_text, reply_text, row_diffs, variant_of, want_text};
use leasehold_core::{Event, EventKind, JobId, Outcome, StoreTime, Token};
use leasehold_model::config::{InvariantId, SimConfig};
use leasehold_model::history::{Fate, History, Op, ReadRow, Record, Reply};
use model::{Model, Plan, Row, Rules, RunAt, Want};
use std::collections::{BTreeMap, BTreeSet};

/// Most jobs described in the context of one message.
const MAX_CONTEXT: usize = 3;

/// I11 violations of a run: every store answer and row image the reference
/// model disagrees with.
pub fn check(history: &History, cfg: &SimConfig) -> Vec<Violation> {
    Replay::run(history, cfg).violations
}

/// The store's accepted transitions, as the model derives them from the
/// store's answers and row images, in execution order: `(true time, request
/// id, event)` with the same [`EventKind`] shapes and versions as the
/// core's events. For a store that keeps no audit log.
///
/// Where the store agrees with the model these are the model's transitions.
/// Where it does not, they follow what the store did (its answer and the
/// rows it showed), since that is what the other invariants must judge. A
/// change the store made without any answer showing it (none in a correct
/// store) has no event. A retry time never shown by an image is given as
/// the earliest time of its backoff window.
pub fn model_events(history: &History, cfg: &SimConfig) -> Vec<(Option<u64>, Option<u64>, Event)> {
    Replay::run(history, cfg).events
}

/// The outcome as a store must keep it under `cfg`: an error message
/// longer than `max_error_bytes` cut at a character boundary (results are
/// never cut: an oversized one is rejected). Compare this, not the request's
/// outcome, with what the store recorded.
pub fn stored_outcome(outcome: &Outcome, cfg: &SimConfig) -> Outcome {
    Model::new(Rules::of(cfg)).normalized(outcome)
}

/// One executed request with its answer.
struct Served<'a> {
    t: u64,
    store_time: StoreTime,
    id: u64,
    host: &'a str,
    op: &'a Op,
    reply: &'a Reply,
    after: &'a [ReadRow],
}

impl Served<'_> {
    fn text(&self) -> String {
        format!(
            "request #{} from {} {}",
            self.id,
            self.host,
            op_text(self.op, self.host)
        )
    }

    fn violation(&self, message: String) -> Violation {
        Violation::new(InvariantId::I11, message)
            .hosts([self.host])
            .at(self.t)
            .store_at(self.store_time)
    }

    /// Whether the request may change rows.
    fn writes(&self) -> bool {
        !matches!(
            self.op,
            Op::Now | Op::Get { .. } | Op::List { .. } | Op::ListSchedules { .. }
        )
    }

    /// Whether the store answered this write `Conflict`: not applied. A
    /// claim may be answered so too (its batch's transaction failed, or a
    /// claim sent alone could not be serialized), and so may a sweep and an
    /// enqueue (a store's contention reaches every write).
    fn conflict(&self) -> bool {
        (self.job().is_some()
            || matches!(
                self.op,
                Op::Claim { .. } | Op::Prune { .. } | Op::Sweep { .. } | Op::Enqueue { .. }
            ))
            && matches!(self.reply, Reply::Rejected(text) if variant_of(text) == "Conflict")
    }

    /// The job a single-job request names.
    fn job(&self) -> Option<JobId> {
        match self.op {
            Op::Renew { job, .. }
            | Op::Release { job, .. }
            | Op::Cancel { job }
            | Op::Get { job } => Some(*job),
            _ => None,
        }
    }

    /// The rows a read returned: images like `after`.
    fn read_rows(&self) -> &[ReadRow] {
        match self.reply {
            Reply::Row(Some(r)) => std::slice::from_ref(r),
            Reply::Rows(rs) => rs,
            _ => &[],
        }
    }
}

/// How the answer compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// As the model expects: its changes apply, images are compared.
    Agrees,
    /// Reported: images are taken as they are.
    Differs,
    /// Not judged: images are taken as they are.
    Skipped,
}

/// The replay of one run.
struct Replay {
    model: Model,
    /// The model lost track of the set of rows (see the module docs).
    blind: bool,
    violations: Vec<Violation>,
    events: Vec<(Option<u64>, Option<u64>, Event)>,
}

impl Replay {
    /// A replay over an empty store with `cfg`'s rules.
    fn new(cfg: &SimConfig) -> Replay {
        Replay {
            model: Model::new(Rules::of(cfg)),
            blind: false,
            violations: Vec::new(),
            events: Vec::new(),
        }
    }

    fn run(h: &History, cfg: &SimConfig) -> Replay {
        let mut ops: BTreeMap<u64, &Op> = BTreeMap::new();
        for r in &h.records {
            if let Record::Request { id, op, .. } = r {
                ops.insert(*id, op);
            }
        }
        let mut replay = Replay::new(cfg);
        // Served records are in execution order (the store serializes
        // requests; records are stably sorted by true time).
        let cancelled = Reply::Unavailable("cancelled by its caller mid-transaction".into());
        for r in &h.records {
            if let Record::Served {
                t,
                store_time,
                id,
                host,
                fate: Fate::Cancelled,
                after,
                ..
            } = r
            {
                if let Some(op) = ops.get(id) {
                    replay.unapplied(&Served {
                        t: *t,
                        store_time: *store_time,
                        id: *id,
                        host,
                        op,
                        reply: &cancelled,
                        after,
                    });
                }
                continue;
            }
            let Record::Served {
                t,
                store_time,
                id,
                host,
                fate,
                reply: Some(reply),
                after,
            } = r
            else {
                continue;
            };
            // A lost request never executed; there is nothing to judge.
            if *fate == Fate::RequestLost {
                continue;
            }
            let Some(op) = ops.get(id) else { continue };
            replay.serve(&Served {
                t: *t,
                store_time: *store_time,
                id: *id,
                host,
                op,
                reply,
                after,
            });
        }
        replay
    }

    fn serve(&mut self, s: &Served<'_>) {
        if s.conflict() {
            self.unapplied(s);
            return;
        }
        let unknown = matches!(s.reply, Reply::Unavailable(_));
        let plan = (!unknown && !self.blind).then(|| self.model.plan(s.op, s.store_time));
        let pre = self.touched_rows(s, plan.as_ref());
        if unknown {
            self.lose_track(s);
        }
        let verdict = match &plan {
            Some(p) => self.judge(s, p, &pre),
            None => Verdict::Skipped,
        };
        if let (Verdict::Agrees, Some(p)) = (verdict, &plan) {
            self.apply(s, p);
        }
        // What the store pruned is gone, whatever the verdict (see `prune`).
        if let Reply::Pruned(ids) = s.reply {
            self.model.forget(ids);
        }
        self.model.settle(s.op, s.reply);
        self.follow_schedules(s, plan.as_ref(), verdict);
        let mut flagged = verdict == Verdict::Differs;
        for img in s.after.iter().chain(s.read_rows()) {
            flagged |= self.image(s, img, verdict == Verdict::Agrees && !flagged);
        }
        if s.writes() {
            self.derive_events(s, &pre, plan.as_ref());
        }
    }

    /// A request that applied nothing (answered `Conflict`, or cancelled
    /// by its caller before its commit): the rows it names must be as the
    /// model has them.
    fn unapplied(&mut self, s: &Served<'_>) {
        for img in s.after {
            self.image(s, img, !self.blind);
        }
    }

    /// Copies of the rows the request touched or the model expects it to
    /// touch, before it.
    fn touched_rows(&self, s: &Served<'_>, plan: Option<&Plan>) -> BTreeMap<JobId, Row> {
        let mut ids: BTreeSet<JobId> = s.after.iter().map(|r| r.job).collect();
        ids.extend(s.job());
        ids.extend(
            plan.into_iter()
                .flat_map(|p| p.changes.iter().map(|r| r.job)),
        );
        match s.reply {
            Reply::Job(j) => {
                ids.insert(*j);
            }
            Reply::Leases(ls) => ids.extend(ls.iter().map(|l| l.job)),
            Reply::Swept(rs) => ids.extend(rs.iter().map(|r| r.job)),
            _ => {}
        }
        ids.iter()
            .filter_map(|j| self.model.rows.get(j).map(|r| (*j, r.clone())))
            .collect()
    }

    /// An answer of unknown outcome (see the module docs).
    fn lose_track(&mut self, s: &Served<'_>) {
        match s.op {
            Op::Renew { job, .. }
            | Op::Release { job, .. }
            | Op::Cancel { job }
            | Op::RetryDead { job } => {
                self.model.rows.update(job, |r| r.known = false);
            }
            Op::Enqueue { .. } | Op::Claim { .. } | Op::Sweep { .. } | Op::Fire { .. } => {
                self.blind = true
            }
            // Bounded: only the rows it could have deleted (see `prune`).
            Op::Prune { retention, .. } => self.model.maybe_prune(*retention, s.store_time),
            Op::PutSchedule { .. } | Op::RemoveSchedule { .. } => self.model.schedules.blind = true,
            Op::Now | Op::Get { .. } | Op::List { .. } | Op::ListSchedules { .. } => {}
        }
    }

    /// Compares the answer with the plan; reports a mismatch.
    fn judge(&mut self, s: &Served<'_>, plan: &Plan, pre: &BTreeMap<JobId, Row>) -> Verdict {
        let ok = match (&plan.want, s.reply) {
            (Want::Unjudged, _) => return Verdict::Skipped,
            (Want::Exact(w), r) => w == r,
            (Want::NewJob, Reply::Job(j)) => {
                !self.model.rows.contains_key(j) && !self.model.pruned.contains(j)
            }
            (Want::Prunable { cutoff, limit }, Reply::Pruned(ids)) => {
                let Some((job, why)) = self.model.prune_problem(ids, *cutoff, *limit) else {
                    return Verdict::Agrees;
                };
                let mut v = s.violation(format!(
                    "{}: the store pruned {why}{}",
                    s.text(),
                    plan.note.as_ref().map_or(String::new(), |n| format!(
                        " ({})",
                        n.text(s.op, described(pre))
                    ))
                ));
                if let Some(j) = job {
                    v = v.job(j);
                }
                self.violations.push(v);
                return Verdict::Differs;
            }
            (Want::Rejected(v), Reply::Rejected(text)) => variant_of(text) == *v,
            (Want::CommittedOrLost, Reply::Committed | Reply::ReleaseLost) => true,
            (Want::Read(None), Reply::Row(None)) => true,
            (Want::Read(Some(j)), Reply::Row(Some(r))) => r.job == *j,
            (Want::List(ids), Reply::Rows(rs)) => ids.iter().eq(rs.iter().map(|r| &r.job)),
            _ => false,
        };
        if ok {
            return Verdict::Agrees;
        }
        let (jobs, tokens) = self.focus(s, plan);
        let mut context: Vec<String> = plan
            .note
            .iter()
            .map(|n| n.text(s.op, described(pre)))
            .collect();
        // For multi-job answers, say where each differing job stood.
        if matches!(s.op, Op::Claim { .. } | Op::Sweep { .. }) {
            context.extend(jobs.iter().take(MAX_CONTEXT).map(|j| {
                pre.get(j)
                    .map_or(format!("{j} is unknown to the model"), Row::describe)
            }));
        }
        if let (Want::NewJob, Reply::Job(j)) = (&plan.want, s.reply) {
            if self.model.pruned.contains(j) {
                context.push(format!("{j} was pruned; ids are never given out again"));
            } else {
                context.push(format!("{j} already exists"));
            }
        }
        let context = if context.is_empty() {
            String::new()
        } else {
            format!(" ({})", context.join("; "))
        };
        let message = format!(
            "{}: the store answered {} but the model expected {}{context}",
            s.text(),
            reply_text(s.reply),
            want_text(&plan.want)
        );
        let mut v = s.violation(message).tokens(tokens);
        if let Some(j) = jobs.first().copied().or(s.job()) {
            v = v.job(j);
        }
        self.violations.push(v);
        Verdict::Differs
    }

    /// The jobs and tokens a mismatch concerns: for a claim or sweep the
    /// jobs whose lease or report differ; else the request's job.
    fn focus(&self, s: &Served<'_>, plan: &Plan) -> (Vec<JobId>, Vec<Token>) {
        let mut jobs = Vec::new();
        let mut tokens = Vec::new();
        let mut add = |j: JobId, t: Option<Token>| {
            if !jobs.contains(&j) {
                jobs.push(j);
            }
            if let Some(t) = t.filter(|t| !tokens.contains(t)) {
                tokens.push(t);
            }
        };
        match (&plan.want, s.reply) {
            (Want::Exact(Reply::Leases(m)), Reply::Leases(st)) => {
                for l in st.iter().filter(|l| !m.contains(l)) {
                    add(l.job, Some(l.token));
                }
                for l in m.iter().filter(|l| !st.contains(l)) {
                    add(l.job, Some(l.token));
                }
            }
            (Want::Exact(Reply::Swept(m)), Reply::Swept(st)) => {
                for r in st.iter().filter(|r| !m.contains(r)) {
                    add(r.job, Some(r.token));
                }
                for r in m.iter().filter(|r| !st.contains(r)) {
                    add(r.job, Some(r.token));
                }
            }
            (_, Reply::Job(j)) | (Want::Exact(Reply::Job(j)), _) => add(*j, None),
            _ => {}
        }
        if let Op::Renew { job, token, .. } | Op::Release { job, token, .. } = s.op {
            add(*job, Some(*token));
        }
        (jobs, tokens)
    }

    /// Keeps the model's schedules in step with what the store did when
    /// the answer was not judged or differed (see `schedules`).
    fn follow_schedules(&mut self, s: &Served<'_>, plan: Option<&Plan>, verdict: Verdict) {
        if verdict == Verdict::Agrees {
            return;
        }
        match (s.op, s.reply) {
            // A cron put the model does not judge: a `Done` says it stands.
            (Op::PutSchedule { .. }, Reply::Done) if verdict == Verdict::Skipped => {
                match plan.and_then(|p| p.schedule.as_ref()) {
                    Some(c) if !self.model.schedules.blind => self.model.apply_schedule(c),
                    _ => self.model.schedules.blind = true,
                }
            }
            // A complete listing is the truth.
            (Op::ListSchedules { after: None, limit }, Reply::Schedules(v))
                if v.len() < *limit as usize =>
            {
                self.model.adopt_schedules(v)
            }
            (Op::PutSchedule { .. } | Op::RemoveSchedule { .. }, _) => {
                self.model.schedules.blind = true
            }
            _ => {}
        }
    }

    /// Applies the model's changes of an answer that agreed.
    fn apply(&mut self, s: &Served<'_>, plan: &Plan) {
        if let Some(c) = &plan.schedule {
            self.model.apply_schedule(c);
        }
        for r in &plan.changes {
            let mut r = r.clone();
            // The instant it finished, which a prune's age is judged by.
            if model::terminal(r.state) && r.finished_at.is_none() {
                r.finished_at = Some(s.store_time);
            }
            self.model.rows.insert(r.job, r);
        }
        if let (Some(row), Reply::Job(j)) = (&plan.new_row, s.reply) {
            let mut row = row.clone();
            row.job = *j;
            self.model.put(row);
        }
        // A repeat of a release whose outcome the model had not seen: a
        // `Committed` answer tells it was this one.
        if let (
            Want::CommittedOrLost,
            Reply::Committed,
            Op::Release {
                job,
                token,
                outcome,
            },
        ) = (&plan.want, s.reply, s.op)
        {
            let said = self.model.said_of(outcome);
            self.model.rows.update(job, |r| {
                if let Some(m) = r
                    .released
                    .as_mut()
                    .filter(|m| m.token == *token && m.said.is_none())
                {
                    m.said = Some(said);
                }
            });
        }
    }

    /// Compares one row image with the model when `judge`, then takes it as
    /// the truth. Returns whether it reported a mismatch.
    fn image(&mut self, s: &Served<'_>, img: &ReadRow, judge: bool) -> bool {
        let prev = self.model.rows.get(&img.job);
        let mut flagged = false;
        if judge {
            let problem = match prev {
                None => Some(format!(
                    "the store has a row {} the model never saw made ({} {} v{})",
                    img.job, img.state, img.token, img.version
                )),
                Some(m) if m.known => {
                    let d = row_diffs(m, img);
                    (!d.is_empty()).then(|| {
                        let when = if s.writes() { "after it " } else { "" };
                        // A row ahead of the model changed in a step that
                        // no answer showed (the model saw every answer).
                        let silent = match img.version.checked_sub(m.version) {
                            Some(n) if n > 0 => {
                                format!(": it changed in {n} step(s) no answer showed")
                            }
                            _ => String::new(),
                        };
                        format!(
                            "the store's row {} {when}has {}{silent}",
                            img.job,
                            diffs_text(&d)
                        )
                    })
                }
                Some(_) => None,
            };
            if let Some(p) = problem {
                let message = format!(
                    "{}: answered {} as the model expects, but {p}",
                    s.text(),
                    reply_text(s.reply)
                );
                let v = s.violation(message).job(img.job).tokens([img.token]);
                self.violations.push(v);
                flagged = true;
            }
        }
        let row = Row::adopt(img, prev);
        self.model.put(row);
        flagged
    }

    /// The store events of this request, from the rows before and after.
    fn derive_events(&mut self, s: &Served<'_>, pre: &BTreeMap<JobId, Row>, plan: Option<&Plan>) {
        let mut order: Vec<JobId> = Vec::new();
        let changed = plan.map(|p| p.changes.iter().map(|r| r.job));
        let new = match s.reply {
            Reply::Job(j) => Some(*j),
            _ => None,
        };
        for j in s
            .after
            .iter()
            .map(|r| r.job)
            .chain(changed.into_iter().flatten())
            .chain(new)
        {
            if !order.contains(&j) {
                order.push(j);
            }
        }
        let unknown = matches!(s.reply, Reply::Unavailable(_));
        for j in order {
            let Some(post) = self.model.rows.get(&j) else {
                continue;
            };
            let before = pre.get(&j);
            let event = |from, worker, kind| Event {
                job: j,
                token: post.token,
                worker,
                from,
                to: post.state,
                at: s.store_time,
                version: post.version,
                kind,
            };
            let e = match (s.op, before) {
                (Op::Enqueue { .. } | Op::Fire { .. }, None) if new == Some(j) || unknown => event(
                    None,
                    None,
                    EventKind::Enqueued {
                        queue: post.queue.clone(),
                        max_attempts: post.max_attempts,
                        run_at: run_at(&post.run_at),
                    },
                ),
                (_, Some(b)) if post.version > b.version => {
                    let from = Some(b.state);
                    match (s.op, s.reply) {
                        (Op::Claim { worker, .. }, r)
                            if unknown
                                || matches!(r, Reply::Leases(ls) if ls.iter().any(|l| l.job == j)) =>
                        {
                            event(
                                from,
                                Some(worker.clone()),
                                EventKind::Claimed {
                                    attempt: post.attempt,
                                    expires_at: post.expires_at.unwrap_or(s.store_time),
                                },
                            )
                        }
                        (Op::Renew { .. }, Reply::Renewed { .. } | Reply::Unavailable(_)) => event(
                            from,
                            post.holder.clone(),
                            EventKind::Renewed {
                                expires_at: post.expires_at.unwrap_or(s.store_time),
                            },
                        ),
                        (Op::Release { outcome, .. }, Reply::Committed | Reply::Unavailable(_)) => {
                            event(
                                from,
                                b.holder.clone(),
                                EventKind::Released {
                                    outcome: self.model.normalized(outcome),
                                    run_at: (post.state == leasehold_core::JobState::Pending)
                                        .then(|| run_at(&post.run_at)),
                                },
                            )
                        }
                        (Op::Sweep { .. }, r)
                            if unknown
                                || matches!(r, Reply::Swept(rs) if rs.iter().any(|x| x.job == j)) =>
                        {
                            event(
                                from,
                                b.holder.clone(),
                                EventKind::Swept {
                                    expired_at: b.expires_at.unwrap_or(s.store_time),
                                    attempt: b.attempt,
                                },
                            )
                        }
                        (Op::Cancel { .. }, Reply::Cancel(_) | Reply::Unavailable(_)) => {
                            if post.state == leasehold_core::JobState::Cancelled {
                                event(from, None, EventKind::Cancelled)
                            } else {
                                event(from, post.holder.clone(), EventKind::CancelRequested)
                            }
                        }
                        _ => continue,
                    }
                }
                _ => continue,
            };
            self.events.push((Some(s.t), Some(s.id), e));
        }
    }
}

/// A row's `run_at` for an event: the earliest allowed time while the
/// store's choice is not yet known.
fn run_at(r: &RunAt) -> StoreTime {
    match r {
        RunAt::At(t) => *t,
        RunAt::Between { lo, .. } => *lo,
    }
}

/// How the rows of `pre` stood, described for a note (`note.rs`).
fn described(pre: &BTreeMap<JobId, Row>) -> impl Fn(JobId) -> Option<String> + '_ {
    move |job| pre.get(&job).map(Row::describe)
}

#[cfg(test)]
mod tests;
