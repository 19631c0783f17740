//! A sweep that would reclaim nothing is answered without a write
//! transaction.
//!
//! Sweepers run on a timer whether or not a lease has expired, and most
//! sweeps find none: on the write path each one begins a transaction,
//! scans, writes nothing and commits. So a sweep first asks, in one
//! statement on the kept read connection, whether any running job's lease
//! has expired, and answers "nothing reclaimed" when none has. Expired
//! leases are rare (a worker crashed or was cut off), so unlike the claim
//! probe it asks every time.
//!
//! Invariants:
//! - the answer is the write path's: the probe's filter is the sweep
//!   scan's own ([`expired_running`]), on the same store clock; the scan
//!   skips rows other transactions lock and the probe does not, so the
//!   probe says "nothing" only where the scan would find nothing;
//! - one snapshot: the probe is one statement, so "nothing expired" holds
//!   at one instant within the call, where the empty sweep takes effect;
//! - a probe that fails, or finds an expired lease, changes nothing: the
//!   write path runs as before (and answers any error itself);
//! - it waits, as a transaction does, for the rollbacks of transactions
//!   their callers dropped; and the simulator's commit-point faults apply
//!   where its answer is settled: a stall there, an injected failure sends
//!   the sweep down the write path (`TxFaults::at_commit`);
//! - under the simulator's statement scheduler (`--interleave`) the write
//!   path runs instead: its gates order transactions at their statements
//!   (the sweep's race variants among them), and a probe is not one.

use crate::clock::STMT_CLOCK;
use crate::tx::AtCommit;
use crate::PgStore;
use leasehold_core::statement_gate;

/// A running job whose lease has expired at the store time `$1` (or the
/// statement's clock): the sweep scan's filter, and the probe's.
pub(crate) fn expired_running() -> String {
    format!("state = 'running' AND expires_at <= {STMT_CLOCK}")
}

impl PgStore {
    /// Whether a sweep now certainly reclaims nothing: no running job's
    /// lease has expired. `false` under the statement scheduler and when
    /// the probe fails.
    pub(crate) async fn nothing_to_sweep(&self) -> bool {
        if statement_gate::armed() {
            return false;
        }
        self.rollbacks.settled().await;
        let sql = format!(
            "SELECT EXISTS (SELECT 1 FROM leasehold_jobs WHERE {})",
            expired_running()
        );
        let Ok(mut conn) = self.reader().await else {
            return false;
        };
        let nothing_expired = sqlx::query_scalar::<_, bool>(&sql)
            .bind(self.clock_param())
            .fetch_one(&mut *conn)
            .await
            .map(|expired| !expired);
        // An expired lease is reclaimed by the write path, which also
        // answers an error if it recurs.
        if !matches!(conn.finish(nothing_expired), Ok(true)) {
            return false;
        }
        matches!(self.tx_faults.at_commit().await, AtCommit::Commit)
    }
}
