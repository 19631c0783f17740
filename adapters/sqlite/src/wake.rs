//! In-process wake-ups: [`leasehold_core::Store::work_available`] for
//! workers that share this process's [`SqliteStore`].
//!
//! SQLite has no notification channel between processes, so the store
//! announces on a [`WorkSignal`] after each committed write that may have
//! made work claimable (see [`leasehold_core::wakes_workers`]):
//! - an enqueue without delay announces its queue;
//! - a fire announces the queue of the job it made;
//! - a `Returned` release, and any committed release or reclaim in a queue
//!   with a parallelism limit (a slot opened), announce the job's queue;
//! - a sweep announces the queue of every job it made `pending`.
//!
//! The queue of a released or swept job is read after the commit (one
//! indexed read, only in those cases). Workers in **other processes** on
//! the same file are not woken: they find the work at their next poll
//! (`WorkerConfig::poll_interval`). Announcing after the commit (never
//! before) means a woken worker's claim always sees the write.

use crate::SqliteStore;
use leasehold_core::{
    CrashReport, JobId, JobState, NewJob, Outcome, Release, ReleaseRequest, StoreError,
};
use sqlx::Row;

impl SqliteStore {
    /// After `jobs` were committed: announce each queue with a job due now.
    pub(crate) fn announce_enqueued(&self, jobs: &[NewJob]) {
        let mut queues: Vec<&str> = jobs
            .iter()
            .filter(|j| j.delay.0 == 0)
            .map(|j| j.queue.as_str())
            .collect();
        queues.sort_unstable();
        queues.dedup();
        for q in queues {
            self.shared.wake.announce(q);
        }
    }

    /// After a release answered `answer` was committed.
    pub(crate) async fn announce_released(
        &self,
        req: &ReleaseRequest,
        answer: &Result<Release, StoreError>,
    ) {
        if answer != &Ok(Release::Committed) {
            return;
        }
        let returned = matches!(req.outcome, Outcome::Returned);
        if returned || !self.shared.policy.parallelism.is_empty() {
            self.announce_job(req.job, returned).await;
        }
    }

    /// After a sweep committed `reports`.
    pub(crate) async fn announce_swept(&self, reports: &[CrashReport]) {
        let limited = !self.shared.policy.parallelism.is_empty();
        for r in reports {
            let to_pending = r.to == JobState::Pending;
            if to_pending || limited {
                self.announce_job(r.job, to_pending).await;
            }
        }
    }

    /// After a fire committed `job`.
    pub(crate) async fn announce_fired(&self, job: JobId) {
        self.announce_job(job, true).await;
    }

    /// After an operator's retry made the dead `job` pending again.
    pub(crate) async fn announce_retried(&self, job: JobId) {
        self.announce_job(job, true).await;
    }

    /// Announces the queue of `job` when `always`, or when the queue has a
    /// parallelism limit. A failed read only loses the wake (the poll
    /// remains), so it is logged, not returned.
    async fn announce_job(&self, job: JobId, always: bool) {
        let Ok(id) = i64::try_from(job.0) else { return };
        let Ok(mut conn) = self.reader().await else {
            tracing::debug!(%job, "no wake-up: no read connection");
            return;
        };
        let row = sqlx::query("SELECT queue FROM leasehold_jobs WHERE id = ?")
            .bind(id)
            .fetch_optional(&mut *conn)
            .await;
        let row = conn.finish(row);
        match row {
            Ok(Some(r)) => {
                let queue: String = r.try_get(0).unwrap_or_default();
                if always || self.shared.policy.parallelism_of(&queue).is_some() {
                    self.shared.wake.announce(&queue);
                }
            }
            Ok(None) => {}
            Err(e) => tracing::debug!(error = %e, %job, "no wake-up: queue read failed"),
        }
    }
}
