//! Renew: the row locked, the core's transition, one write.

use crate::write_batch::Batch;
use crate::PgStore;
use leasehold_core::transition::{self, RenewPlan};
use leasehold_core::{RenewRequest, Renewal, StoreError};
use sqlx::postgres::PgConnection;

impl PgStore {
    pub(crate) async fn renew_in(
        &self,
        conn: &mut PgConnection,
        req: &RenewRequest,
    ) -> Result<Renewal, StoreError> {
        let (record, now) = self.one_row(conn, req.job).await?;
        match transition::renew(&record, req.token, req.lease, &self.policy, now)? {
            RenewPlan::Renewed(applied, answer) => {
                let mut batch = Batch::default();
                self.push(&mut batch, &applied, record.version)?;
                self.write(conn, batch).await?;
                Ok(answer)
            }
            RenewPlan::Lost => Ok(Renewal::Lost),
        }
    }
}
