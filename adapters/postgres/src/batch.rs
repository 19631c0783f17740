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
//! A batch of claims alone that would take nothing writes nothing
//! (`claim_probe.rs`).
//!
//! [`Store::batch`]: leasehold_core::Store::batch

use crate::clock::{LIVE_CLOCK, STMT_CLOCK};
use crate::error;
use crate::load::Locked;
use crate::write_batch::Batch;
use crate::{listener, PgStore};
use leasehold_core::{
    BatchAnswer, BatchRequest, ClaimRequest, JobId, JobRecord, Lease, Outcome, Policy, Release,
    StoreError, StoreTime,
};
use leasehold_sql::job_columns::{decode_job, to_i64, COLUMNS};
use leasehold_sql::race_variants;
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
        if req.releases.is_empty()
            && (valid.is_empty()
                || self
                    .nothing_to_claim(valid.iter().map(|&i| req.claims[i].queue.as_str()))
                    .await)
        {
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
        if let Some(queue) = one_read_queue(&self.policy, req, valid) {
            return self.batch_one_read(conn, req, valid, queue).await;
        }
        let mut batch = Batch::default();
        let released = self.release_rows(conn, &req.releases, &mut batch).await?;
        let limited = valid
            .iter()
            .any(|&i| self.policy.parallelism_of(&req.claims[i].queue).is_some());
        // (Under the catalogue's `claim-reads-without-row-locks` the claims'
        // rows are written by id alone: the releases' rows go first, still
        // over their versions.)
        if batch.requeues()
            || (limited && batch.len() > 0)
            || race_variants::claim_writes_by_id(self.variant)
        {
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
        let sql = race_variants::claim_scan(self.variant, sql);
        if req.releases.is_empty() {
            crate::tx::claims("batch scan").await;
        } else {
            // Its releases may make rows claimable at its commit.
            crate::tx::decides("batch select").await;
        }
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
            let record = decode_job(r)?;
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
        if race_variants::claim_writes_by_id(self.variant) {
            // The variant writes its claimed rows by id alone: the
            // releases' rows first, still over their versions.
            self.write(conn, std::mem::take(&mut batch)).await?;
            batch.by_id = true;
        }
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

/// The queue of the one-read path, when it answers exactly as the general
/// one (see the module docs): the batch has releases, none of them can make
/// a job claimable, and its valid claims name one queue without a
/// parallelism limit.
fn one_read_queue<'r>(policy: &Policy, req: &'r BatchRequest, valid: &[usize]) -> Option<&'r str> {
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
    let limited = policy.parallelism_of(first).is_some();
    (!req.releases.is_empty() && one_queue && !requeues && !limited).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::one_read_queue;
    use leasehold_core::{
        BatchRequest, ClaimRequest, JobId, Millis, Outcome, Policy, ReleaseRequest, Token, WorkerId,
    };

    fn claim(queue: &str) -> ClaimRequest {
        ClaimRequest {
            worker: WorkerId::new("w"),
            queue: queue.into(),
            lease: Millis(1_000),
            max: 4,
        }
    }

    fn release(outcome: Outcome) -> ReleaseRequest {
        ReleaseRequest {
            job: JobId(1),
            token: Token(1),
            outcome,
        }
    }

    fn done() -> Outcome {
        Outcome::Succeeded(Vec::new())
    }

    fn batch(releases: Vec<ReleaseRequest>, claims: &[&str]) -> BatchRequest {
        BatchRequest {
            releases,
            claims: claims.iter().map(|q| claim(q)).collect(),
        }
    }

    /// The one-read path is taken exactly when it answers as the general
    /// one: releases that cannot requeue, claims of one unlimited queue.
    #[test]
    fn the_one_read_path_is_taken_only_where_it_answers_the_same() {
        let free = Policy::default();
        let all = [0, 1];
        let b = batch(vec![release(done())], &["q", "q"]);
        assert_eq!(one_read_queue(&free, &b, &all), Some("q"));
        let failed = Outcome::Failed {
            error: "x".into(),
            retryable: false,
        };
        let b = batch(vec![release(done()), release(failed)], &["q", "q"]);
        assert_eq!(
            one_read_queue(&free, &b, &all),
            Some("q"),
            "a final failure"
        );
        // Only the valid claims count: claim 1 (another queue) was refused.
        let b = batch(vec![release(done())], &["q", "other"]);
        assert_eq!(one_read_queue(&free, &b, &[0]), Some("q"));

        let b = batch(vec![release(done())], &["q", "other"]);
        assert_eq!(one_read_queue(&free, &b, &all), None, "two queues");
        let b = batch(vec![release(done()), release(Outcome::Returned)], &["q"]);
        assert_eq!(one_read_queue(&free, &b, &[0]), None, "a returned job");
        let retry = Outcome::Failed {
            error: "x".into(),
            retryable: true,
        };
        let b = batch(vec![release(retry)], &["q"]);
        assert_eq!(one_read_queue(&free, &b, &[0]), None, "a retry");
        let b = batch(Vec::new(), &["q"]);
        assert_eq!(one_read_queue(&free, &b, &[0]), None, "no release");
        let b = batch(vec![release(done())], &["q"]);
        assert_eq!(one_read_queue(&free, &b, &[]), None, "no valid claim");
        let limited = Policy::builder()
            .parallelism("q", 2)
            .build()
            .expect("policy");
        assert_eq!(one_read_queue(&limited, &b, &[0]), None, "a limited queue");
    }
}
