//! Enqueue, one job or many: one write transaction; the new ids follow
//! the largest, taken under the write lock; this process's idle workers
//! are woken after the commit.

use crate::read::JOBS;
use crate::SqliteStore;
use leasehold_core::transition::{self, EnqueuePlan};
use leasehold_core::{JobId, NewJob, StoreError, StoreTime};
use leasehold_sql::job_sql::FindJob;
use sqlx::SqliteConnection;

impl SqliteStore {
    /// Enqueues many jobs in one transaction; answers their ids in order
    /// (the existing id for a repeated idempotency key). All or nothing: a
    /// bad spec rejects the whole batch.
    pub async fn enqueue_many(&self, jobs: &[NewJob]) -> Result<Vec<JobId>, StoreError> {
        let ids = self.enqueue_many_tx(jobs).await?;
        self.announce_enqueued(jobs);
        Ok(ids)
    }

    pub(crate) async fn enqueue_many_tx(&self, jobs: &[NewJob]) -> Result<Vec<JobId>, StoreError> {
        for job in jobs {
            transition::validate_new_job(job, &self.shared.policy)?;
        }
        in_write_tx!(self, |conn, now| {
            let mut ids = Vec::with_capacity(jobs.len());
            let mut failed = None;
            for job in jobs {
                match self.enqueue_in(conn, job, now).await {
                    Ok(id) => ids.push(id),
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            match failed {
                Some(e) => Err(e),
                None => Ok(ids),
            }
        })
    }

    pub(crate) async fn enqueue_in(
        &self,
        conn: &mut SqliteConnection,
        job: &NewJob,
        now: StoreTime,
    ) -> Result<JobId, StoreError> {
        let existing = match &job.idempotency_key {
            Some(key) => JOBS.find(&mut *conn, FindJob::Key(key)).await?,
            None => None,
        };
        // Ids are taken under the write lock above every row and every
        // pruned id, so the next one is unused and ids grow with enqueue
        // order.
        let id = crate::prune::next_id(conn).await?;
        match transition::enqueue(job, id, existing.as_ref(), &self.shared.policy, now)? {
            EnqueuePlan::Existing(id) => Ok(id),
            EnqueuePlan::Insert(applied) => {
                self.insert(conn, &applied).await?;
                Ok(id)
            }
        }
    }
}
