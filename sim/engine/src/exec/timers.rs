//! Timers and scheduled deliveries: one queue of events ordered by (true
//! time, insertion order), and [`Sleep`], the only timer simulated code has.
//!
//! ## Invariants
//! - Events due at the same true time fire in the order they were queued.
//! - A [`Sleep`] that is dropped before it fires leaves nothing behind in
//!   the queue (a crashed host's timers vanish with it).

use super::context;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// Where an event sits in the queue: its true time and insertion number.
pub type EventKey = (u64, u64);

/// Something that happens at a true instant.
pub enum Event<M> {
    /// A timer: wake this task.
    Wake(Waker),
    /// A message arrives.
    Deliver(M),
}

/// The pending events of one seed.
pub struct Events<M> {
    queue: BTreeMap<EventKey, Event<M>>,
    next_seq: u64,
}

impl<M> Default for Events<M> {
    fn default() -> Self {
        Events {
            queue: BTreeMap::new(),
            next_seq: 0,
        }
    }
}

impl<M> Events<M> {
    /// Queues `ev` at true time `at`.
    pub fn push(&mut self, at: u64, ev: Event<M>) -> EventKey {
        let key = (at, self.next_seq);
        self.next_seq += 1;
        self.queue.insert(key, ev);
        key
    }

    /// Removes a queued event (a timer dropped before it fired).
    pub fn remove(&mut self, key: EventKey) {
        self.queue.remove(&key);
    }

    /// Replaces the waker of a queued timer.
    pub fn set_waker(&mut self, key: EventKey, w: &Waker) {
        if let Some(Event::Wake(old)) = self.queue.get_mut(&key) {
            if !old.will_wake(w) {
                *old = w.clone();
            }
        }
    }

    /// The true time of the earliest event.
    pub fn next_time(&self) -> Option<u64> {
        self.queue.first_key_value().map(|(k, _)| k.0)
    }

    /// Takes the earliest event if it is due at or before `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<Event<M>> {
        if self.next_time()? > now {
            return None;
        }
        self.queue.pop_first().map(|(_, e)| e)
    }

    /// How many events are pending.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

/// Waits until true time `at` (ms).
pub fn sleep_until(at: u64) -> Sleep {
    Sleep { at, key: None }
}

/// A timer on the simulated clock; see [`sleep_until`].
pub struct Sleep {
    at: u64,
    key: Option<EventKey>,
}

impl Sleep {
    /// The true time this timer fires at.
    pub fn deadline(&self) -> u64 {
        self.at
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let at = self.at;
        let key = self.key;
        let done = context::with(|core| {
            if core.now() >= at {
                if let Some(k) = key {
                    core.events.borrow_mut().remove(k);
                }
                return None;
            }
            let mut ev = core.events.borrow_mut();
            Some(match key {
                Some(k) => {
                    ev.set_waker(k, cx.waker());
                    k
                }
                None => ev.push(at, Event::Wake(cx.waker().clone())),
            })
        })
        .expect("a simulated timer is only polled inside a simulation");
        match done {
            None => {
                self.key = None;
                Poll::Ready(())
            }
            Some(k) => {
                self.key = Some(k);
                Poll::Pending
            }
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(k) = self.key.take() {
            // Outside a simulation (a world torn down) there is no queue left.
            let _ = context::with(|core| core.events.borrow_mut().remove(k));
        }
    }
}
