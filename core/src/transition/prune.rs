//! prune(R, limit) (spec §3 "Retention"): guard "`R` at least a declared
//! minimum; `limit` bounded"; effect "deletes up to `limit` jobs whose state
//! is terminal and that finished at or before `now − R` (store clock), with
//! their audit events"; answer the pruned job ids.
//!
//! A terminal row never changes again (see [`super`]), so its `updated_at`
//! is the store time it finished: the age this module judges.
//!
//! Invariants (asserted on every plan [`prune`] returns):
//! - a `pending` or `running` job is never pruned;
//! - a job that finished less than `R` ago is never pruned, so a result
//!   stays readable, and an idempotency key keeps answering its job, for at
//!   least `R` after the job finished;
//! - at most `limit` jobs go in one call, and `limit ≤` [`MAX_PRUNE_LIMIT`];
//! - audit events have a retention of their own ([`PruneRequest::audit_retention`])
//!   that is never shorter than the jobs' `R`.
//!
//! Schedules (I12): a fired plan time's job holds the key
//! [`crate::schedule::job_key`], which is what makes a second fire of that
//! plan time answer the first job. Once that job is pruned the key is gone,
//! so the plan carries, per schedule, the latest plan time it prunes
//! ([`PrunePlan::plan_times`]); the store keeps the maximum it has seen per
//! schedule name, and [`refuse_pruned_plan_time`] refuses a fire of a plan
//! time at or before it, with no job row left to answer.

use crate::error::InputError;
use crate::ids::JobId;
use crate::job::JobRecord;
use crate::schedule::{parse_job_key, FireRequest};
use crate::time::{Millis, StoreTime};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The shortest retention a prune accepts. Below it, a worker's repeated
/// release of a committed result (a retry after an unknown outcome) or a
/// retried enqueue under its key could find the job gone, and a reader
/// could miss a result it was just told was committed.
pub const MIN_RETENTION: Millis = Millis::from_secs(60);

/// The most jobs one prune deletes: one call is one transaction, and a
/// bounded one keeps its locks short.
pub const MAX_PRUNE_LIMIT: u32 = 10_000;

/// Audit events a prune call may delete per job it may delete: the audit
/// side's bound is `limit ×` this ([`PruneRequest::audit_budget`]), on
/// every store alike, so that the log keeps up with the jobs.
///
/// A job writes about three events (enqueue, claim, release), more with
/// retries or cancels; a call bounded at `limit` events (the bound before
/// issue 44's long runs) deleted a third of what the jobs it pruned had
/// written, and the log grew without end. Ten leaves room for retries.
/// With the `Pruner` making at least one call per wake-up and one more per
/// full batch of jobs, a wake-up may delete ten events per job it may
/// prune: the audit log keeps up while jobs average at most ten events.
pub const AUDIT_EVENTS_PER_JOB: u32 = 10;

const _: () = assert!(MIN_RETENTION.0 > 0);
const _: () = assert!(MAX_PRUNE_LIMIT >= 1);
// The largest audit budget fits a `u32` (and an SQL `bigint`).
const _: () = assert!(MAX_PRUNE_LIMIT.checked_mul(AUDIT_EVENTS_PER_JOB).is_some());

/// Delete up to `limit` jobs that finished at least `retention` ago, and
/// audit events older than `audit_retention`.
///
/// Build it with [`PruneRequest::new`] (and
/// [`PruneRequest::with_audit_retention`]), which refuse a bad value; every
/// store checks it again with [`PruneRequest::validate`], since a request
/// can also arrive deserialized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PruneRequest {
    /// `R`: a terminal job is prunable once it finished at or before
    /// `now − R` (store clock). At least [`MIN_RETENTION`].
    pub retention: Millis,
    /// At most this many jobs per call; 1 to [`MAX_PRUNE_LIMIT`]. The audit
    /// side has a bound derived from it, the same on every store:
    /// [`PruneRequest::audit_budget`] events.
    pub limit: u32,
    /// An audit event goes once it was written at or before
    /// `now − audit_retention`. Never shorter than `retention`.
    pub audit_retention: Millis,
}

impl PruneRequest {
    /// Prune jobs finished at least `retention` ago, at most `limit` per
    /// call, and audit events of the same age.
    pub fn new(retention: Millis, limit: u32) -> Result<Self, InputError> {
        let req = PruneRequest {
            retention,
            limit,
            audit_retention: retention,
        };
        req.validate()?;
        Ok(req)
    }

    /// Keeps audit events for `audit` instead (at least the jobs' retention).
    pub fn with_audit_retention(mut self, audit: Millis) -> Result<Self, InputError> {
        self.audit_retention = audit;
        self.validate()?;
        Ok(self)
    }

    /// The guard: `R ≥` [`MIN_RETENTION`], `1 ≤ limit ≤` [`MAX_PRUNE_LIMIT`],
    /// `audit_retention ≥ R`.
    pub fn validate(&self) -> Result<(), InputError> {
        if self.retention < MIN_RETENTION {
            return Err(InputError::BadRetention {
                what: "retention",
                value: self.retention,
                min: MIN_RETENTION,
            });
        }
        if self.audit_retention < self.retention {
            return Err(InputError::BadRetention {
                what: "audit_retention",
                value: self.audit_retention,
                min: self.retention,
            });
        }
        if self.limit == 0 || self.limit > MAX_PRUNE_LIMIT {
            return Err(InputError::BadPruneLimit {
                value: self.limit,
                cap: MAX_PRUNE_LIMIT,
            });
        }
        Ok(())
    }

    /// The most audit events one call reads and deletes:
    /// `limit ×` [`AUDIT_EVENTS_PER_JOB`], at most 100,000 (for
    /// [`MAX_PRUNE_LIMIT`]). Saturates on a request that was not validated.
    pub fn audit_budget(&self) -> u32 {
        self.limit.saturating_mul(AUDIT_EVENTS_PER_JOB)
    }

    /// The latest finish time a prunable job may have at `now`: `now − R`.
    pub fn cutoff(&self, now: StoreTime) -> StoreTime {
        before(now, self.retention)
    }

    /// The latest write time a prunable audit event may have at `now`.
    pub fn audit_cutoff(&self, now: StoreTime) -> StoreTime {
        before(now, self.audit_retention)
    }
}

fn before(now: StoreTime, d: Millis) -> StoreTime {
    StoreTime(now.0.saturating_sub(i64::try_from(d.0).unwrap_or(i64::MAX)))
}

/// Whether `record` may be pruned at `now`: terminal, and finished at or
/// before `now − R`.
pub fn prunable(record: &JobRecord, req: &PruneRequest, now: StoreTime) -> bool {
    record.state.is_terminal() && record.updated_at <= req.cutoff(now)
}

/// What one prune deletes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PrunePlan {
    /// The jobs to delete, in the order offered: the answer.
    pub jobs: Vec<JobId>,
    /// Per schedule name, the latest plan time among the pruned jobs: the
    /// store raises its per-schedule mark to it in the same atomic step.
    pub plan_times: BTreeMap<String, StoreTime>,
}

/// Plans a prune at `now` over `candidates` (rows as loaded, oldest finish
/// first as the store's scan gives them): the guard is re-checked on each,
/// so a row that is not prunable is skipped whatever the scan offered, and
/// at most `req.limit` are taken.
pub fn prune(
    candidates: &[JobRecord],
    req: &PruneRequest,
    now: StoreTime,
) -> Result<PrunePlan, InputError> {
    req.validate()?;
    let mut plan = PrunePlan::default();
    for r in candidates
        .iter()
        .filter(|r| prunable(r, req, now))
        .take(req.limit as usize)
    {
        plan.jobs.push(r.id);
        if let Some((name, t)) = r.idempotency_key.as_deref().and_then(parse_job_key) {
            let mark = plan.plan_times.entry(name.to_string()).or_insert(t);
            *mark = (*mark).max(t);
        }
    }
    debug_assert!(plan.jobs.len() <= req.limit as usize, "at most limit jobs");
    for id in &plan.jobs {
        let r = candidates.iter().find(|r| r.id == *id);
        debug_assert!(
            r.is_some_and(|r| r.state.is_terminal()),
            "only terminal jobs are pruned"
        );
        debug_assert!(
            r.is_some_and(|r| r.updated_at <= req.cutoff(now)),
            "no job is pruned before R"
        );
    }
    Ok(plan)
}

/// The guard a store applies to a fire whose plan time has no job row:
/// `pruned_through` is the latest pruned plan time the store keeps for the
/// schedule. A plan time at or before it fired once and its job is gone;
/// firing it again would make a second job for it (I12), so it is refused
/// with [`InputError::PlanTimePruned`] and nothing changes.
pub fn refuse_pruned_plan_time(
    req: &FireRequest,
    pruned_through: Option<StoreTime>,
) -> Result<(), InputError> {
    match pruned_through {
        Some(through) if req.plan_time <= through => Err(InputError::PlanTimePruned {
            schedule: req.name.clone(),
            plan_time: req.plan_time,
            through,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobState;
    use crate::schedule::job_key;
    use crate::transition::fixtures::{pending, running};

    const R: Millis = MIN_RETENTION;

    fn finished(id: u64, state: JobState, at: i64) -> JobRecord {
        let mut r = pending();
        r.id = JobId(id);
        r.state = state;
        r.updated_at = StoreTime(at);
        if state == JobState::Succeeded {
            r.result = Some(b"ok".to_vec());
        }
        r
    }

    fn req(limit: u32) -> PruneRequest {
        PruneRequest::new(R, limit).unwrap()
    }

    #[test]
    fn only_terminal_jobs_finished_at_or_before_now_minus_r_are_pruned() {
        let now = StoreTime(1_000_000);
        let edge = now.0 - R.0 as i64;
        let rows = vec![
            finished(1, JobState::Succeeded, edge),
            finished(2, JobState::Dead, edge - 5),
            finished(3, JobState::Cancelled, edge + 1),
            finished(4, JobState::Pending, 0),
            running(1, 1, 0),
        ];
        let plan = prune(&rows, &req(10), now).unwrap();
        assert_eq!(plan.jobs, vec![JobId(1), JobId(2)]);
        assert!(plan.plan_times.is_empty());
    }

    #[test]
    fn at_most_limit_jobs_go_in_the_order_offered() {
        let rows: Vec<_> = (1..=5)
            .map(|i| finished(i, JobState::Succeeded, 0))
            .collect();
        let plan = prune(&rows, &req(2), StoreTime(R.0 as i64)).unwrap();
        assert_eq!(plan.jobs, vec![JobId(1), JobId(2)]);
    }

    #[test]
    fn the_latest_pruned_plan_time_of_each_schedule_is_kept() {
        let mut rows = Vec::new();
        for (id, name, t) in [
            (1, "a", 1000),
            (2, "a", 3000),
            (3, "b", 2000),
            (4, "a", 2000),
        ] {
            let mut r = finished(id, JobState::Succeeded, 0);
            r.idempotency_key = Some(job_key(name, StoreTime(t)));
            rows.push(r);
        }
        let mut plain = finished(5, JobState::Dead, 0);
        plain.idempotency_key = Some("user-key".into());
        rows.push(plain);
        let plan = prune(&rows, &req(10), StoreTime(R.0 as i64)).unwrap();
        assert_eq!(plan.jobs.len(), 5);
        let want: BTreeMap<String, StoreTime> = [
            ("a".to_string(), StoreTime(3000)),
            ("b".to_string(), StoreTime(2000)),
        ]
        .into();
        assert_eq!(plan.plan_times, want);
    }

    #[test]
    fn bad_retention_and_limits_are_refused_naming_the_value() {
        let short = Millis(R.0 - 1);
        assert_eq!(
            PruneRequest::new(short, 1),
            Err(InputError::BadRetention {
                what: "retention",
                value: short,
                min: R
            })
        );
        for limit in [0, MAX_PRUNE_LIMIT + 1] {
            assert_eq!(
                PruneRequest::new(R, limit),
                Err(InputError::BadPruneLimit {
                    value: limit,
                    cap: MAX_PRUNE_LIMIT
                })
            );
        }
        assert!(PruneRequest::new(R, MAX_PRUNE_LIMIT).is_ok());
        let long = Millis::from_secs(3600);
        let e = PruneRequest::new(long, 1)
            .unwrap()
            .with_audit_retention(R)
            .unwrap_err();
        assert_eq!(
            e,
            InputError::BadRetention {
                what: "audit_retention",
                value: R,
                min: long
            }
        );
        // A request that arrives built by hand is judged the same way.
        let forged = PruneRequest {
            retention: Millis::ZERO,
            limit: 1,
            audit_retention: Millis::ZERO,
        };
        assert!(prune(&[], &forged, StoreTime(0)).is_err());
    }

    /// Ten audit events per job of the limit: what three events a job need
    /// with room for retries, at most 100,000 for the largest limit.
    #[test]
    fn the_audit_budget_is_ten_events_per_job() {
        assert_eq!(req(1).audit_budget(), 10);
        assert_eq!(req(1_000).audit_budget(), 10_000);
        assert_eq!(req(MAX_PRUNE_LIMIT).audit_budget(), 100_000);
    }

    #[test]
    fn a_fire_at_or_before_the_pruned_mark_is_refused_and_after_it_allowed() {
        let fire = |t| FireRequest {
            name: "tick".into(),
            plan_time: StoreTime(t),
        };
        assert_eq!(refuse_pruned_plan_time(&fire(2000), None), Ok(()));
        let mark = Some(StoreTime(2000));
        for t in [1000, 2000] {
            assert_eq!(
                refuse_pruned_plan_time(&fire(t), mark),
                Err(InputError::PlanTimePruned {
                    schedule: "tick".into(),
                    plan_time: StoreTime(t),
                    through: StoreTime(2000)
                })
            );
        }
        assert_eq!(refuse_pruned_plan_time(&fire(3000), mark), Ok(()));
    }
}
