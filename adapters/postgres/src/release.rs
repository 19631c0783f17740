//! Releases, one or many: the rows read without locks (the write checks
//! each version), the core applies every release in request order, one
//! write; the queues whose workers a release wakes are notified.

use crate::load::Locked;
use crate::write_batch::Batch;
use crate::{listener, PgStore};
use leasehold_core::{InputError, JobId, JobRecord, ReleaseRequest, StoreError};
use leasehold_sql::release_row::{apply_release, ReleaseAnswers};
use sqlx::postgres::PgConnection;
use std::collections::{BTreeMap, BTreeSet};

impl PgStore {
    /// Releases many leases in one transaction and one write. Each request
    /// gets its own answer (or its own input error); requests for the same
    /// job apply in order. The whole batch fails only when the store does
    /// (`Unavailable`: unknown outcome for every request).
    pub async fn release_many(
        &self,
        reqs: &[ReleaseRequest],
    ) -> Result<ReleaseAnswers, StoreError> {
        if reqs.is_empty() {
            return Ok(Vec::new());
        }
        in_tx!(self, |conn| self.release_in(conn, reqs).await)
    }

    pub(crate) async fn release_in(
        &self,
        conn: &mut PgConnection,
        reqs: &[ReleaseRequest],
    ) -> Result<ReleaseAnswers, StoreError> {
        let mut batch = Batch::default();
        let answers = self.release_rows(conn, reqs, &mut batch).await?;
        self.write(conn, batch).await?;
        Ok(answers)
    }

    /// The releases of [`Self::release_in`], with their rows and events
    /// pushed on `batch` for the caller to write.
    pub(crate) async fn release_rows(
        &self,
        conn: &mut PgConnection,
        reqs: &[ReleaseRequest],
        batch: &mut Batch,
    ) -> Result<ReleaseAnswers, StoreError> {
        if reqs.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<JobId> = reqs.iter().map(|r| r.job).collect();
        let loaded = self.load_rows(conn, &ids).await?;
        let (answers, woken) = self.apply_releases(reqs, loaded, batch)?;
        let woken: BTreeSet<&str> = woken.iter().map(String::as_str).collect();
        listener::notify_queues(conn, &self.channel, &woken).await?;
        Ok(answers)
    }

    /// Applies `reqs` in order through the core to the rows `loaded` (a job
    /// without a row is unknown), pushing each changed row (once, at its
    /// last state) and every event on `batch`. Answers each request, and
    /// the queues whose workers the changes wake.
    pub(crate) fn apply_releases(
        &self,
        reqs: &[ReleaseRequest],
        loaded: Locked,
        batch: &mut Batch,
    ) -> Result<(ReleaseAnswers, BTreeSet<String>), StoreError> {
        // Current row per job, and the version it was loaded at.
        let mut rows: BTreeMap<JobId, (u64, JobRecord)> = loaded
            .rows
            .into_iter()
            .map(|r| (r.id, (r.version, r)))
            .collect();
        let mut events = Vec::new();
        let mut answers = Vec::with_capacity(reqs.len());
        for req in reqs {
            let (Some((_, current)), Some(now)) = (rows.get_mut(&req.job), loaded.now) else {
                answers.push(Err(StoreError::Input(InputError::UnknownJob(req.job))));
                continue;
            };
            answers.push(apply_release(current, req, &self.policy, now, |e| {
                events.push(e)
            }));
        }
        let mut woken = BTreeSet::new();
        for (loaded_version, record) in rows.values() {
            if record.version != *loaded_version {
                batch.push_row(record, *loaded_version)?;
                // A release always ends a running lease.
                if loaded.now.is_some_and(|now| {
                    leasehold_core::wakes_workers(
                        Some(leasehold_core::JobState::Running),
                        record,
                        now,
                        &self.policy,
                    )
                }) {
                    woken.insert(record.queue.clone());
                }
            }
        }
        if self.audit {
            for e in &events {
                batch.push_event(e)?;
            }
        }
        Ok((answers, woken))
    }
}
