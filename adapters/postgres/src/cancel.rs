//! Cancel: the row locked, the core's transition, one write when it
//! changes anything.

use crate::write_batch::Batch;
use crate::PgStore;
use leasehold_core::transition;
use leasehold_core::{CancelOutcome, JobId, StoreError};
use sqlx::postgres::PgConnection;

impl PgStore {
    pub(crate) async fn cancel_in(
        &self,
        conn: &mut PgConnection,
        id: JobId,
    ) -> Result<CancelOutcome, StoreError> {
        let (record, now) = self.one_row(conn, id).await?;
        let (applied, answer) = transition::cancel(&record, now);
        if let Some(applied) = applied {
            let mut batch = Batch::default();
            self.push(&mut batch, &applied, record.version)?;
            self.write(conn, batch).await?;
        }
        Ok(answer)
    }
}
