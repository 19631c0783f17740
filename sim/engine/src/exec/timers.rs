//! Timers and scheduled deliveries: one queue of events ordered by (true
//! time, insertion order), and [`Sleep`], the only timer simulated code has.
//!
//! The seed's [`Timeline`] (true time and that queue) is reached by
//! simulated timers through a thread-local handle that the world installs
//! for the length of one seed ([`enter`]). The handle hides the type of
//! the queue's messages, so this file knows nothing of the network that
//! sends them.
//!
//! ## Invariants
//! - Events due at the same true time fire in the order they were queued.
//! - A [`Sleep`] that is dropped before it fires leaves nothing behind in
//!   the queue (a crashed host's timers vanish with it).
//! - True time never goes back.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
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

/// True time and the event queue of one seed.
pub struct Timeline<M> {
    now: Cell<u64>,
    /// Timers and deliveries.
    pub events: RefCell<Events<M>>,
}

impl<M> Default for Timeline<M> {
    fn default() -> Self {
        Timeline {
            now: Cell::new(0),
            events: RefCell::new(Events::default()),
        }
    }
}

impl<M> Timeline<M> {
    /// True time now (ms).
    pub fn now(&self) -> u64 {
        self.now.get()
    }

    /// Moves true time forward to `t` (never back).
    pub fn advance_to(&self, t: u64) {
        assert!(t >= self.now.get(), "true time never goes back");
        self.now.set(t);
    }
}

/// What a timer needs of the current timeline, whatever its messages are.
pub trait Clock {
    /// True time now (ms).
    fn now(&self) -> u64;
    /// Queues a wake-up of `w` at `at`.
    fn push_wake(&self, at: u64, w: Waker) -> EventKey;
    /// Replaces the waker of a queued wake-up.
    fn set_waker(&self, key: EventKey, w: &Waker);
    /// Removes a queued wake-up.
    fn remove(&self, key: EventKey);
}

impl<M> Clock for Timeline<M> {
    fn now(&self) -> u64 {
        self.now.get()
    }

    fn push_wake(&self, at: u64, w: Waker) -> EventKey {
        self.events.borrow_mut().push(at, Event::Wake(w))
    }

    fn set_waker(&self, key: EventKey, w: &Waker) {
        self.events.borrow_mut().set_waker(key, w);
    }

    fn remove(&self, key: EventKey) {
        self.events.borrow_mut().remove(key);
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<dyn Clock>>> = const { RefCell::new(None) };
}

/// Installs `clock` as the thread's current one until the guard drops.
pub fn enter(clock: Rc<dyn Clock>) -> Entered {
    let prev = CURRENT.with(|c| c.replace(Some(clock)));
    Entered { prev }
}

/// Restores the thread's previous clock when dropped.
pub struct Entered {
    prev: Option<Rc<dyn Clock>>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let prev = self.prev.take();
        // Dropped after the slot's borrow ends: the timeline's own drop
        // may look for the current clock.
        let old = CURRENT.with(|c| c.replace(prev));
        drop(old);
    }
}

fn with<R>(f: impl FnOnce(&dyn Clock) -> R) -> Option<R> {
    let clock = CURRENT.with(|c| c.borrow().clone())?;
    Some(f(&*clock))
}

/// True time now, from inside a simulation (ms).
pub fn now_ms() -> u64 {
    try_now_ms().expect("true time is only read inside a simulation")
}

/// True time now, or `None` outside a simulation.
pub fn try_now_ms() -> Option<u64> {
    with(|c| c.now())
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
        let done = with(|clock| {
            if clock.now() >= at {
                if let Some(k) = key {
                    clock.remove(k);
                }
                return None;
            }
            Some(match key {
                Some(k) => {
                    clock.set_waker(k, cx.waker());
                    k
                }
                None => clock.push_wake(at, cx.waker().clone()),
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
            let _ = with(|clock| clock.remove(k));
        }
    }
}
