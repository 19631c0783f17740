//! The seed's simulated world as simulated code reaches it: true time, the
//! event queue, the executor and the network, behind a thread-local handle
//! that the runner installs for the length of one seed.
//!
//! Everything here lives on the one thread that runs the seed; the
//! `RefCell`s are never borrowed across a poll, so simulated code may
//! spawn, sleep and send from anywhere inside a task.

use super::executor::Executor;
use super::timers::Events;
use crate::net::fabric::{Fabric, Message};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// One seed's world.
pub struct SimCore {
    now: Cell<u64>,
    /// Timers and deliveries.
    pub events: RefCell<Events<Message>>,
    /// The tasks of every host.
    pub exec: RefCell<Executor>,
    /// The network.
    pub net: RefCell<Fabric>,
}

impl SimCore {
    /// A world at true time 0.
    pub fn new(exec: Executor, net: Fabric) -> Rc<Self> {
        Rc::new(SimCore {
            now: Cell::new(0),
            events: RefCell::new(Events::default()),
            exec: RefCell::new(exec),
            net: RefCell::new(net),
        })
    }

    /// True time now (ms).
    pub fn now(&self) -> u64 {
        self.now.get()
    }

    /// Moves true time forward to `t` (never back).
    pub fn advance_to(&self, t: u64) {
        assert!(t >= self.now.get(), "true time never goes back");
        self.now.set(t);
    }

    /// Installs this world as the thread's current one until the guard drops.
    pub fn enter(self: &Rc<Self>) -> Entered {
        let prev = CURRENT.with(|c| c.replace(Some(self.clone())));
        Entered { prev }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<SimCore>>> = const { RefCell::new(None) };
}

/// Restores the thread's previous world when dropped.
pub struct Entered {
    prev: Option<Rc<SimCore>>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let prev = self.prev.take();
        // Dropped after the slot's borrow ends: the world's own drop may
        // look for the current world.
        let old = CURRENT.with(|c| c.replace(prev));
        drop(old);
    }
}

/// Runs `f` on the current world, if the thread is inside one.
pub fn with<R>(f: impl FnOnce(&SimCore) -> R) -> Option<R> {
    let core = CURRENT.with(|c| c.borrow().clone())?;
    Some(f(&core))
}

/// True time now, from inside a simulation (ms).
pub fn now_ms() -> u64 {
    try_now_ms().expect("true time is only read inside a simulation")
}

/// True time now, or `None` outside a simulation.
pub fn try_now_ms() -> Option<u64> {
    with(|c| c.now())
}
