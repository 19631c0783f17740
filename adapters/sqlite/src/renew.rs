//! Renew: the row loaded under the write lock, the core's transition, one
//! write.

use crate::SqliteStore;
use leasehold_core::transition::{self, RenewPlan};
use leasehold_core::{RenewRequest, Renewal, StoreError, StoreTime};
use sqlx::SqliteConnection;

impl SqliteStore {
    pub(crate) async fn renew_in(
        &self,
        conn: &mut SqliteConnection,
        req: &RenewRequest,
        now: StoreTime,
    ) -> Result<Renewal, StoreError> {
        let record = Self::load(conn, req.job).await?;
        match transition::renew(&record, req.token, req.lease, &self.shared.policy, now)? {
            RenewPlan::Renewed(applied, answer) => {
                self.update(conn, &applied, record.version).await?;
                Ok(answer)
            }
            RenewPlan::Lost => Ok(Renewal::Lost),
        }
    }
}
