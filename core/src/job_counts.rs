//! What [`Store::count_jobs`](crate::Store::count_jobs) answers: per
//! queue, the jobs in each state, the oldest pending job's enqueue time
//! and the nearest running lease's expiry (store time), for an operator's
//! `leasehold status`.
//!
//! Why a store method and not a scan: a store counts with one query
//! (`GROUP BY queue, state`) whatever its size, where listing every row
//! through `list` read at most a million rows and said it stopped there.
//! The default still lists, page by page, for a store without a count of
//! its own (`store::count_by_listing`).

use crate::job::{JobRecord, JobState};
use crate::time::StoreTime;
use serde::Serialize;
use std::collections::BTreeMap;

/// Jobs in each state: what `leasehold status` prints per queue (its
/// JSON's field names are these).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StateCounts {
    /// Jobs waiting (due or not).
    pub pending: u64,
    /// Jobs leased: the running leases.
    pub running: u64,
    /// Finished with a result.
    pub succeeded: u64,
    /// Attempts spent, or failed for good.
    pub dead: u64,
    /// Cancelled.
    pub cancelled: u64,
}

impl StateCounts {
    /// Adds `n` jobs in `state`.
    pub fn add(&mut self, state: JobState, n: u64) {
        let count = match state {
            JobState::Pending => &mut self.pending,
            JobState::Running => &mut self.running,
            JobState::Succeeded => &mut self.succeeded,
            JobState::Dead => &mut self.dead,
            JobState::Cancelled => &mut self.cancelled,
        };
        *count += n;
    }
}

/// One queue's jobs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueCounts {
    /// The queue.
    pub queue: String,
    /// Its jobs in each state.
    pub by_state: StateCounts,
    /// Enqueue time of the oldest pending job.
    pub oldest_pending: Option<StoreTime>,
    /// Expiry of the running lease that expires first.
    pub nearest_expiry: Option<StoreTime>,
}

impl QueueCounts {
    /// Adds `n` jobs in `state`, the earliest enqueued at `created` and
    /// the earliest lease expiry `expires` among them (a group of rows, as
    /// a `GROUP BY` gives them, or one row).
    pub fn add(
        &mut self,
        state: JobState,
        n: u64,
        created: Option<StoreTime>,
        expires: Option<StoreTime>,
    ) {
        let min = |a: Option<StoreTime>, b: Option<StoreTime>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.by_state.add(state, n);
        match state {
            JobState::Pending => self.oldest_pending = min(self.oldest_pending, created),
            JobState::Running => self.nearest_expiry = min(self.nearest_expiry, expires),
            JobState::Succeeded | JobState::Dead | JobState::Cancelled => {}
        }
    }

    /// Adds one job.
    pub fn add_job(&mut self, r: &JobRecord) {
        self.add(r.state, 1, Some(r.created_at), r.expires_at);
    }
}

/// Every queue's counts, in queue name order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobCounts {
    /// Per queue, in name order; a queue without jobs is absent.
    pub queues: Vec<QueueCounts>,
    /// False only when a count by listing stopped at
    /// `LIST_ALL_MAX_ROWS` rows: the figures are then of those rows.
    pub complete: bool,
}

/// Sums up queues, one entry per name.
#[derive(Default)]
pub struct CountsBuilder(BTreeMap<String, QueueCounts>);

impl CountsBuilder {
    /// The entry of `queue`.
    pub fn queue(&mut self, queue: &str) -> &mut QueueCounts {
        self.0
            .entry(queue.to_owned())
            .or_insert_with(|| QueueCounts {
                queue: queue.to_owned(),
                ..QueueCounts::default()
            })
    }

    /// The counts, in name order.
    pub fn finish(self, complete: bool) -> JobCounts {
        JobCounts {
            queues: self.0.into_values().collect(),
            complete,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Groups add up, and the earliest times win whatever the order.
    #[test]
    fn groups_add_up_and_the_earliest_times_win() {
        let mut b = CountsBuilder::default();
        let t = |ms| Some(StoreTime(ms));
        b.queue("q").add(JobState::Pending, 2, t(50), None);
        b.queue("q").add(JobState::Pending, 1, t(40), None);
        b.queue("q").add(JobState::Running, 3, t(10), t(900));
        b.queue("q").add(JobState::Running, 1, t(20), t(700));
        b.queue("a").add(JobState::Dead, 4, t(1), None);
        b.queue("q").add(JobState::Cancelled, 1, t(1), None);
        b.queue("q").add(JobState::Succeeded, 5, t(1), None);
        let c = b.finish(true);
        assert_eq!(c.queues.len(), 2);
        assert_eq!(
            (c.queues[0].queue.as_str(), c.queues[0].by_state.dead),
            ("a", 4)
        );
        let q = &c.queues[1];
        assert_eq!(
            q.by_state,
            StateCounts {
                pending: 3,
                running: 4,
                succeeded: 5,
                dead: 0,
                cancelled: 1
            }
        );
        assert_eq!(
            q.oldest_pending,
            t(40),
            "a running job's enqueue time is not pending's"
        );
        assert_eq!(q.nearest_expiry, t(700));
    }
}
