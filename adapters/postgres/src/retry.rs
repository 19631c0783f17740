//! An operator's retry of a dead job: the row locked, the core's
//! transition, one write (which wakes the queue's idle workers) when it
//! changes anything.

use crate::write_batch::Batch;
use crate::PgStore;
use leasehold_core::transition;
use leasehold_core::{JobId, RetryOutcome, StoreError};
use sqlx::postgres::PgConnection;

impl PgStore {
    pub(crate) async fn retry_dead_in(
        &self,
        conn: &mut PgConnection,
        id: JobId,
    ) -> Result<RetryOutcome, StoreError> {
        let (record, now) = self.one_row(conn, id).await?;
        let (applied, answer) = transition::retry(&record, now);
        if let Some(applied) = applied {
            let mut batch = Batch::default();
            self.push(&mut batch, &applied, record.version)?;
            self.write(conn, batch).await?;
        }
        Ok(answer)
    }
}
