//! Which queues' last claim took nothing: where a claim probe pays off.
//!
//! A claim probe (`claim_probe.rs` in each adapter) answers an idle
//! queue's poll from one read instead of a write transaction, but under a
//! backlog every probe finds a due job and is one read more per claim
//! (measured: the SQLite `Worker`'s drain ran about 9 % slower probing
//! every claim-only batch). So a store probes only the claims of queues
//! whose last claim it answered took nothing, and learns from each answer.
//!
//! Invariants:
//! - a hint only: either path answers a claim alike, so a stale entry
//!   costs one read or one transaction, never a different answer;
//! - bounded: at most [`MAX_IDLE_QUEUES`] names are kept; past that a
//!   queue is simply not marked (its claims take the write path).

use std::collections::BTreeSet;
use std::sync::Mutex;

/// Most queue names kept.
pub const MAX_IDLE_QUEUES: usize = 1_024;

/// The queues whose last claim took nothing (see the module docs).
#[derive(Debug, Default)]
pub struct IdleQueues {
    names: Mutex<BTreeSet<String>>,
}

impl IdleQueues {
    fn names(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        // A panic while holding the lock leaves a consistent set.
        self.names.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether every one of `queues` (at least one) took nothing at its
    /// last claim: then a probe is likely to save a transaction.
    pub fn all_idle<'q>(&self, queues: impl IntoIterator<Item = &'q str>) -> bool {
        let names = self.names();
        let mut any = false;
        for q in queues {
            if !names.contains(q) {
                return false;
            }
            any = true;
        }
        any
    }

    /// Records what a claim of `queue` took: nothing marks it idle,
    /// anything clears the mark.
    pub fn claimed(&self, queue: &str, took_any: bool) {
        let mut names = self.names();
        if took_any {
            names.remove(queue);
        } else if names.len() < MAX_IDLE_QUEUES && !names.contains(queue) {
            names.insert(queue.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{IdleQueues, MAX_IDLE_QUEUES};

    #[test]
    fn a_queue_is_idle_from_an_empty_claim_until_one_takes_a_job() {
        let idle = IdleQueues::default();
        assert!(!idle.all_idle(["a"]), "never claimed");
        assert!(!idle.all_idle([]), "no queue is not idle");
        idle.claimed("a", false);
        assert!(idle.all_idle(["a"]));
        assert!(!idle.all_idle(["a", "b"]), "b never claimed");
        idle.claimed("b", false);
        assert!(idle.all_idle(["b", "a"]));
        idle.claimed("a", true);
        assert!(!idle.all_idle(["a"]) && idle.all_idle(["b"]));
    }

    #[test]
    fn at_most_the_bound_of_names_is_kept() {
        let idle = IdleQueues::default();
        for i in 0..MAX_IDLE_QUEUES + 10 {
            idle.claimed(&format!("q{i}"), false);
        }
        assert!(idle.all_idle(["q0"]));
        assert!(!idle.all_idle([format!("q{MAX_IDLE_QUEUES}").as_str()]));
    }
}
