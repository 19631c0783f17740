//! The audit log read back: one `lease_events` row per event, in commit
//! order.

use crate::{error, SqliteStore};
use leasehold_core::{Event, StoreError};
use sqlx::Row;

impl SqliteStore {
    /// The audit log: one event per accepted transition, in commit order.
    pub async fn events(&self) -> Result<Vec<Event>, StoreError> {
        self.events_page(0, u32::MAX)
            .await
            .map(|page| page.into_iter().map(|(_, e)| e).collect::<Vec<Event>>())
    }

    /// Up to `limit` audit events with a sequence number above `after_seq`,
    /// in commit order, each with its sequence number (for paging exports).
    pub async fn events_page(
        &self,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<(i64, Event)>, StoreError> {
        let rows =
            sqlx::query("SELECT seq, event FROM lease_events WHERE seq > ? ORDER BY seq LIMIT ?")
                .bind(after_seq)
                .bind(i64::from(limit))
                .fetch_all(&self.shared.pool)
                .await
                .map_err(error::map)?;
        rows.iter()
            .map(|r| {
                let seq: i64 = r.try_get(0).map_err(error::map)?;
                let text: String = r.try_get(1).map_err(error::map)?;
                let event = serde_json::from_str(&text)
                    .map_err(|e| StoreError::Corrupt(format!("event {seq}: {e}")))?;
                Ok((seq, event))
            })
            .collect()
    }
}
