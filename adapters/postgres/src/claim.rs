//! Claims, one request or many: per queue, one `FOR UPDATE SKIP LOCKED`
//! scan up to the requests' sum (within the queue's parallelism limit,
//! counted under an advisory lock), handed out in request order, and one
//! write.

use crate::claim_probe::due_pending;
use crate::clock::STMT_CLOCK;
use crate::load::{fetch_scan, ScanGate};
use crate::write_batch::Batch;
use crate::{error, read, PgStore};
use leasehold_core::transition;
use leasehold_core::{ClaimRequest, JobRecord, Lease, StoreError, StoreTime};
use leasehold_sql::job_columns::COLUMNS;
use leasehold_sql::race_variants;
use sqlx::postgres::PgConnection;
use std::collections::BTreeMap;

/// First key of the advisory locks that serialize claims of a limited queue.
const ADVISORY_NAMESPACE: i32 = 0x6c68_6c64; // "lhld"

impl PgStore {
    /// Each claim's bad input answered on its own (an empty grant for the
    /// valid ones, to be filled), and the indices of the valid claims.
    pub(crate) fn validate_claims(
        &self,
        reqs: &[ClaimRequest],
    ) -> (Vec<Result<Vec<Lease>, StoreError>>, Vec<usize>) {
        let answers: Vec<Result<Vec<Lease>, StoreError>> = reqs
            .iter()
            .map(|r| {
                transition::validate_claim(&r.queue, r.lease, r.max, &self.policy)
                    .map(|()| Vec::new())
                    .map_err(StoreError::Input)
            })
            .collect();
        let valid = (0..reqs.len()).filter(|&i| answers[i].is_ok()).collect();
        (answers, valid)
    }

    /// Answers many claim requests (any holders, any queues) in one
    /// transaction and one write: per queue, one `SKIP LOCKED` scan takes
    /// up to the sum of the requests' `max` (within the queue's parallelism
    /// limit), and the rows are handed out in request order. Each request
    /// gets its own leases, or its own input error.
    pub async fn claim_many(
        &self,
        reqs: &[ClaimRequest],
    ) -> Result<Vec<Result<Vec<Lease>, StoreError>>, StoreError> {
        let (mut answers, valid) = self.validate_claims(reqs);
        if valid.is_empty()
            || self
                .nothing_to_claim(valid.iter().map(|&i| reqs[i].queue.as_str()))
                .await
        {
            return Ok(answers);
        }
        let granted = in_tx!(self, |conn| self.claim_in(conn, reqs, &valid).await)?;
        for (i, leases) in valid.into_iter().zip(granted) {
            answers[i] = Ok(leases);
        }
        Ok(answers)
    }

    /// Claims for the requests `valid` (indices into `reqs`, all validated);
    /// answers their leases in the same order.
    pub(crate) async fn claim_in(
        &self,
        conn: &mut PgConnection,
        reqs: &[ClaimRequest],
        valid: &[usize],
    ) -> Result<Vec<Vec<Lease>>, StoreError> {
        let mut batch = Batch::default();
        let granted = self.claim_rows(conn, reqs, valid, &mut batch).await?;
        self.write(conn, batch).await?;
        Ok(granted)
    }

    /// The claims of [`Self::claim_in`], with their rows pushed on `batch`
    /// for the caller to write.
    pub(crate) async fn claim_rows(
        &self,
        conn: &mut PgConnection,
        reqs: &[ClaimRequest],
        valid: &[usize],
        batch: &mut Batch,
    ) -> Result<Vec<Vec<Lease>>, StoreError> {
        // Queues in name order, so concurrent batches take their advisory
        // locks in one order and never deadlock.
        let mut by_queue: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (slot, &i) in valid.iter().enumerate() {
            by_queue
                .entry(reqs[i].queue.as_str())
                .or_default()
                .push(slot);
        }
        let mut granted: Vec<Vec<Lease>> = vec![Vec::new(); valid.len()];
        for (queue, slots) in by_queue {
            let limited = self.policy.parallelism_of(queue).is_some();
            let running = if limited {
                // Not under the catalogue's `limit-counted-without-lock`.
                if race_variants::claim_locks_limited_queue(self.variant) {
                    crate::tx::gate("advisory lock").await;
                    sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
                        .bind(ADVISORY_NAMESPACE)
                        .bind(queue)
                        .execute(&mut *conn)
                        .await
                        .map_err(error::map)?;
                }
                // The count and the scan after it are one decision: no
                // gate between them, so no commit of another transaction
                // falls between what the count saw and what the scan saw
                // (the simulator places the claim at this step).
                crate::tx::claims("count running").await;
                read::JOBS.running(&mut *conn, queue).await?
            } else {
                0
            };
            let wanted = slots
                .iter()
                .fold(0u32, |acc, &slot| acc.saturating_add(reqs[valid[slot]].max));
            let cap = transition::claim_capacity(queue, wanted, running, &self.policy);
            if cap == 0 {
                continue;
            }
            let sql = format!(
                "SELECT {COLUMNS}, {STMT_CLOCK} FROM leasehold_jobs WHERE {} \
                 ORDER BY priority DESC, run_at, id LIMIT $3 FOR UPDATE SKIP LOCKED",
                due_pending()
            );
            let sql = race_variants::claim_scan(self.variant, sql);
            let q = sqlx::query(&sql)
                .bind(self.clock_param())
                .bind(queue)
                .bind(i64::from(cap));
            let gate = if limited {
                ScanGate::None
            } else {
                ScanGate::Claim
            };
            let locked = fetch_scan(conn, q, gate).await?;
            let Some(now) = locked.now else {
                // No row: the queue has nothing due.
                self.idle.claimed(queue, false);
                continue;
            };
            let slot_reqs: Vec<&ClaimRequest> = slots.iter().map(|&i| &reqs[valid[i]]).collect();
            batch.by_id |= race_variants::claim_writes_by_id(self.variant);
            let handed = self.hand_out(&locked.rows, &slot_reqs, now, batch)?;
            self.idle
                .claimed(queue, handed.iter().any(|leases| !leases.is_empty()));
            for (&slot, leases) in slots.iter().zip(handed) {
                granted[slot] = leases;
            }
        }
        Ok(granted)
    }

    /// Hands `rows` (candidates in claim order) to `reqs` (claims of one
    /// queue) in request order, each up to its own `max`, as consecutive
    /// claims would take them; the claimed rows go on `batch`.
    pub(crate) fn hand_out(
        &self,
        rows: &[JobRecord],
        reqs: &[&ClaimRequest],
        now: StoreTime,
        batch: &mut Batch,
    ) -> Result<Vec<Vec<Lease>>, StoreError> {
        let mut granted = vec![Vec::new(); reqs.len()];
        let mut rows = rows.iter();
        for (req, leases) in reqs.iter().zip(&mut granted) {
            while leases.len() < req.max as usize {
                let Some(record) = rows.next() else { break };
                match transition::claim(record, &req.worker, req.lease, now) {
                    Ok((applied, lease)) => {
                        self.push(batch, &applied, record.version)?;
                        leases.push(lease);
                    }
                    Err(refusal) => {
                        tracing::debug!(job = %record.id, ?refusal, "claim candidate refused by the core")
                    }
                }
            }
        }
        Ok(granted)
    }
}
