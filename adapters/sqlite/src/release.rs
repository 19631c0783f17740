//! Releases, one or many, as a set inside one write transaction: one
//! statement loads every row the releases name, the core applies them in
//! request order, one statement writes the rows (each guarded by the
//! version it was loaded at) and one their events. Each request is
//! answered exactly as if it had been sent alone (PROTOCOL.md §3,
//! Batches); this process's workers a release wakes are woken after the
//! commit.

use crate::set_sql::{load_rows, WriteSet};
use crate::SqliteStore;
use leasehold_core::{InputError, JobId, ReleaseRequest, StoreError, StoreTime};
use leasehold_sql::release_row::{apply_release, ReleaseAnswers};
use sqlx::SqliteConnection;
use std::collections::BTreeMap;

impl SqliteStore {
    /// Releases many leases in one transaction. Each request gets its own
    /// answer (or its own input error), as a single release would; requests
    /// for the same job apply in order. The whole batch fails only when the
    /// store does.
    pub async fn release_many(
        &self,
        reqs: &[ReleaseRequest],
    ) -> Result<ReleaseAnswers, StoreError> {
        let answers = self.release_many_tx(reqs).await?;
        for (req, answer) in reqs.iter().zip(&answers) {
            self.announce_released(req, answer).await;
        }
        Ok(answers)
    }

    pub(crate) async fn release_many_tx(
        &self,
        reqs: &[ReleaseRequest],
    ) -> Result<ReleaseAnswers, StoreError> {
        in_write_tx!(self, |conn, now| self.release_set(conn, reqs, now).await)
    }

    /// Applies `reqs` in order and writes their rows and events before
    /// returning, so that later requests of the transaction (claims, the
    /// running count of a limited queue) see them as they would one after
    /// another. Fails as a whole only when the store does.
    pub(crate) async fn release_set(
        &self,
        conn: &mut SqliteConnection,
        reqs: &[ReleaseRequest],
        now: StoreTime,
    ) -> Result<ReleaseAnswers, StoreError> {
        if reqs.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<JobId> = reqs.iter().map(|r| r.job).collect();
        // Current row per job (requests for one job apply in order), and
        // the version each was loaded at.
        let mut rows: BTreeMap<JobId, (u64, _)> = load_rows(conn, &ids)
            .await?
            .into_iter()
            .map(|(id, r)| (id, (r.version, r)))
            .collect();
        let mut set = WriteSet::default();
        let mut answers = Vec::with_capacity(reqs.len());
        for req in reqs {
            let Some((_, current)) = rows.get_mut(&req.job) else {
                answers.push(Err(StoreError::Input(InputError::UnknownJob(req.job))));
                continue;
            };
            answers.push(apply_release(current, req, &self.shared.policy, now, |e| {
                set.push_event(e)
            }));
        }
        for (loaded, record) in rows.into_values() {
            if record.version != loaded {
                set.push_row(record, loaded);
            }
        }
        set.flush(conn, self.shared.audit).await?;
        Ok(answers)
    }
}
