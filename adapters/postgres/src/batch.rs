//! [`Store::batch`] on PostgreSQL: a worker's releases, then its claims,
//! in one transaction with one write.
//!
//! The releases' rows are read in one statement (without row locks: the
//! write checks each row's version), the core applies every release in
//! order, the claims scan each queue once with `SKIP LOCKED`, and one
//! `UPDATE … FROM UNNEST` writes every row with its audit events.
//!
//! When no release can make a job claimable (no `Returned`, no retryable
//! failure) and the claims name one queue without a parallelism limit, the
//! release read and the claim scan are one statement: one round trip less
//! per batch. The answers are the same: no release changes which jobs the
//! claims may take, and both use one store time read after the rows.
//!
//! [`Store::batch`]: leasehold_core::Store::batch

use crate::error;
use crate::row::{decode, to_i64, Batch, COLUMNS};
use crate::{listener, Locked, PgStore, LIVE_CLOCK, MAX_CONFLICT_RETRIES, STMT_CLOCK};
use leasehold_core::{
    BatchAnswer, BatchRequest, ClaimRequest, JobId, JobRecord, Lease, Outcome, Release, StoreError,
    StoreTime,
};
use sqlx::postgres::PgConnection;
use sqlx::Row;
use std::collections::BTreeSet;

/// Answers of a batch's releases and the leases of its valid claims.
type Answered = (Vec<Result<Release, StoreError>>, Vec<Vec<Lease>>);

impl PgStore {
    /// Answers `req` in one transaction and one write.
    pub(crate) async fn batch_in_one_tx(
        &self,
        req: BatchRequest,
    ) -> Result<BatchAnswer, StoreError> {
        let (mut claims, valid) = self.validate_claims(&req.claims);
        if req.releases.is_empty() && valid.is_empty() {
            return Ok(BatchAnswer {
                releases: Vec::new(),
                claims,
            });
        }
        let (releases, granted) = in_tx!(self, |conn| self.batch_in(conn, &req, &valid).await)?;
        for (i, leases) in valid.into_iter().zip(granted) {
            claims[i] = Ok(leases);
        }
        Ok(BatchAnswer { releases, claims })
    }

    async fn batch_in(
        &self,
        conn: &mut PgConnection,
        req: &BatchRequest,
        valid: &[usize],
    ) -> Result<Answered, StoreError> {
        if let Some(queue) = self.one_read_queue(req, valid) {
            return self.batch_one_read(conn, req, valid, queue).await;
        }
        let mut batch = Batch::default();
        let released = self.release_rows(conn, &req.releases, &mut batch).await?;
        let limited = valid
            .iter()
            .any(|&i| self.policy.parallelism_of(&req.claims[i].queue).is_some());
        if batch.requeues() || (limited && batch.len() > 0) {
            // A release made a job claimable again (returned, or retried
            // with no delay), or freed a slot a limited queue's claim
            // counts: write it before the claims scan, so the batch answers
            // exactly as its requests would have one after another.
            self.write(conn, std::mem::take(&mut batch)).await?;
        }
        let granted = if valid.is_empty() {
            Vec::new()
        } else {
            self.claim_rows(conn, &req.claims, valid, &mut batch)
                .await?
        };
        self.write(conn, batch).await?;
        Ok((released, granted))
    }

    /// The queue of the one-read path, when it answers exactly as the
    /// general one (see the module docs).
    fn one_read_queue<'r>(&self, req: &'r BatchRequest, valid: &[usize]) -> Option<&'r str> {
        let first = req.claims.get(*valid.first()?)?.queue.as_str();
        let one_queue = valid.iter().all(|&i| req.claims[i].queue == first);
        let requeues = req.releases.iter().any(|r| {
            matches!(
                r.outcome,
                Outcome::Returned
                    | Outcome::Failed {
                        retryable: true,
                        ..
                    }
            )
        });
        let limited = self.policy.parallelism_of(first).is_some();
        (!req.releases.is_empty() && one_queue && !requeues && !limited).then_some(first)
    }

    /// Reads the releases' rows and the claims' candidates in one
    /// statement, then applies and writes everything in one more.
    async fn batch_one_read(
        &self,
        conn: &mut PgConnection,
        req: &BatchRequest,
        valid: &[usize],
        queue: &str,
    ) -> Result<Answered, StoreError> {
        let ids: Vec<i64> = req
            .releases
            .iter()
            .filter_map(|r| to_i64(r.job.0).ok())
            .collect();
        let wanted = valid
            .iter()
            .fold(0u32, |acc, &i| acc.saturating_add(req.claims[i].max));
        // Column 20 tells a candidate from a release's row; column 21 is
        // the clock, read after the rows (and the candidates' locks).
        let sql = format!(
            "WITH r AS (SELECT {COLUMNS} FROM leasehold_jobs WHERE id = ANY($2)), \
             c AS (SELECT {COLUMNS} FROM leasehold_jobs \
                   WHERE queue = $3 AND state = 'pending' AND run_at <= {STMT_CLOCK} \
                   ORDER BY priority DESC, run_at, id LIMIT $4 FOR UPDATE SKIP LOCKED) \
             SELECT x.*, {LIVE_CLOCK} FROM \
             (SELECT r.*, false AS candidate FROM r UNION ALL SELECT c.*, true FROM c) x"
        );
        let rows = sqlx::query(&sql)
            .bind(self.clock_param())
            .bind(ids)
            .bind(queue)
            .bind(i64::from(wanted))
            .fetch_all(&mut *conn)
            .await
            .map_err(error::map)?;
        let mut loaded = Locked {
            rows: Vec::new(),
            now: None,
        };
        let mut candidates: Vec<JobRecord> = Vec::new();
        for r in &rows {
            let record = decode(r)?;
            let candidate: bool = r.try_get(20).map_err(error::map)?;
            let t: i64 = r.try_get(21).map_err(error::map)?;
            loaded.now = Some(loaded.now.map_or(StoreTime(t), |n| n.max(StoreTime(t))));
            if candidate {
                candidates.push(record);
            } else {
                loaded.rows.push(record);
            }
        }
        let now = loaded.now;
        let mut batch = Batch::default();
        let (released, woken) = self.apply_releases(&req.releases, loaded, &mut batch)?;
        let woken: BTreeSet<&str> = woken.iter().map(String::as_str).collect();
        listener::notify_queues(conn, &self.channel, &woken).await?;
        // Claim order; and never a row a release just changed (none can
        // be pending, but a row written twice would be a conflict).
        let changed: BTreeSet<JobId> = batch.ids().collect();
        candidates.retain(|c| !changed.contains(&c.id));
        candidates.sort_by(|a, b| (b.priority, a.run_at, a.id).cmp(&(a.priority, b.run_at, b.id)));
        let reqs: Vec<&ClaimRequest> = valid.iter().map(|&i| &req.claims[i]).collect();
        let granted = match now {
            Some(now) => self.hand_out(&candidates, &reqs, now, &mut batch)?,
            None => vec![Vec::new(); reqs.len()],
        };
        self.write(conn, batch).await?;
        Ok((released, granted))
    }
}
