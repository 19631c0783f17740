//! Prune: the oldest finished rows past the retention, offered to the
//! core's guard, deleted with their keys, indexes and old history events
//! under the one lock (one atomic step).

use crate::{MemoryState, MemoryStore};
use leasehold_core::transition;
use leasehold_core::{JobId, JobRecord, PruneRequest, StoreError, StoreTime};

impl MemoryStore {
    pub(crate) fn do_prune(&self, req: PruneRequest) -> Result<Vec<JobId>, StoreError> {
        req.validate()?;
        let now = self.clock.now();
        let mut st = self.begin(now);
        let bug = Bug::of(self);
        // The instant ages are judged against: `now`, or `now + R` under
        // `prune-ignores-retention` (every finished job looks old enough).
        let judged_at = bug.judged_at(now, &req);
        let candidates: Vec<JobRecord> = st
            .index
            .finished_by(req.cutoff(judged_at))
            .take(req.limit as usize)
            .filter_map(|id| st.rows.get(&id).cloned())
            .collect();
        let plan = transition::prune(&candidates, &req, judged_at)?;
        for id in &plan.jobs {
            st.delete(*id);
        }
        if !bug.forgets_marks() {
            for (name, t) in plan.plan_times {
                let mark = st.pruned_plan_times.entry(name).or_insert(t);
                *mark = (*mark).max(t);
            }
        }
        if bug.frees_unpruned_keys() {
            st.free_finished_keys(now);
        }
        st.prune_events(req.audit_cutoff(now), req.audit_budget() as usize);
        Ok(plan.jobs)
    }
}

/// The catalogue's prune bugs in force on a store (simulator only; without
/// the `buggy-variants` feature there are none).
#[derive(Clone, Copy)]
struct Bug(#[cfg(feature = "buggy-variants")] Option<leasehold_core::variants::Variant>);

#[cfg(feature = "buggy-variants")]
impl Bug {
    fn of(s: &MemoryStore) -> Bug {
        Bug(s.bug())
    }

    fn is(self, v: leasehold_core::variants::Variant) -> bool {
        self.0 == Some(v)
    }

    fn judged_at(self, now: StoreTime, req: &PruneRequest) -> StoreTime {
        use leasehold_core::variants::Variant::PruneIgnoresRetention;
        if self.is(PruneIgnoresRetention) {
            let r = i64::try_from(req.retention.0).unwrap_or(i64::MAX);
            return StoreTime(now.0.saturating_add(r));
        }
        now
    }

    fn forgets_marks(self) -> bool {
        self.is(leasehold_core::variants::Variant::PruneForgetsPlanTimeMark)
    }

    fn frees_unpruned_keys(self) -> bool {
        self.is(leasehold_core::variants::Variant::PruneFreesUnprunedKeys)
    }
}

#[cfg(not(feature = "buggy-variants"))]
impl Bug {
    fn of(_: &MemoryStore) -> Bug {
        Bug()
    }

    fn judged_at(self, now: StoreTime, _: &PruneRequest) -> StoreTime {
        now
    }

    fn forgets_marks(self) -> bool {
        false
    }

    fn frees_unpruned_keys(self) -> bool {
        false
    }
}

impl MemoryState {
    /// Removes a row with its index entries and its idempotency key.
    fn delete(&mut self, id: JobId) {
        let Some(row) = self.rows.remove(&id) else {
            debug_assert!(false, "a planned prune names a row that is gone");
            return;
        };
        self.index.remove(&row);
        if let Some(k) = &row.idempotency_key {
            if self.keys.get(k) == Some(&id) {
                self.keys.remove(k);
            }
        }
    }

    /// `prune-frees-unpruned-keys`: forgets the idempotency key of every
    /// finished job, pruned or not (at most the prune cap of them).
    fn free_finished_keys(&mut self, now: StoreTime) {
        let finished: Vec<JobId> = self
            .index
            .finished_by(now)
            .take(leasehold_core::MAX_PRUNE_LIMIT as usize)
            .collect();
        for id in finished {
            let key = self.rows.get(&id).and_then(|r| r.idempotency_key.clone());
            if let Some(k) = key.filter(|k| self.keys.get(k) == Some(&id)) {
                self.keys.remove(&k);
            }
        }
    }

    /// Drops the oldest history events written at or before `cutoff`, at
    /// most `limit` (the request's audit budget, as on the SQL stores),
    /// stopping at the first younger one (events are kept in commit
    /// order).
    fn prune_events(&mut self, cutoff: StoreTime, limit: usize) {
        let n = self
            .events
            .iter()
            .take(limit)
            .take_while(|e| e.at <= cutoff)
            .count();
        self.events.drain(..n);
    }
}
