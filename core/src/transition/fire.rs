//! The schedule operations (spec §3 "Schedules"):
//! - put_schedule(spec): guard "valid rule, queue and bounds"; effect
//!   "stored (replaces the same name)";
//! - fire(name, plan_time): guard "schedule exists; plan_time ≤ now (store
//!   clock) and is a plan time of the rule"; effect "enqueue with the unique
//!   key (name, plan_time)"; answer the job id, the existing one if that
//!   plan time already fired.
//!
//! Invariants: a plan time has at most one job, because its job carries
//! [`job_key`] and adapters keep idempotency keys unique (and look the key
//! up before inserting); a repeated fire changes nothing. A put of an
//! identical spec changes nothing either, so a scheduler that re-puts its
//! schedules at every start does not move `updated_at` (and so never gives
//! up catching up plan times it missed while down).

use super::enqueue::insert_row;
use super::Applied;
use crate::error::InputError;
use crate::ids::JobId;
use crate::job::{JobRecord, NewJob};
use crate::policy::Policy;
use crate::schedule::{check_name, job_key, FireRequest, Schedule, ScheduleRecord};
use crate::time::StoreTime;

/// What a put does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PutPlan {
    /// Write this record (new, or a new version of the name).
    Write(ScheduleRecord),
    /// The same spec is stored already: nothing changes.
    Unchanged,
}

/// Puts `spec`, replacing `existing` (the record of the same name, if any).
pub fn put_schedule(
    spec: &Schedule,
    existing: Option<&ScheduleRecord>,
    policy: &Policy,
    now: StoreTime,
) -> Result<PutPlan, InputError> {
    spec.validate(policy)?;
    Ok(match existing {
        Some(old) if old.schedule == *spec => PutPlan::Unchanged,
        Some(old) => {
            debug_assert_eq!(old.schedule.name, spec.name);
            PutPlan::Write(ScheduleRecord {
                schedule: spec.clone(),
                version: old.version + 1,
                created_at: old.created_at,
                updated_at: now,
            })
        }
        None => PutPlan::Write(ScheduleRecord {
            schedule: spec.clone(),
            version: 1,
            created_at: now,
            updated_at: now,
        }),
    })
}

/// What a fire does.
// Returned once and consumed at once: boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FirePlan {
    /// Insert the plan time's job as this row.
    Insert(Applied),
    /// The plan time already has this job.
    Existing(JobId),
}

/// The key the adapter looks up before calling [`fire`]: the job of this
/// plan time, if it exists, holds it.
pub fn fire_key(req: &FireRequest) -> String {
    job_key(&req.name, req.plan_time)
}

/// Fires `req` as job `id` at store time `now`. `schedule` is the stored
/// schedule of that name; `existing` the job already holding
/// [`fire_key`]`(req)`, if any.
pub fn fire(
    schedule: Option<&ScheduleRecord>,
    req: &FireRequest,
    id: JobId,
    existing: Option<&JobRecord>,
    now: StoreTime,
) -> Result<FirePlan, InputError> {
    check_name(&req.name)?;
    let Some(rec) = schedule else {
        return Err(InputError::UnknownSchedule(req.name.clone()));
    };
    debug_assert_eq!(rec.schedule.name, req.name);
    let key = fire_key(req);
    if let Some(old) = existing {
        debug_assert_eq!(old.idempotency_key.as_deref(), Some(key.as_str()));
        // The plan time had its job: whichever scheduler fired first, and
        // whatever the schedule says now, this is the answer.
        return Ok(FirePlan::Existing(old.id));
    }
    let refuse = |reason| InputError::NotAPlanTime {
        schedule: req.name.clone(),
        plan_time: req.plan_time,
        reason,
    };
    if req.plan_time > now {
        return Err(refuse("it is after the store's now"));
    }
    let rule = rec.schedule.rule.compile()?;
    if !rule.is_plan_time(req.plan_time) {
        return Err(refuse("it is not a plan time of the rule"));
    }
    let s = &rec.schedule;
    let spec = NewJob {
        queue: s.queue.clone(),
        payload: s.payload.clone(),
        priority: 0,
        delay: s.jitter_of(req.plan_time),
        max_attempts: s.max_attempts,
        idempotency_key: Some(key),
    };
    Ok(FirePlan::Insert(insert_row(&spec, id, now)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobState;
    use crate::schedule::Rule;
    use crate::time::Millis;

    /// Plan time 2000 of `r` fired at store time 2100 as job 1, with no job
    /// under its key yet.
    fn first_fire(r: &ScheduleRecord) -> Applied {
        let FirePlan::Insert(a) =
            fire(Some(r), &req(2000), JobId(1), None, StoreTime(2100)).unwrap()
        else {
            panic!("insert")
        };
        a
    }

    fn rec() -> ScheduleRecord {
        let s = Schedule::new("tick", "q", "p", Rule::every(Millis(1000))).jitter(Millis(300));
        let PutPlan::Write(r) = put_schedule(&s, None, &Policy::default(), StoreTime(500)).unwrap()
        else {
            panic!("a new schedule is written")
        };
        r
    }

    fn req(t: i64) -> FireRequest {
        FireRequest {
            name: "tick".into(),
            plan_time: StoreTime(t),
        }
    }

    #[test]
    fn a_plan_time_becomes_a_pending_job_under_its_key() {
        let r = rec();
        let a = first_fire(&r);
        assert_eq!(a.record.state, JobState::Pending);
        assert_eq!(
            a.record.idempotency_key,
            Some(job_key("tick", StoreTime(2000)))
        );
        assert_eq!(a.record.payload, b"p");
        let delay = r.schedule.jitter_of(StoreTime(2000));
        assert_eq!(a.record.run_at, StoreTime(2100).plus(delay));
    }

    #[test]
    fn a_second_fire_answers_the_first_job() {
        let r = rec();
        let a = first_fire(&r);
        let again = fire(
            Some(&r),
            &req(2000),
            JobId(2),
            Some(&a.record),
            StoreTime(9000),
        )
        .unwrap();
        assert_eq!(again, FirePlan::Existing(JobId(1)));
    }

    #[test]
    fn guards_refuse_unknown_future_and_off_rule_plan_times() {
        let r = rec();
        assert_eq!(
            fire(None, &req(2000), JobId(1), None, StoreTime(3000)),
            Err(InputError::UnknownSchedule("tick".into()))
        );
        let e = fire(Some(&r), &req(4000), JobId(1), None, StoreTime(3000)).unwrap_err();
        assert!(e.to_string().contains("after the store's now"), "{e}");
        let e = fire(Some(&r), &req(2500), JobId(1), None, StoreTime(3000)).unwrap_err();
        assert!(e.to_string().contains("not a plan time"), "{e}");
        let mut bad = req(2000);
        bad.name = String::new();
        assert!(matches!(
            fire(Some(&r), &bad, JobId(1), None, StoreTime(3000)),
            Err(InputError::BadSchedule { field: "name", .. })
        ));
    }

    #[test]
    fn an_identical_put_changes_nothing_and_a_new_spec_bumps_the_version() {
        let r = rec();
        let p = Policy::default();
        assert_eq!(
            put_schedule(&r.schedule, Some(&r), &p, StoreTime(9000)).unwrap(),
            PutPlan::Unchanged
        );
        let other = r.schedule.clone().jitter(Millis(0));
        let PutPlan::Write(n) = put_schedule(&other, Some(&r), &p, StoreTime(9000)).unwrap() else {
            panic!("write")
        };
        assert_eq!(
            (n.version, n.created_at, n.updated_at),
            (2, StoreTime(500), StoreTime(9000))
        );
    }
}
