//! Wake-ups over the simulated network: the store host tells every worker
//! process that work became claimable on a queue, as PostgreSQL's
//! `NOTIFY` reaches each process's `LISTEN` connection.
//!
//! A wake-up is one datagram (the queue's name) from the store host to a
//! worker host, so the network's faults reach it like any other message: a
//! cut link or a crashed receiver drops it, a hold delays it, and inside
//! the fault window the store host loses it at the seed's
//! `faults.wake_loss` rate. The worker process announces what it hears on
//! its [`WorkSignal`], which its store client's `Store::work_available`
//! subscribes to. A wake-up is only a hint: a lost one costs the worker at
//! most its poll interval, which is what the scenarios with lost wake-ups
//! check (I6).

use super::fabric;
use crate::exec::HostIdx;
use crate::machine::HostRuntime;
use leasehold_core::worker::wake::WorkSignal;
use std::sync::Arc;

/// Longest queue name a wake-up carries (longer ones are cut: a hint).
const MAX_WAKE_BYTES: usize = 256;

/// Hears wake-ups for this incarnation of the host of `rt`, and announces
/// each on `signal`.
pub fn listen_for_wake_ups(rt: &HostRuntime, signal: Arc<WorkSignal>) {
    fabric::hear_wake_ups(rt.idx(), signal);
}

/// The store host's sender of wake-ups.
pub struct WakeSender {
    from: HostIdx,
    workers: Vec<(String, HostIdx)>,
}

impl WakeSender {
    /// The sender of the host of `rt`; `workers` are the worker hosts
    /// (name and number).
    pub fn new(rt: &HostRuntime, workers: Vec<(String, HostIdx)>) -> Self {
        WakeSender {
            from: rt.idx(),
            workers,
        }
    }

    /// Sends `queue`'s wake-up to every worker host `lost` lets through
    /// (`lost(host)` decides, per datagram, whether it is lost).
    pub fn send(&self, queue: &str, mut lost: impl FnMut(&str) -> bool) {
        let mut end = queue.len().min(MAX_WAKE_BYTES);
        while !queue.is_char_boundary(end) {
            end -= 1;
        }
        for (host, i) in &self.workers {
            if lost(host) {
                // Observation only: marks the run's coverage, changes nothing.
                crate::coverage::sometimes("wake-up-lost", true);
                continue;
            }
            fabric::send_wake(self.from, *i, &queue[..end]);
        }
    }
}
