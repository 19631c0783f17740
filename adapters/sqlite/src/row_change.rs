//! A change of one job the core decides from its row alone: cancel, and
//! an operator's retry of a dead job. The row is loaded under the write
//! lock, the core's transition applied, and written once when it changes
//! anything.

use crate::SqliteStore;
use leasehold_core::transition::Applied;
use leasehold_core::{JobId, JobRecord, StoreError, StoreTime};
use sqlx::SqliteConnection;

impl SqliteStore {
    /// Applies `change` (`transition::cancel` or `transition::retry`) to
    /// job `id`'s row at store time `now`; its answer.
    pub(crate) async fn change_row<A>(
        &self,
        conn: &mut SqliteConnection,
        id: JobId,
        now: StoreTime,
        change: fn(&JobRecord, StoreTime) -> (Option<Applied>, A),
    ) -> Result<A, StoreError> {
        let record = Self::load(conn, id).await?;
        let (applied, answer) = change(&record, now);
        if let Some(applied) = applied {
            self.update(conn, &applied, record.version).await?;
        }
        Ok(answer)
    }
}
