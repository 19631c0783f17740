//! An operator's retry of a dead job: the row loaded under the write lock,
//! the core's transition, one write when it changes anything.

use crate::SqliteStore;
use leasehold_core::transition;
use leasehold_core::{JobId, RetryOutcome, StoreError, StoreTime};
use sqlx::SqliteConnection;

impl SqliteStore {
    pub(crate) async fn retry_dead_in(
        &self,
        conn: &mut SqliteConnection,
        id: JobId,
        now: StoreTime,
    ) -> Result<RetryOutcome, StoreError> {
        let record = Self::load(conn, id).await?;
        let (applied, answer) = transition::retry(&record, now);
        if let Some(applied) = applied {
            self.update(conn, &applied, record.version).await?;
        }
        Ok(answer)
    }
}
