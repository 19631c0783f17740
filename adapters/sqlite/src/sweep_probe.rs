//! A sweep that would reclaim nothing is answered without a write
//! transaction.
//!
//! Sweepers run on a timer whether or not a lease has expired, and most
//! sweeps find none. On the write path each one takes the database's write
//! lock (`BEGIN IMMEDIATE`), scans, and commits nothing, while every
//! writer of every process waits. So a sweep first asks a read connection
//! whether any running job's lease has expired, and answers "nothing
//! reclaimed" when none has. Expired leases are rare (a worker crashed or
//! was cut off), so unlike the claim probe it asks every time.
//!
//! Invariants:
//! - the answer is the write path's: the probe's filter is the sweep
//!   scan's own ([`EXPIRED_RUNNING`]), read at the same store time, and the
//!   write path reclaims nothing when no row matches it;
//! - one snapshot: the probe is one statement, so "nothing expired" holds
//!   at one instant within the call, where the empty sweep takes effect;
//! - a probe that fails, or finds an expired lease, changes nothing: the
//!   write path runs as before (and answers any error itself);
//! - the simulator's commit-point faults apply where the answer is settled,
//!   as on the write path (`TxFaults::at_commit`);
//! - under the simulator's statement scheduler (`--interleave`) the write
//!   path runs instead: its gate orders transactions at their statements,
//!   and a probe is not one.

use crate::sweep::EXPIRED_RUNNING;
use crate::SqliteStore;
use leasehold_core::statement_gate;
use leasehold_core::StoreTime;

impl SqliteStore {
    /// Whether a sweep at store time `now` certainly reclaims nothing: no
    /// running job's lease has expired. `false` under the statement
    /// scheduler and when the probe fails.
    pub(crate) async fn nothing_to_sweep(&self, now: StoreTime) -> bool {
        if statement_gate::armed() {
            return false;
        }
        let sql = format!("SELECT EXISTS (SELECT 1 FROM leasehold_jobs WHERE {EXPIRED_RUNNING})");
        let Ok(mut conn) = self.reader().await else {
            return false;
        };
        let nothing_expired = sqlx::query_scalar::<_, bool>(&sql)
            .bind(now.0)
            .fetch_one(&mut *conn)
            .await
            .map(|expired| !expired);
        // An expired lease is reclaimed by the write path, which also
        // answers an error if it recurs.
        if !matches!(conn.finish(nothing_expired), Ok(true)) {
            return false;
        }
        // SQLite raises no serialization failure: only an armed stall (the
        // caller dropped here) applies, as at the write path's commit.
        let _ = self.shared.tx_faults.at_commit().await;
        true
    }
}
