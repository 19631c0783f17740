//! Ordered indexes over the job rows, kept in step with every write.
//!
//! Invariant: a job is in `pending` iff its state is `pending`, in `running`
//! iff its state is `running`, in `finished` (by finish time, for prune)
//! iff its state is terminal, and `running_per_queue[q]` counts the running
//! jobs of queue `q`. [`Indexes::check`] verifies it in tests.

use leasehold_core::{JobId, JobRecord, JobState, StoreTime};
use std::collections::{BTreeMap, BTreeSet};

/// Pending order: queue, then priority (higher first), then `run_at`, then id.
pub(crate) type PendingKey = (String, i64, StoreTime, JobId);

#[derive(Debug, Default, Clone)]
pub(crate) struct Indexes {
    pub pending: BTreeSet<PendingKey>,
    pub running: BTreeSet<(StoreTime, JobId)>,
    pub running_per_queue: BTreeMap<String, u32>,
    /// Terminal jobs by the store time they finished (`updated_at`).
    pub finished: BTreeSet<(StoreTime, JobId)>,
}

fn pending_key(r: &JobRecord) -> PendingKey {
    (r.queue.clone(), -i64::from(r.priority), r.run_at, r.id)
}

impl Indexes {
    pub fn remove(&mut self, r: &JobRecord) {
        match r.state {
            JobState::Pending => {
                self.pending.remove(&pending_key(r));
            }
            JobState::Running => {
                let expires = r.expires_at.unwrap_or_default();
                self.running.remove(&(expires, r.id));
                if let Some(n) = self.running_per_queue.get_mut(&r.queue) {
                    *n -= 1;
                    if *n == 0 {
                        self.running_per_queue.remove(&r.queue);
                    }
                }
            }
            JobState::Succeeded | JobState::Dead | JobState::Cancelled => {
                self.finished.remove(&(r.updated_at, r.id));
            }
        }
    }

    pub fn insert(&mut self, r: &JobRecord) {
        match r.state {
            JobState::Pending => {
                self.pending.insert(pending_key(r));
            }
            JobState::Running => {
                self.running
                    .insert((r.expires_at.unwrap_or_default(), r.id));
                *self.running_per_queue.entry(r.queue.clone()).or_insert(0) += 1;
            }
            JobState::Succeeded | JobState::Dead | JobState::Cancelled => {
                self.finished.insert((r.updated_at, r.id));
            }
        }
    }

    /// Terminal jobs that finished at or before `cutoff`, oldest first.
    pub fn finished_by(&self, cutoff: StoreTime) -> impl Iterator<Item = JobId> + '_ {
        self.finished
            .range(..=(cutoff, JobId(u64::MAX)))
            .map(|(_, id)| *id)
    }

    /// Pending jobs of `queue` in claim order.
    pub fn pending_of<'a>(&'a self, queue: &'a str) -> impl Iterator<Item = &'a PendingKey> + 'a {
        let start = (queue.to_string(), i64::MIN, StoreTime(i64::MIN), JobId(0));
        self.pending
            .range(start..)
            .take_while(move |k| k.0 == queue)
    }

    /// Running jobs whose lease expired at or before `now`, oldest first.
    pub fn expired(&self, now: StoreTime) -> impl Iterator<Item = JobId> + '_ {
        self.running
            .range(..=(now, JobId(u64::MAX)))
            .map(|(_, id)| *id)
    }

    /// Recomputes the indexes from the rows and compares.
    #[cfg(test)]
    pub fn check(&self, rows: &BTreeMap<JobId, JobRecord>) -> Result<(), String> {
        let mut fresh = Indexes::default();
        for r in rows.values() {
            fresh.insert(r);
        }
        if fresh.pending != self.pending
            || fresh.running != self.running
            || fresh.running_per_queue != self.running_per_queue
            || fresh.finished != self.finished
        {
            return Err("indexes out of step with rows".into());
        }
        Ok(())
    }
}
