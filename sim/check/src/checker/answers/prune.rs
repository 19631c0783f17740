//! The reference model's prune (spec §3 "Retention"), written from the
//! spec and not from the core's guard: nothing here calls
//! `leasehold_core::transition::prune` or `prunable`.
//!
//! - **The request.** `R` below the declared minimum, an audit retention
//!   shorter than `R`, or a limit of 0 or above the declared cap is
//!   refused (`Input`) and changes nothing.
//! - **The answer.** The store chooses which prunable jobs go (its scan
//!   order), so the model does not predict the ids; it judges the ones the
//!   store names: distinct, at most `limit`, each a job the model has,
//!   terminal, and finished at or before `now − R` by the store's clock.
//!   The finish instant is the store time of the request the model saw
//!   make the job terminal; a job whose finish only an image showed (after
//!   an answer the model could not judge) has no known instant and is not
//!   judged by age.
//! - **The effect.** The model then deletes exactly the rows the store
//!   named, whatever the verdict (the store's answer is the truth about
//!   what is gone): each id joins the pruned set (ids are never given out
//!   again, so a new job under one is a violation), its idempotency key is
//!   freed (an enqueue with it makes a new job), and a fire's key raises
//!   its schedule's pruned mark (a fire at or before it with no job must
//!   answer `PlanTimePruned`). Every later request naming a pruned job is
//!   judged as for an unknown job: renew, release and cancel answer
//!   `UnknownJob`, get answers no row, and an image of it is a row the
//!   model never saw made.
//! - **Unknown outcome.** A prune answered `Unavailable` may have deleted
//!   any of the jobs
//!   that were prunable then, and no others. The model loses track of those
//!   rows only, not of the run: they (and the marks their keys would raise)
//!   join a "maybe pruned" set, and a request naming one of them (renew,
//!   release, cancel, get, a list reaching it, an enqueue with its key, a
//!   fire of its plan time or of one at or before its mark) is not judged.
//!   The first answer that tells settles it: an image of the row (it is
//!   there), a `get` with no row or an `UnknownJob` (it is gone), a new job
//!   under its key (it is gone), or a later prune naming it.
//! - **A retried prune.** The core's `Pruner` answers an `Unavailable`
//!   prune by waiting its backoff and calling again: a new request, judged
//!   like any prune. A job it names that the lost prune may have deleted
//!   was still there, so the earlier prune did not delete it, and its row
//!   is the one the model holds (a terminal row never changes, and nothing
//!   naming it was applied meanwhile): it is judged in full, terminal and
//!   finished by this call's own cutoff, not waved through as "maybe
//!   pruned".

use super::compare::variant_of;
use super::model::{terminal, Model, Plan, Want};
use super::schedule_book::{fire_key, parse_fire_key, raise};
use leasehold_core::{JobId, Millis, StoreTime, MAX_PRUNE_LIMIT, MIN_RETENTION};
use leasehold_model::history::{Op, Reply};
use std::collections::BTreeSet;

/// `now − d`, saturating.
fn before(now: StoreTime, d: Millis) -> StoreTime {
    StoreTime(now.0.saturating_sub(i64::try_from(d.0).unwrap_or(i64::MAX)))
}

impl Model {
    /// The plan of a prune at `now`.
    pub(super) fn prune(
        &self,
        retention: Millis,
        limit: u32,
        audit_retention: Millis,
        now: StoreTime,
    ) -> Plan {
        if retention < MIN_RETENTION
            || audit_retention < retention
            || limit == 0
            || limit > MAX_PRUNE_LIMIT
        {
            return Plan::want(Want::Rejected("Input")).note("the prune request is invalid");
        }
        let cutoff = before(now, retention);
        Plan::want(Want::Prunable { cutoff, limit })
            .note(format!("R = {retention}, so the cutoff is {cutoff}"))
    }

    /// What is wrong with the ids a prune answered, if anything: the job
    /// concerned and why.
    pub(super) fn prune_problem(
        &self,
        ids: &[JobId],
        cutoff: StoreTime,
        limit: u32,
    ) -> Option<(Option<JobId>, String)> {
        if ids.len() > limit as usize {
            return Some((
                None,
                format!("{} jobs, more than the limit {limit}", ids.len()),
            ));
        }
        let mut seen = BTreeSet::new();
        for id in ids {
            if !seen.insert(*id) {
                return Some((Some(*id), format!("{id} twice")));
            }
            let Some(row) = self.rows.get(id) else {
                let why = if self.pruned.contains(id) {
                    format!("{id}, which an earlier prune deleted")
                } else {
                    format!("{id}, a job the model never saw made")
                };
                return Some((Some(*id), why));
            };
            // A row the model lost track of (an answer of unknown
            // outcome) is not judged; one a lost prune may have deleted
            // is (see "A retried prune" above).
            if !row.known {
                continue;
            }
            if !terminal(row.state) {
                return Some((Some(*id), format!("{id} while it was {}", row.state)));
            }
            if let Some(f) = row.finished_at.filter(|f| *f > cutoff) {
                return Some((
                    Some(*id),
                    format!(
                        "{id}, which finished at {f}, after the cutoff {cutoff} (now − R): \
                         before its retention ran out"
                    ),
                ));
            }
        }
        None
    }

    /// Deletes the rows a prune deleted (see the module docs).
    pub(super) fn forget(&mut self, ids: &[JobId]) {
        for id in ids {
            self.maybe_pruned.remove(id);
            self.pruned.insert(*id);
            let Some(row) = self.rows.remove(id) else {
                continue;
            };
            let Some(k) = &row.key else { continue };
            if self.keys.get(k) == Some(id) {
                self.keys.remove(k);
            }
            if let Some((name, t)) = parse_fire_key(k) {
                raise(&mut self.schedules.pruned_through, name, t);
            }
        }
    }

    /// A prune of unknown outcome at `now` with retention `R`: the jobs it
    /// could have deleted become "maybe pruned".
    pub(super) fn maybe_prune(&mut self, retention: Millis, now: StoreTime) {
        let cutoff = before(now, retention);
        let could: Vec<JobId> = self
            .rows
            .values()
            .filter(|r| terminal(r.state) || !r.known)
            .filter(|r| r.finished_at.is_none_or(|f| f <= cutoff))
            .map(|r| r.job)
            .collect();
        for id in could {
            if let Some((name, t)) = self.rows[&id].key.as_deref().and_then(parse_fire_key) {
                raise(&mut self.schedules.maybe_through, name, t);
            }
            self.maybe_pruned.insert(id);
        }
    }

    /// Whether `op` names a job a prune of unknown outcome may have
    /// deleted (directly, or through its idempotency or fire key).
    pub(super) fn names_maybe_pruned(&self, op: &Op) -> bool {
        if self.maybe_pruned.is_empty() {
            return false;
        }
        let key = match op {
            Op::Renew { job, .. }
            | Op::Release { job, .. }
            | Op::Cancel { job }
            | Op::Get { job }
            | Op::RetryDead { job } => return self.maybe_pruned.contains(job),
            Op::Enqueue { key: Some(k), .. } => k.clone(),
            Op::Fire { name, plan_time } => fire_key(name, *plan_time),
            _ => return false,
        };
        self.keys
            .get(&key)
            .is_some_and(|j| self.maybe_pruned.contains(j))
    }

    /// Settles a "maybe pruned" job from an answer that tells it is gone:
    /// no row for a get, `UnknownJob` for a renew, release or cancel.
    pub(super) fn settle(&mut self, op: &Op, reply: &Reply) {
        let job = match op {
            Op::Renew { job, .. }
            | Op::Release { job, .. }
            | Op::Cancel { job }
            | Op::Get { job } => *job,
            _ => return,
        };
        let gone = match reply {
            Reply::Row(None) => true,
            Reply::Rejected(text) => variant_of(text) == "UnknownJob",
            _ => false,
        };
        if gone && self.maybe_pruned.contains(&job) {
            self.forget(&[job]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::answers::model::{Row, Rules, RunAt};
    use leasehold_core::JobState;
    use leasehold_model::config::SimConfig;
    use leasehold_model::history::Blob;

    const R: Millis = MIN_RETENTION;

    /// A model with job 1 succeeded at `finished` (key "k") and job 2
    /// running.
    fn model(finished: i64) -> Model {
        let mut m = Model::new(Rules::of(&SimConfig::default()));
        let mut done = Row::made(
            "q",
            Blob::of(b"p"),
            0,
            RunAt::At(StoreTime(0)),
            1,
            Some("k".into()),
        );
        done.job = JobId(1);
        done.state = JobState::Succeeded;
        done.finished_at = Some(StoreTime(finished));
        m.put(done);
        let mut run = Row::made("q", Blob::of(b"p"), 0, RunAt::At(StoreTime(0)), 1, None);
        run.job = JobId(2);
        run.state = JobState::Running;
        m.put(run);
        m
    }

    #[test]
    fn a_bad_request_is_refused() {
        let m = model(0);
        let now = StoreTime(1_000_000);
        for (r, limit, audit) in [
            (Millis(R.0 - 1), 1, R),
            (R, 0, R),
            (R, MAX_PRUNE_LIMIT + 1, R),
            (Millis(R.0 * 2), 1, R),
        ] {
            assert_eq!(m.prune(r, limit, audit, now).want, Want::Rejected("Input"));
        }
        assert_eq!(
            m.prune(R, 5, R, now).want,
            Want::Prunable {
                cutoff: StoreTime(1_000_000 - R.0 as i64),
                limit: 5
            }
        );
    }

    #[test]
    fn only_terminal_jobs_past_the_cutoff_within_the_limit_may_go() {
        let m = model(100);
        let cutoff = StoreTime(100);
        assert_eq!(m.prune_problem(&[JobId(1)], cutoff, 1), None);
        assert!(m.prune_problem(&[JobId(1)], StoreTime(99), 1).is_some());
        assert!(m.prune_problem(&[JobId(2)], cutoff, 1).is_some());
        assert!(m.prune_problem(&[JobId(1), JobId(1)], cutoff, 2).is_some());
        assert!(m.prune_problem(&[JobId(1), JobId(2)], cutoff, 1).is_some());
        assert!(m.prune_problem(&[JobId(7)], cutoff, 1).is_some());
    }

    #[test]
    fn a_pruned_job_is_unknown_and_its_key_free() {
        let mut m = model(0);
        m.forget(&[JobId(1)]);
        assert!(!m.rows.contains_key(&JobId(1)) && m.pruned.contains(&JobId(1)));
        assert!(!m.keys.contains_key("k"));
        assert!(m.prune_problem(&[JobId(1)], StoreTime(0), 1).is_some());
    }

    #[test]
    fn an_unknown_prune_suspends_only_the_jobs_it_could_have_deleted() {
        let mut m = model(0);
        m.maybe_prune(R, StoreTime(R.0 as i64));
        assert_eq!(m.maybe_pruned, BTreeSet::from([JobId(1)]));
        let get = |j| Op::Get { job: JobId(j) };
        assert!(m.names_maybe_pruned(&get(1)));
        assert!(!m.names_maybe_pruned(&get(2)));
        m.settle(&get(1), &Reply::Row(None));
        assert!(m.pruned.contains(&JobId(1)) && m.maybe_pruned.is_empty());
    }
}
