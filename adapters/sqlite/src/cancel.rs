//! Cancel: the row loaded under the write lock, the core's transition,
//! one write when it changes anything.

use crate::SqliteStore;
use leasehold_core::transition;
use leasehold_core::{CancelOutcome, JobId, StoreError, StoreTime};
use sqlx::SqliteConnection;

impl SqliteStore {
    pub(crate) async fn cancel_in(
        &self,
        conn: &mut SqliteConnection,
        id: JobId,
        now: StoreTime,
    ) -> Result<CancelOutcome, StoreError> {
        let record = Self::load(conn, id).await?;
        let (applied, answer) = transition::cancel(&record, now);
        if let Some(applied) = applied {
            self.update(conn, &applied, record.version).await?;
        }
        Ok(answer)
    }
}
