//! Waking idle workers on new work, for adapters that can tell.
//!
//! A [`crate::Worker`] whose claim came back short waits for the first of:
//! its poll interval, a lease task ending, or the store's
//! [`crate::Store::work_available`] future. A store that knows when work
//! appears (an enqueue or a retry committed in this process, a PostgreSQL
//! `NOTIFY`) resolves that future; the default never resolves, so such a
//! store simply polls.
//!
//! [`WorkSignal`] is the in-process half that the adapters share: a fixed
//! array of [`WAKE_SLOTS`] `watch` cells, one per hash of the queue name.
//! [`WorkSignal::subscribe`] records the slot's version **when it is
//! called** (not when its future is first polled), so the worker subscribes
//! before it claims and a commit that lands between the claim's snapshot and
//! the wait still wakes it. Properties:
//! - bounded: the slots are fixed at creation; nothing grows with queues,
//!   workers or announcements;
//! - coalescing: any number of announcements between two subscriptions
//!   resolve one future once, so a burst of enqueues costs one claim;
//! - a wake is a hint, never a promise: two queues that share a slot wake
//!   each other (one empty claim), and a missed announcement only delays
//!   pickup to the next poll. Correctness never depends on it.
//!
//! No I/O here: adapters call [`WorkSignal::announce`] after their commit.

use crate::job::{JobRecord, JobState};
use crate::policy::Policy;
use crate::time::StoreTime;
use std::future::Future;
use tokio::sync::watch;

/// Number of wake slots; queues hash onto them (FNV-1a).
pub const WAKE_SLOTS: usize = 64;

const _: () = assert!(WAKE_SLOTS.is_power_of_two());

/// In-process wake-ups per queue. See the module docs.
#[derive(Debug)]
pub struct WorkSignal {
    slots: Box<[watch::Sender<u64>]>,
}

impl Default for WorkSignal {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkSignal {
    /// A signal with [`WAKE_SLOTS`] slots and nobody waiting.
    pub fn new() -> Self {
        WorkSignal {
            slots: (0..WAKE_SLOTS).map(|_| watch::Sender::new(0)).collect(),
        }
    }

    fn slot(&self, queue: &str) -> &watch::Sender<u64> {
        // FNV-1a: deterministic across processes and runs (no RandomState).
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in queue.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        &self.slots[(h as usize) & (WAKE_SLOTS - 1)]
    }

    /// Wakes every waiter on `queue` (and on queues sharing its slot).
    /// Never blocks; with nobody waiting it only bumps a counter.
    pub fn announce(&self, queue: &str) {
        self.slot(queue).send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Wakes every waiter on every queue: for when announcements may have
    /// been lost (a listener reconnected), so every worker claims once.
    pub fn announce_all(&self) {
        for s in self.slots.iter() {
            s.send_modify(|v| *v = v.wrapping_add(1));
        }
    }

    /// A future that resolves at the first announcement for `queue` made
    /// after this call returns. Subscribing happens here, eagerly.
    pub fn subscribe(&self, queue: &str) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.slot(queue).subscribe();
        async move {
            if rx.changed().await.is_err() {
                // The signal was dropped (its store is gone): nothing will
                // ever announce, so leave the waking to the poll instead of
                // resolving in a loop.
                std::future::pending::<()>().await;
            }
        }
    }
}

/// Whether a write that turned a row in state `old` (`None`: a new row) into
/// `new` at store time `now` should wake idle workers of `new.queue`: the
/// row became claimable now (an enqueue, a `Returned` release, a swept
/// lease, a retry without delay), or it left `running` in a queue with a
/// parallelism limit (a slot opened). A row due later (a retry's backoff, a
/// future `run_at`) is left to the poll.
pub fn wakes_workers(
    old: Option<JobState>,
    new: &JobRecord,
    now: StoreTime,
    policy: &Policy,
) -> bool {
    let was_running = old == Some(JobState::Running);
    let due = new.state == JobState::Pending && new.run_at <= now && old != Some(JobState::Pending);
    let slot_freed = was_running
        && new.state != JobState::Running
        && policy.parallelism_of(&new.queue).is_some();
    due || slot_freed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    fn ready(f: &mut std::pin::Pin<&mut (impl Future<Output = ()> + ?Sized)>) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        f.as_mut().poll(&mut cx) == Poll::Ready(())
    }

    #[test]
    fn an_announcement_after_subscribing_wakes_even_before_the_first_poll() {
        let s = WorkSignal::new();
        let mut f = pin!(s.subscribe("q"));
        s.announce("q");
        assert!(ready(&mut f));
    }

    #[test]
    fn an_announcement_before_subscribing_does_not_wake() {
        let s = WorkSignal::new();
        s.announce("q");
        let mut f = pin!(s.subscribe("q"));
        assert!(!ready(&mut f));
    }

    #[test]
    fn a_burst_resolves_one_subscription_once_and_announce_all_wakes_any_queue() {
        let s = WorkSignal::new();
        let mut f = pin!(s.subscribe("q"));
        for _ in 0..1000 {
            s.announce("q");
        }
        assert!(ready(&mut f));
        let mut g = pin!(s.subscribe("other"));
        assert!(!ready(&mut g));
        s.announce_all();
        assert!(ready(&mut g));
    }

    /// Which writes wake idle workers: rows that became claimable now, and
    /// rows that left `running` in a queue with a parallelism limit.
    #[test]
    fn only_work_claimable_now_or_a_freed_limited_slot_wakes_workers() {
        use crate::transition::fixtures::{pending, running};
        let plain = Policy::default();
        let limited = Policy::builder()
            .parallelism("q", 2)
            .build()
            .expect("policy");
        let row = pending(); // queue "q", due at 1000
        let now = StoreTime(1000);
        assert!(wakes_workers(None, &row, now, &plain), "an enqueue due now");
        assert!(
            !wakes_workers(None, &row, StoreTime(999), &plain),
            "an enqueue due later is left to the poll"
        );
        assert!(
            !wakes_workers(Some(JobState::Pending), &row, now, &plain),
            "a pending row that stays pending is no news"
        );
        assert!(
            wakes_workers(Some(JobState::Running), &row, now, &plain),
            "a returned lease"
        );
        let mut done = running(1, 1, 2000);
        done.state = JobState::Succeeded;
        assert!(!wakes_workers(Some(JobState::Running), &done, now, &plain));
        assert!(
            wakes_workers(Some(JobState::Running), &done, now, &limited),
            "a finished job frees a slot of a limited queue"
        );
        let still = running(2, 1, 3000);
        assert!(!wakes_workers(
            Some(JobState::Running),
            &still,
            now,
            &limited
        ));
    }
}
