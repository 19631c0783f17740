//! After a `kill-listener`: watch, bounded, for the process's LISTEN
//! connection to come back. The store's wake listener reconnects on its own
//! (a doubling backoff capped at 5 s, a 10 s connect timeout); while it is
//! down, the process's Workers fall back to polling. A listener that never
//! comes back while its process runs is a finding: every later enqueue
//! would wait a poll interval.

use crate::fleet::Fleet;
use crate::store::RunStore;
use std::time::{Duration, Instant};

/// Longest wait for a terminated LISTEN connection to come back: the
/// listener's longest backoff and connect timeout, with room for a server
/// restart in between.
pub const LISTENER_BACK_WAIT: Duration = Duration::from_secs(30);

/// A terminated LISTEN connection being watched.
#[derive(Clone, Debug)]
pub struct Watch {
    /// The fault's index in the injected list.
    pub idx: usize,
    slot: u32,
    pid: u32,
    app: String,
    /// The backends terminated: a new one is any other.
    old: Vec<i32>,
    since: Instant,
}

/// How a watch ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A new LISTEN backend of the process appeared this long after.
    Back(Duration),
    /// The process was killed or replaced first.
    Gone,
    /// Not back within [`LISTENER_BACK_WAIT`] while the process ran.
    Missing,
}

impl Watch {
    /// Watches process `pid` (identity `app`) of `slot` after its LISTEN
    /// backends `old` were terminated.
    pub fn new(idx: usize, slot: u32, pid: u32, app: String, old: Vec<i32>) -> Self {
        Watch {
            idx,
            slot,
            pid,
            app,
            old,
            since: Instant::now(),
        }
    }

    /// The verdict, once there is one.
    pub async fn poll(&self, fleet: &Fleet, store: &RunStore) -> Option<Verdict> {
        if fleet
            .current(self.slot)
            .is_none_or(|inc| inc.pid != self.pid)
        {
            return Some(Verdict::Gone);
        }
        if let Ok(now) = store.listener_backends(&self.app).await {
            if now.iter().any(|p| !self.old.contains(p)) {
                return Some(Verdict::Back(self.since.elapsed()));
            }
        }
        if self.since.elapsed() < LISTENER_BACK_WAIT {
            return None;
        }
        Some(if fleet.is_running(self.slot, self.pid) {
            Verdict::Missing
        } else {
            Verdict::Gone
        })
    }

    /// What the problem report says of a listener that did not come back.
    pub fn missing(&self) -> String {
        format!(
            "worker {} (pid {}, {}): its LISTEN connection was terminated and did not come back \
             within {LISTENER_BACK_WAIT:?} while the process ran",
            self.slot, self.pid, self.app
        )
    }
}
