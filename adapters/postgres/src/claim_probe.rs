//! A claim that would find nothing is answered without a write transaction.
//!
//! An idle worker's poll is a claim of a queue with no due job, and most
//! claims are such polls: on the write path each one begins a
//! transaction, scans, writes nothing and commits. So a claim with nothing
//! else to write (a lone claim, claims gathered by `claim_many`, or a
//! batch of claims without releases) first asks whether any of its queues
//! has a due pending job, in one statement on a pooled connection, and
//! answers every claim empty when none has. It asks only when the last
//! claim of each of those queues took nothing (`leasehold_sql::idle_queues`):
//! under a backlog the probe would find a job every time, one round trip
//! for nothing.
//!
//! Invariants:
//! - the answer is the write path's: the probe's predicate is the claim
//!   scan's own for any of the claims' queues ([`due_pending_in_any`]), on
//!   the same store clock; the scan skips rows other transactions lock and
//!   the probe does not, so the probe says "nothing" only where the scan
//!   would find nothing;
//! - one snapshot: the probe is one statement whatever the number of
//!   queues, so "nothing due" holds for all of them at one instant within
//!   the call, where the empty claims take effect;
//! - a probe that fails, or finds a due job, changes nothing: the write
//!   path runs as before (and answers any error itself);
//! - it waits, as a transaction does, for the rollbacks of transactions
//!   their callers dropped; and the simulator's commit-point faults apply
//!   where its answer is settled: a stall there, an injected failure sends
//!   the claim down the write path (`TxFaults::at_commit`);
//! - under the simulator's statement scheduler (`--interleave`) the write
//!   path runs instead: its gates order transactions at their statements,
//!   and a probe is not one.

use crate::clock::STMT_CLOCK;
use crate::tx::AtCommit;
use crate::PgStore;
use leasehold_core::statement_gate;
use std::collections::BTreeSet;

/// Due and pending at the store time `$1` (or the statement's clock).
fn due() -> String {
    format!("state = 'pending' AND run_at <= {STMT_CLOCK}")
}

/// The jobs a claim of queue `$2` may take at the store time `$1`: due and
/// pending. The claim scan's filter.
pub(crate) fn due_pending() -> String {
    format!("queue = $2 AND {}", due())
}

/// [`due_pending`] for any of the queues in the array `$2`: the probe's
/// filter, one statement for every queue of a call.
fn due_pending_in_any() -> String {
    format!("queue = ANY($2) AND {}", due())
}

impl PgStore {
    /// Whether the claims of `queues` certainly find nothing now: no queue
    /// has a due pending job. `false` when the probe is off, when one of
    /// the queues' last claim took a job (see the module docs), or when it
    /// fails.
    pub(crate) async fn nothing_to_claim<'q>(
        &self,
        queues: impl IntoIterator<Item = &'q str>,
    ) -> bool {
        if statement_gate::armed() {
            return false;
        }
        let queues: BTreeSet<&str> = queues.into_iter().collect();
        if !self.idle.all_idle(queues.iter().copied()) {
            return false;
        }
        self.rollbacks.settled().await;
        let sql = format!(
            "SELECT EXISTS (SELECT 1 FROM leasehold_jobs WHERE {})",
            due_pending_in_any()
        );
        let Ok(mut conn) = self.reader().await else {
            return false;
        };
        let nothing_due = sqlx::query_scalar::<_, bool>(&sql)
            .bind(self.clock_param())
            .bind(queues.into_iter().collect::<Vec<&str>>())
            .fetch_one(&mut *conn)
            .await
            .map(|due| !due);
        // A due job is claimed by the write path, which also answers an
        // error if it recurs.
        if !matches!(conn.finish(nothing_due), Ok(true)) {
            return false;
        }
        matches!(self.tx_faults.at_commit().await, AtCommit::Commit)
    }
}
