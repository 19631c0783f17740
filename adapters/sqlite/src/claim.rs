//! Claims, one request or many, inside one write transaction: claims of
//! one queue share one candidate scan (up to the sum of their `max`,
//! within the queue's parallelism limit, counted under the same write
//! lock), handed out in request order as consecutive claims would take
//! them; one statement writes the claimed rows and one their events.

use crate::row_set::{decode_rows, MAX_AGG_ROWS, ROW_JSON};
use crate::set_sql::WriteSet;
use crate::{error, read, SqliteStore};
use leasehold_core::transition;
use leasehold_core::{ClaimRequest, JobRecord, Lease, StoreError, StoreTime};
use sqlx::SqliteConnection;
use std::collections::BTreeMap;

/// Due and pending at a store time (parameter: the store time), written
/// once for the two filters below.
macro_rules! due_pending {
    () => {
        "state = 'pending' AND run_at <= ?"
    };
}

/// The jobs a claim of a queue may take at a store time: due and pending
/// (parameters: the queue, the store time). The claim scan's filter.
pub(crate) const DUE_PENDING: &str = concat!("queue = ? AND ", due_pending!());

/// [`DUE_PENDING`] for any of several queues (parameters: the queues as a
/// JSON array of strings, the store time): the claim probe's filter
/// (`claim_probe.rs`), one statement for every queue of a batch.
pub(crate) const DUE_PENDING_IN_ANY: &str = concat!(
    "queue IN (SELECT value FROM json_each(?)) AND ",
    due_pending!()
);

impl SqliteStore {
    /// Answers validated claims in request order and writes the claimed
    /// rows and their events. Claims of one queue share one candidate scan
    /// (up to the sum of their `max`, within the queue's parallelism
    /// limit); the candidates go to the requests in order, each up to its
    /// own `max`, as consecutive claims would take them.
    pub(crate) async fn claim_set(
        &self,
        conn: &mut SqliteConnection,
        reqs: &[&ClaimRequest],
        now: StoreTime,
    ) -> Result<Vec<Vec<Lease>>, StoreError> {
        let mut by_queue: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, r) in reqs.iter().enumerate() {
            by_queue.entry(r.queue.as_str()).or_default().push(i);
        }
        let mut granted: Vec<Vec<Lease>> = vec![Vec::new(); reqs.len()];
        let mut set = WriteSet::default();
        for (queue, slots) in by_queue {
            let running = self.running_in(conn, queue).await?;
            let wanted = slots
                .iter()
                .fold(0u32, |acc, &i| acc.saturating_add(reqs[i].max));
            let cap = transition::claim_capacity(queue, wanted, running, &self.shared.policy);
            if cap == 0 {
                continue;
            }
            let candidates = self.candidates(conn, queue, cap, now).await?;
            let mut candidates = candidates.into_iter();
            for &i in &slots {
                let req = reqs[i];
                while granted[i].len() < req.max as usize {
                    let Some(record) = candidates.next() else {
                        break;
                    };
                    match transition::claim(&record, &req.worker, req.lease, now) {
                        Ok((applied, lease)) => {
                            set.push_row(applied.record, record.version);
                            set.push_event(applied.event);
                            granted[i].push(lease);
                        }
                        Err(refusal) => {
                            tracing::debug!(job = %record.id, ?refusal, "claim candidate refused by the core")
                        }
                    }
                }
            }
            let took_any = slots.iter().any(|&i| !granted[i].is_empty());
            self.shared.idle.claimed(queue, took_any);
        }
        set.flush(conn, self.shared.audit).await?;
        Ok(granted)
    }

    /// Up to `cap` due pending jobs of `queue`, in claim order (priority,
    /// then `run_at`, then id), read in pages of at most [`MAX_AGG_ROWS`]
    /// aggregated rows. Nothing is written between pages (one write lock),
    /// so the pages are consecutive slices of one order.
    pub(crate) async fn candidates(
        &self,
        conn: &mut SqliteConnection,
        queue: &str,
        cap: u32,
        now: StoreTime,
    ) -> Result<Vec<JobRecord>, StoreError> {
        let sql = format!(
            "SELECT json_group_array({ROW_JSON}) FROM (SELECT * FROM leasehold_jobs \
             WHERE {DUE_PENDING} ORDER BY priority DESC, run_at, id LIMIT ? OFFSET ?)"
        );
        let cap = cap as usize;
        let mut out: Vec<JobRecord> = Vec::with_capacity(cap.min(MAX_AGG_ROWS));
        // Bounded: each page adds MAX_AGG_ROWS rows or ends the loop.
        while out.len() < cap {
            let page = (cap - out.len()).min(MAX_AGG_ROWS);
            let json: Option<String> = sqlx::query_scalar(&sql)
                .bind(queue)
                .bind(now.0)
                .bind(page as i64)
                .bind(out.len() as i64)
                .fetch_one(&mut *conn)
                .await
                .map_err(error::map)?;
            let mut rows = decode_rows(json.as_deref())?;
            // The aggregate's element order is not promised: restore it.
            rows.sort_by(|a, b| (b.priority, a.run_at, a.id).cmp(&(a.priority, b.run_at, b.id)));
            let short = rows.len() < page;
            out.extend(rows);
            if short {
                break;
            }
        }
        Ok(out)
    }

    /// Running jobs of `queue` when it has a parallelism limit (else 0:
    /// the count is not needed).
    pub(crate) async fn running_in(
        &self,
        conn: &mut SqliteConnection,
        queue: &str,
    ) -> Result<u32, StoreError> {
        if self.shared.policy.parallelism_of(queue).is_none() {
            return Ok(0);
        }
        read::JOBS.running(&mut *conn, queue).await
    }
}
