//! An operator's retry of a dead job: the row loaded under the lock, the
//! core's transition, one write (waking idle workers of its queue) when it
//! changes anything.

use crate::MemoryStore;
use leasehold_core::{transition, JobId, RetryOutcome, StoreError};

impl MemoryStore {
    pub(crate) fn do_retry_dead(&self, id: JobId) -> Result<RetryOutcome, StoreError> {
        let now = self.clock.now();
        let mut st = self.begin(now);
        let row = Self::load(&st, id)?;
        let (applied, answer) = transition::retry(&row, now);
        if let Some(applied) = applied {
            self.put_waking(&mut st, applied, Some(&row), now);
        }
        Ok(answer)
    }
}
