//! How the operator's commands show rows, bytes and durations, for people
//! (tables) and for scripts (`--json`).

use leasehold_core::{Event, JobRecord, StoreTime};
use serde::Serialize;

/// A duration in milliseconds, short: `850ms`, `12.3s`, `4m05s`, `2h07m`,
/// `3d04h`; negative ones with a leading `-`.
pub fn duration(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let ms = ms.unsigned_abs();
    let s = ms / 1000;
    let text = if ms < 1000 {
        format!("{ms}ms")
    } else if s < 60 {
        format!("{}.{}s", s, (ms % 1000) / 100)
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else if s < 86_400 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else {
        format!("{}d{:02}h", s / 86_400, (s % 86_400) / 3600)
    };
    format!("{sign}{text}")
}

/// Bytes for a person or a script: the text when it is UTF-8, else
/// `hex:` and the bytes in hex.
pub fn bytes(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(t) => t.to_string(),
        Err(_) => {
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            format!("hex:{hex}")
        }
    }
}

/// A job row as `list --json` and `show --json` print it.
#[derive(Debug, Serialize)]
pub struct JobView {
    /// Id.
    pub id: u64,
    /// Queue.
    pub queue: String,
    /// State.
    pub state: String,
    /// Attempts started.
    pub attempt: u32,
    /// Attempt budget.
    pub max_attempts: u32,
    /// Priority.
    pub priority: i32,
    /// Earliest claim time (store ms).
    pub run_at: i64,
    /// Token of the current or last lease.
    pub token: u64,
    /// Lease holder (running only).
    pub holder: Option<String>,
    /// Lease expiry (store ms, running only).
    pub expires_at: Option<i64>,
    /// A cancel was requested while running.
    pub cancel_requested: bool,
    /// Idempotency key.
    pub idempotency_key: Option<String>,
    /// Payload ([`bytes`]).
    pub payload: String,
    /// Result ([`bytes`], succeeded only).
    pub result: Option<String>,
    /// Last error.
    pub error: Option<String>,
    /// Row version.
    pub version: u64,
    /// Enqueued at (store ms).
    pub created_at: i64,
    /// Last changed at (store ms).
    pub updated_at: i64,
}

impl JobView {
    /// The view of `r`.
    pub fn of(r: &JobRecord) -> JobView {
        JobView {
            id: r.id.0,
            queue: r.queue.clone(),
            state: r.state.to_string(),
            attempt: r.attempt,
            max_attempts: r.max_attempts,
            priority: r.priority,
            run_at: r.run_at.0,
            token: r.token.0,
            holder: r.holder.as_ref().map(|h| h.as_str().to_string()),
            expires_at: r.expires_at.map(|t| t.0),
            cancel_requested: r.cancel_requested,
            idempotency_key: r.idempotency_key.clone(),
            payload: bytes(&r.payload),
            result: r.result.as_deref().map(bytes),
            error: r.error.clone(),
            version: r.version,
            created_at: r.created_at.0,
            updated_at: r.updated_at.0,
        }
    }
}

/// One line of a job's row for `list`: id, queue, state, attempts, and
/// when it is due or its lease expires, relative to the store's `now`.
pub fn row_line(r: &JobRecord, now: StoreTime) -> String {
    let when = match r.expires_at {
        Some(e) => format!("lease expires in {}", duration(e.0 - now.0)),
        None if r.state == leasehold_core::JobState::Pending => {
            format!("due in {}", duration(r.run_at.0 - now.0))
        }
        None => format!("updated {} ago", duration(now.0 - r.updated_at.0)),
    };
    format!(
        "{:<10} {:<16} {:<10} {:>3}/{:<3} {}",
        r.id.0,
        r.queue,
        r.state.as_str(),
        r.attempt,
        r.max_attempts,
        when
    )
}

/// One audit event for `show`: store time, the change, the token and
/// worker, the event's own fields.
pub fn event_line(e: &Event) -> String {
    let from = e.from.map_or("-".into(), |s| s.to_string());
    let worker = e
        .worker
        .as_ref()
        .map_or(String::new(), |w| format!(" by {w}"));
    let kind = serde_json::to_string(&e.kind).unwrap_or_else(|_| format!("{:?}", e.kind));
    format!(
        "  @{} v{} {from} -> {} {}{worker} {kind}",
        e.at.0, e.version, e.to, e.token
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(12_345), "12.3s");
        assert_eq!(duration(245_000), "4m05s");
        assert_eq!(duration(7_620_000), "2h07m");
        assert_eq!(duration(273_600_000), "3d04h");
        assert_eq!(duration(-1_500), "-1.5s");
    }

    #[test]
    fn bytes_are_text_or_hex() {
        assert_eq!(bytes(b"hello"), "hello");
        assert_eq!(bytes(&[0xff, 0x00]), "hex:ff00");
    }
}
