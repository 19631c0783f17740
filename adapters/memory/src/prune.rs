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
        let candidates: Vec<JobRecord> = st
            .index
            .finished_by(req.cutoff(now))
            .take(req.limit as usize)
            .filter_map(|id| st.rows.get(&id).cloned())
            .collect();
        let plan = transition::prune(&candidates, &req, now)?;
        for id in &plan.jobs {
            st.delete(*id);
        }
        for (name, t) in plan.plan_times {
            let mark = st.pruned_plan_times.entry(name).or_insert(t);
            *mark = (*mark).max(t);
        }
        st.prune_events(req.audit_cutoff(now), req.limit as usize);
        Ok(plan.jobs)
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

    /// Drops the oldest history events written at or before `cutoff`, at
    /// most `limit`, stopping at the first younger one (events are kept in
    /// commit order).
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
