//! The audit log read back: one `leasehold_audit` row per write
//! statement, holding its events as a JSON array.

use crate::{error, PgStore};
use leasehold_core::{Event, StoreError};
use sqlx::Row;

/// Audit rows (transactions) read per round trip by [`PgStore::events`].
/// Audit rows (transactions) read per round trip by [`PgStore::events`].
const EVENT_PAGE_ROWS: u32 = 1_000;
/// Most pages [`PgStore::events`] reads: a bound on its loop.
/// Most pages [`PgStore::events`] reads: a bound on its loop.
const MAX_EVENT_PAGES: usize = 10_000_000;

impl PgStore {
    /// The audit log: one event per accepted transition, in insertion order.
    pub async fn events(&self) -> Result<Vec<Event>, StoreError> {
        let mut out = Vec::new();
        let mut after = 0;
        // Bounded: each non-empty page advances `after`; stops on an empty
        // page.
        for _ in 0..MAX_EVENT_PAGES {
            let page = self.events_page(after, EVENT_PAGE_ROWS).await?;
            let Some((seq, _)) = page.last() else {
                break;
            };
            after = *seq;
            out.extend(page.into_iter().map(|(_, e)| e));
        }
        Ok(out)
    }

    /// The audit events of up to `limit` audit rows (transactions) with a
    /// sequence number above `after_seq`, in order, each with its row's
    /// sequence number (shared by the events of one transaction). Page
    /// with the last event's number until a page comes back empty.
    pub async fn events_page(
        &self,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<(i64, Event)>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, events::text FROM leasehold_audit WHERE seq > $1 ORDER BY seq LIMIT $2",
        )
        .bind(after_seq)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(error::map)?;
        let mut out = Vec::new();
        for r in &rows {
            let seq: i64 = r.try_get(0).map_err(error::map)?;
            let text: String = r.try_get(1).map_err(error::map)?;
            let events: Vec<Event> = serde_json::from_str(&text)
                .map_err(|e| StoreError::Corrupt(format!("audit row {seq}: {e}")))?;
            out.extend(events.into_iter().map(|e| (seq, e)));
        }
        Ok(out)
    }
}
