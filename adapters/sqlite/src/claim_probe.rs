//! A claim that would find nothing is answered without a write transaction.
//!
//! An idle worker's poll is a claim of a queue with no due job, and most
//! claims are such polls. On the write path each one takes the database's
//! write lock (`BEGIN IMMEDIATE`), scans, and commits nothing, while
//! enqueuers of every process wait. So a claim with nothing else to write
//! (a lone claim, or a batch of claims without releases) first asks a read
//! connection whether any of its queues has a due pending job, and answers
//! every claim empty when none has. It asks only when the last claim of
//! each of those queues took nothing (`leasehold_sql::idle_queues`): under
//! a backlog the probe would find a job every time, one read for nothing.
//!
//! Invariants:
//! - the answer is the write path's: the probe's predicate is the claim
//!   scan's own for any of the claims' queues ([`DUE_PENDING_IN_ANY`]),
//!   read at the same store time, and the write path grants nothing when
//!   no row matches it;
//! - one snapshot: the probe is one statement whatever the number of
//!   queues, so "nothing due" holds for all of them at one instant within
//!   the call, where the empty claims take effect;
//! - a probe that fails, or finds a due job, changes nothing: the write
//!   path runs as before (and answers any error itself);
//! - the simulator's commit-point faults apply where the answer is settled,
//!   as on the write path (`TxFaults::at_commit`);
//! - under the simulator's statement scheduler (`--interleave`) the write
//!   path runs instead: its gate orders transactions at their statements,
//!   and a probe is not one.

use crate::claim::DUE_PENDING_IN_ANY;
use crate::SqliteStore;
use leasehold_core::statement_gate;
use leasehold_core::StoreTime;
use std::collections::BTreeSet;

impl SqliteStore {
    /// Whether the claims of `queues` certainly find nothing at store time
    /// `now`: no queue has a due pending job. `false` when the probe is
    /// off, when one of the queues' last claim took a job (see the module
    /// docs), or when it fails.
    pub(crate) async fn nothing_to_claim<'q>(
        &self,
        queues: impl IntoIterator<Item = &'q str>,
        now: StoreTime,
    ) -> bool {
        if statement_gate::armed() {
            return false;
        }
        let queues: BTreeSet<&str> = queues.into_iter().collect();
        if !self.shared.idle.all_idle(queues.iter().copied()) {
            return false;
        }
        let Ok(queues) = serde_json::to_string(&queues) else {
            return false;
        };
        let sql =
            format!("SELECT EXISTS (SELECT 1 FROM leasehold_jobs WHERE {DUE_PENDING_IN_ANY})");
        let Ok(mut conn) = self.reader().await else {
            return false;
        };
        let nothing_due = sqlx::query_scalar::<_, bool>(&sql)
            .bind(queues)
            .bind(now.0)
            .fetch_one(&mut *conn)
            .await
            .map(|due| !due);
        // A due job is claimed by the write path, which also answers an
        // error if it recurs.
        if !matches!(conn.finish(nothing_due), Ok(true)) {
            return false;
        }
        // SQLite raises no serialization failure: only an armed stall (the
        // caller dropped here) applies, as at the write path's commit.
        let _ = self.shared.tx_faults.at_commit().await;
        true
    }
}
