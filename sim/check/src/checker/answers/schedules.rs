//! The reference model's schedules (spec §3 "Schedules"): what
//! `put_schedule`, `remove_schedule`, `fire` and `list_schedules` must
//! answer, written from the spec and not from the core.
//!
//! - A put of a valid spec answers `Done`; it replaces the schedule of the
//!   same name (version + 1, `updated_at` = the store's now) unless the spec
//!   is identical, which changes nothing.
//! - A remove answers whether the name existed; the jobs stay.
//! - A fire of a plan time that already has a job (its key, spec §3:
//!   `(name, plan_time)`) answers that job; otherwise the schedule must
//!   exist, the plan time must not be after the store's now and must be a
//!   plan time of the rule, and the answer is a new pending job with the
//!   schedule's queue, payload and budget, priority 0, and `run_at` within
//!   `[now, now + jitter]`.
//!
//! The model judges interval rules completely (a plan time is a multiple
//! of the interval). It does not parse cron: whether a cron expression or
//! time zone is valid, and whether an instant is one of its plan times, is
//! not judged (the store's answer is taken), while every other field and
//! every answer about existing keys still is.

use super::model::{queue_ok, Model, Plan, Row, RunAt, Want};
use super::schedule_book::{fire_key, name_ok, SchedChange, MAX_CATCH_UP, MAX_JITTER_MS};
use leasehold_core::{CatchUp, Millis, Rule, StoreTime, DEFAULT_MAX_ATTEMPTS_CAP};
use leasehold_model::history::{Blob, Op, Reply, ScheduleView};

impl Model {
    /// The plan of a schedule operation.
    pub(super) fn plan_schedule(&self, op: &Op, now: StoreTime) -> Plan {
        match op {
            Op::PutSchedule {
                name,
                queue,
                payload,
                rule,
                catch_up,
                jitter,
                max_attempts,
            } => self.put_schedule(
                name,
                queue,
                payload,
                rule,
                *catch_up,
                *jitter,
                *max_attempts,
                now,
            ),
            Op::RemoveSchedule { name } => {
                if self.schedules.blind {
                    return Plan::want(Want::Unjudged);
                }
                let exists = self.schedules.by_name.contains_key(name);
                let mut p = Plan::want(Want::Exact(Reply::Removed(exists)));
                if exists {
                    p.schedule = Some(SchedChange::Remove(name.clone()));
                }
                p
            }
            Op::Fire { name, plan_time } => self.fire(name, *plan_time, now),
            Op::ListSchedules { after, limit } => {
                if self.schedules.blind {
                    return Plan::want(Want::Unjudged);
                }
                let views = self
                    .schedules
                    .by_name
                    .iter()
                    .filter(|(n, _)| after.as_ref().is_none_or(|a| *n > a))
                    .take(*limit as usize)
                    .map(|(_, v)| v.clone())
                    .collect();
                Plan::want(Want::Exact(Reply::Schedules(views)))
            }
            _ => Plan::want(Want::Unjudged),
        }
    }

    #[allow(clippy::too_many_arguments)] // the fields of one schedule spec
    fn put_schedule(
        &self,
        name: &str,
        queue: &str,
        payload: &Blob,
        rule: &Rule,
        catch_up: CatchUp,
        jitter: Millis,
        max_attempts: u32,
        now: StoreTime,
    ) -> Plan {
        let bad = !name_ok(name)
            || !queue_ok(queue)
            || payload.len > self.rules.max_payload
            || max_attempts == 0
            || max_attempts > DEFAULT_MAX_ATTEMPTS_CAP
            || matches!(catch_up, CatchUp::Each { max } if max == 0 || max > MAX_CATCH_UP)
            || jitter.0 > MAX_JITTER_MS
            || matches!(rule, Rule::Every { interval } if interval.0 == 0);
        if bad {
            return Plan::want(Want::Rejected("Input")).note("the schedule is invalid");
        }
        let old = self.schedules.by_name.get(name);
        let same = old.is_some_and(|o| {
            o.queue == queue
                && o.payload == *payload
                && o.rule == *rule
                && o.catch_up == catch_up
                && o.jitter == jitter
                && o.max_attempts == max_attempts
        });
        let view = match old {
            Some(o) if same => o.clone(),
            _ => ScheduleView {
                name: name.to_string(),
                queue: queue.to_string(),
                payload: *payload,
                rule: rule.clone(),
                catch_up,
                jitter,
                max_attempts,
                version: old.map_or(1, |o| o.version + 1),
                created_at: old.map_or(now, |o| o.created_at),
                updated_at: now,
            },
        };
        // Cron validity is not the model's to judge: a `Done` is taken.
        let want = if self.schedules.blind || matches!(rule, Rule::Cron { .. }) {
            Want::Unjudged
        } else {
            Want::Exact(Reply::Done)
        };
        let mut p = Plan::want(want);
        p.schedule = Some(SchedChange::Put(view));
        p
    }

    fn fire(&self, name: &str, plan_time: StoreTime, now: StoreTime) -> Plan {
        if !name_ok(name) {
            return Plan::want(Want::Rejected("Input")).note("the schedule name is invalid");
        }
        if self.schedules.blind {
            return Plan::want(Want::Unjudged);
        }
        let key = fire_key(name, plan_time);
        // A plan time with no job at or before the schedule's pruned mark
        // fired once and its job is gone (spec §3 "Retention"): refused,
        // whether or not the schedule still exists.
        if !self.keys.contains_key(&key) {
            let at_or_before = |m: Option<&StoreTime>| m.is_some_and(|m| plan_time <= *m);
            if at_or_before(self.schedules.pruned_through.get(name)) {
                return Plan::want(Want::Rejected("PlanTimePruned")).note(format!(
                    "{plan_time} of {name:?} is at or before its pruned mark"
                ));
            }
            if at_or_before(self.schedules.maybe_through.get(name)) {
                return Plan::want(Want::Unjudged);
            }
        }
        let Some(s) = self.schedules.by_name.get(name) else {
            return Plan::want(Want::Rejected("UnknownSchedule"));
        };
        if let Some(id) = self.keys.get(&key) {
            return Plan::want(Want::Exact(Reply::Job(*id)))
                .note(format!("{plan_time} of {name:?} already made {id}"));
        }
        if plan_time > now {
            return Plan::want(Want::Rejected("NotAPlanTime"))
                .note(format!("{plan_time} is after the store's now {now}"));
        }
        match &s.rule {
            Rule::Every { interval } => {
                let i = i64::try_from(interval.0).unwrap_or(i64::MAX);
                if plan_time.0.rem_euclid(i) != 0 {
                    return Plan::want(Want::Rejected("NotAPlanTime"))
                        .note(format!("{plan_time} is not a multiple of {interval}"));
                }
            }
            Rule::Cron { .. } => return Plan::want(Want::Unjudged),
        }
        let hi = StoreTime(now.0.saturating_add(i64::try_from(s.jitter.0).unwrap_or(0)));
        let run_at = if hi == now {
            RunAt::At(now)
        } else {
            RunAt::Between {
                lo: now,
                hi,
                attempt: 0,
            }
        };
        // A fire's job has priority 0 (spec §3).
        let row = Row::made(&s.queue, s.payload, 0, run_at, s.max_attempts, Some(key));
        Plan {
            new_row: Some(row),
            ..Plan::want(Want::NewJob)
        }
    }

    /// Applies a schedule change.
    pub(super) fn apply_schedule(&mut self, c: &SchedChange) {
        match c {
            SchedChange::Put(v) => {
                self.schedules.by_name.insert(v.name.clone(), v.clone());
            }
            SchedChange::Remove(n) => {
                self.schedules.by_name.remove(n);
            }
        }
    }

    /// Takes a complete listing as the truth about the schedules.
    pub(super) fn adopt_schedules(&mut self, views: &[ScheduleView]) {
        self.schedules.by_name = views.iter().map(|v| (v.name.clone(), v.clone())).collect();
        self.schedules.blind = false;
    }
}
