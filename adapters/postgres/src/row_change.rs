//! A change of one job the core decides from its row alone: cancel, and
//! an operator's retry of a dead job. The row is locked, the core's
//! transition applied, and written once when it changes anything (a
//! retry's write wakes the queue's idle workers).

use crate::write_batch::Batch;
use crate::PgStore;
use leasehold_core::transition::Applied;
use leasehold_core::{JobId, JobRecord, StoreError, StoreTime};
use sqlx::postgres::PgConnection;

impl PgStore {
    /// Applies `change` (`transition::cancel` or `transition::retry`) to
    /// job `id`'s locked row at the store's time; its answer.
    pub(crate) async fn change_row<A>(
        &self,
        conn: &mut PgConnection,
        id: JobId,
        change: fn(&JobRecord, StoreTime) -> (Option<Applied>, A),
    ) -> Result<A, StoreError> {
        let (record, now) = self.one_row(conn, id).await?;
        let (applied, answer) = change(&record, now);
        if let Some(applied) = applied {
            let mut batch = Batch::default();
            self.push(&mut batch, &applied, record.version)?;
            self.write(conn, batch).await?;
        }
        Ok(answer)
    }
}
