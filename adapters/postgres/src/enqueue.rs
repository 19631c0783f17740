//! Enqueue, one job or many: one transaction, one read of the idempotency
//! keys, one sequence read for the new ids, one insert statement.

use crate::clock::STMT_CLOCK;
use crate::write_batch::Batch;
use crate::{error, PgStore};
use leasehold_core::transition::{self, EnqueuePlan};
use leasehold_core::{JobId, JobRecord, NewJob, StoreError, StoreTime};
use leasehold_sql::job_columns::{decode_job, COLUMNS};
use sqlx::postgres::PgConnection;
use sqlx::Row;
use std::collections::BTreeMap;

impl PgStore {
    /// Enqueues many jobs in one transaction; answers their ids in order
    /// (the existing id for a repeated idempotency key). All or nothing: a
    /// bad spec rejects the whole batch.
    pub async fn enqueue_many(&self, jobs: &[NewJob]) -> Result<Vec<JobId>, StoreError> {
        for job in jobs {
            transition::validate_new_job(job, &self.policy)?;
        }
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        in_tx!(self, |conn| self.enqueue_in(conn, jobs).await)
    }

    pub(crate) async fn enqueue_in(
        &self,
        conn: &mut PgConnection,
        jobs: &[NewJob],
    ) -> Result<Vec<JobId>, StoreError> {
        let keys: Vec<String> = jobs
            .iter()
            .filter_map(|j| j.idempotency_key.clone())
            .collect();
        let mut existing: BTreeMap<String, JobRecord> = BTreeMap::new();
        if !keys.is_empty() {
            let sql =
                format!("SELECT {COLUMNS} FROM leasehold_jobs WHERE idempotency_key = ANY($1)");
            crate::tx::gate("select keys").await;
            let rows = sqlx::query(&sql)
                .bind(&keys)
                .fetch_all(&mut *conn)
                .await
                .map_err(error::map)?;
            for r in &rows {
                let rec = decode_job(r)?;
                if let Some(k) = rec.idempotency_key.clone() {
                    existing.insert(k, rec);
                }
            }
        }
        // Ids only for specs that will insert, so answers for existing keys
        // and rejected specs burn no ids.
        let mut seen = std::collections::BTreeSet::new();
        let fresh = jobs
            .iter()
            .filter(|j| match &j.idempotency_key {
                None => true,
                Some(k) => !existing.contains_key(k) && seen.insert(k.clone()),
            })
            .count();
        let sql = format!(
            "SELECT {STMT_CLOCK}, ARRAY(SELECT nextval('leasehold_job_ids') FROM generate_series(1, $2))"
        );
        crate::tx::gate("next ids").await;
        let row = sqlx::query(&sql)
            .bind(self.clock_param())
            .bind(fresh as i64)
            .fetch_one(&mut *conn)
            .await
            .map_err(error::map)?;
        let now = StoreTime(row.try_get(0).map_err(error::map)?);
        let ids: Vec<i64> = row.try_get(1).map_err(error::map)?;
        let mut ids = ids.into_iter();
        let mut batch = Batch::default();
        let mut answers = Vec::with_capacity(jobs.len());
        for job in jobs {
            let prior = job.idempotency_key.as_ref().and_then(|k| existing.get(k));
            let id = match prior {
                Some(rec) => rec.id,
                None => JobId(
                    ids.next()
                        .and_then(|i| u64::try_from(i).ok())
                        .ok_or_else(|| StoreError::Corrupt("job id sequence".into()))?,
                ),
            };
            match transition::enqueue(job, id, prior, &self.policy, now)? {
                EnqueuePlan::Existing(id) => answers.push(id),
                EnqueuePlan::Insert(a) => {
                    self.push(&mut batch, &a, 0)?;
                    if let Some(k) = &a.record.idempotency_key {
                        existing.insert(k.clone(), a.record.clone());
                    }
                    answers.push(id);
                }
            }
        }
        if batch.len() > 0 {
            self.write_new(conn, batch).await?;
        }
        Ok(answers)
    }
}
