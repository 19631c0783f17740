//! Store-side bugs from the catalogue, for the simulator only.
//!
//! Each function replaces one correct operation when its variant is in force.
//! They bypass the core's guards on purpose; nothing else calls them.

use crate::{MemoryState, MemoryStore};
use leasehold_core::transition::{self, Applied, FirePlan, ReleasePlan, RenewPlan};
use leasehold_core::variants::Variant;
use leasehold_core::{
    CancelOutcome, ClaimRequest, CrashReport, Event, EventKind, FireRequest, JobId, JobRecord,
    JobState, Lease, Millis, Release, ReleaseRequest, RenewRequest, Renewal, StoreError, StoreTime,
};

/// How long the second step of a result write lags behind the commit.
pub const RESULT_SECOND_STEP_DELAY: Millis = Millis(3_000);

/// Per-store scratch state of the buggy variants. Lives in the store, not in
/// the durable state: a store crash loses it, as it would lose a process's
/// memory.
#[derive(Debug, Default)]
pub(crate) struct VariantScratch {
    /// Claim candidates read by the previous claim (stale reads).
    pub stale_claim: Vec<JobRecord>,
    /// Expired ids found by the previous sweep scan.
    pub stale_sweep: Vec<JobId>,
    /// Results waiting for their second write step: (due, job, token, bytes).
    pub deferred_results: Vec<(StoreTime, JobId, Vec<u8>)>,
}

fn event_of(old: &JobRecord, new: &JobRecord, kind: EventKind) -> Event {
    Event {
        job: new.id,
        token: new.token,
        worker: old.holder.clone(),
        from: Some(old.state),
        to: new.state,
        at: new.updated_at,
        version: new.version,
        kind,
    }
}

impl MemoryStore {
    /// `fire-without-key`: the plan time's job is inserted without looking
    /// up the key it already holds (no unique constraint either), so every
    /// fire of one plan time makes another job. `None` under other variants.
    pub(crate) fn buggy_fire(
        &self,
        st: &mut MemoryState,
        req: &FireRequest,
        now: StoreTime,
    ) -> Option<Result<JobId, StoreError>> {
        if self.variant != Some(Variant::FireWithoutKey) {
            return None;
        }
        let id = JobId(st.next_id + 1);
        let schedule = st.schedules.get(&req.name);
        Some(match transition::fire(schedule, req, id, None, now) {
            Err(e) => Err(e.into()),
            Ok(FirePlan::Existing(id)) => Ok(id),
            Ok(FirePlan::Insert(applied)) => {
                st.next_id += 1;
                st.put(applied, None, usize::MAX);
                Ok(id)
            }
        })
    }

    pub(crate) fn flush_deferred(&self, st: &mut MemoryState, now: StoreTime) {
        let mut scratch = self.scratch();
        let due: Vec<_> = scratch
            .deferred_results
            .iter()
            .filter(|d| d.0 <= now)
            .cloned()
            .collect();
        scratch.deferred_results.retain(|d| d.0 > now);
        for (_, id, bytes) in due {
            if let Some(row) = st.rows.get_mut(&id) {
                if row.state == JobState::Succeeded {
                    row.result = Some(bytes);
                }
            }
        }
    }

    pub(crate) fn buggy_release(
        &self,
        st: &mut MemoryState,
        req: &ReleaseRequest,
        row: &JobRecord,
        now: StoreTime,
    ) -> Option<Result<Release, StoreError>> {
        match self.variant? {
            Variant::ReleaseWithoutToken if row.state == JobState::Running => {
                // Matches by job id only: any holder's release acts on the current lease.
                let plan = transition::release(row, row.token, &req.outcome, self.policy(), now);
                Some(self.apply_release(st, row, plan, now))
            }
            Variant::ResultSecondStep => {
                if let leasehold_core::Outcome::Succeeded(bytes) = &req.outcome {
                    let plan = transition::release(
                        row,
                        req.token,
                        &leasehold_core::Outcome::Succeeded(Vec::new()),
                        self.policy(),
                        now,
                    );
                    if let Ok(ReleasePlan::Apply(_)) = &plan {
                        self.scratch().deferred_results.push((
                            now.plus(RESULT_SECOND_STEP_DELAY),
                            row.id,
                            bytes.clone(),
                        ));
                    }
                    return Some(self.apply_release(st, row, plan, now));
                }
                None
            }
            _ => None,
        }
    }

    pub(crate) fn buggy_renew(
        &self,
        st: &mut MemoryState,
        req: &RenewRequest,
        row: &JobRecord,
        now: StoreTime,
    ) -> Option<Result<Renewal, StoreError>> {
        if self.variant != Some(Variant::RestartReusesIdentity) {
            return None;
        }
        // Liveness by identity: a heartbeat from a holder refreshes every
        // lease held under that name, including a dead incarnation's.
        let answer = match transition::renew(row, req.token, req.lease, self.policy(), now) {
            Ok(RenewPlan::Renewed(a, ans)) => {
                st.put(a, Some(row.version), self.history_cap);
                ans
            }
            Ok(RenewPlan::Lost) => Renewal::Lost,
            Err(e) => return Some(Err(e.into())),
        };
        if let (Renewal::Renewed { .. }, Some(holder)) = (answer, row.holder.clone()) {
            let others: Vec<JobRecord> = st
                .rows
                .values()
                .filter(|r| {
                    r.state == JobState::Running
                        && r.holder.as_ref() == Some(&holder)
                        && r.id != row.id
                })
                .cloned()
                .collect();
            for other in others {
                if let Ok(RenewPlan::Renewed(a, _)) =
                    transition::renew(&other, other.token, req.lease, self.policy(), now)
                {
                    st.put(a, Some(other.version), self.history_cap);
                }
            }
        }
        Some(Ok(answer))
    }

    pub(crate) fn buggy_claim(
        &self,
        st: &mut MemoryState,
        req: &ClaimRequest,
        now: StoreTime,
    ) -> Result<Vec<Lease>, StoreError> {
        // Read-then-write without a compare-and-set: the rows chosen by the
        // previous claim's read are written as if still current.
        let fresh: Vec<JobRecord> = st
            .index
            .pending_of(&req.queue)
            .filter(|k| k.2 <= now)
            .take(req.max as usize)
            .filter_map(|k| st.rows.get(&k.3).cloned())
            .collect();
        let stale = std::mem::replace(&mut self.scratch().stale_claim, fresh.clone());
        let pick: Vec<JobRecord> = if stale.is_empty() { fresh } else { stale };
        let mut leases = Vec::new();
        for old in pick.into_iter().take(req.max as usize) {
            if let Ok((mut a, lease)) = transition::claim(&old, &req.worker, req.lease, now) {
                let current = st.rows.get(&old.id).map(|r| r.version).unwrap_or(0);
                a.record.version = current + 1;
                a.event.version = current + 1;
                st.put(a, Some(current), self.history_cap);
                leases.push(lease);
            }
        }
        Ok(leases)
    }

    pub(crate) fn buggy_sweep(
        &self,
        st: &mut MemoryState,
        limit: u32,
        now: StoreTime,
    ) -> Vec<CrashReport> {
        // Reclaims what an earlier scan found, without re-checking expiry.
        let scan: Vec<JobId> = st.index.expired(now).take(limit as usize).collect();
        let stale = std::mem::replace(&mut self.scratch().stale_sweep, scan);
        let mut reports = Vec::new();
        for id in stale {
            let Some(row) = st.rows.get(&id).cloned() else {
                continue;
            };
            if row.state != JobState::Running {
                continue;
            }
            let mut forced = row.clone();
            forced.expires_at = Some(now.min(row.expires_at.unwrap_or(now)));
            if let Ok((mut a, mut report)) = transition::sweep(&forced, now) {
                report.expired_at = row.expires_at.unwrap_or(now);
                if let EventKind::Swept { expired_at, .. } = &mut a.event.kind {
                    *expired_at = report.expired_at;
                }
                st.put(a, Some(row.version), self.history_cap);
                reports.push(report);
            }
        }
        reports
    }

    pub(crate) fn buggy_cancel(
        &self,
        st: &mut MemoryState,
        row: &JobRecord,
        now: StoreTime,
    ) -> Option<CancelOutcome> {
        if row.state != JobState::Succeeded {
            return None;
        }
        // A late cancel overwrites the success (and drops its result).
        let mut new = row.clone();
        new.state = JobState::Cancelled;
        new.result = None;
        new.version += 1;
        new.updated_at = now;
        let event = event_of(row, &new, EventKind::Cancelled);
        st.put_raw(Applied { record: new, event });
        Some(CancelOutcome::Cancelled)
    }
}
