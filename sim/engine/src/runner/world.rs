//! The simulated world of one seed, in one place: true time and the event
//! queue, the executor every host runs on, the network, the typed hosts
//! (started, crashed, restarted by the fault plan) with their
//! incarnations, the links (cut, held, healed), the fault plan applied at
//! the exact instants it names, and the run's recorder.
//!
//! ## Invariants
//! - A crash drops every task of the host at once, in spawn order, with
//!   recording off (`Recorder::set_crashing`), then takes the host off the
//!   network: nothing of that incarnation is recorded after its
//!   `HostCrashed` record, and answers to it are dropped ("dead is dead",
//!   `tests/engine_dead_is_dead.rs`).
//! - A restart starts a new incarnation from the host's software.
//! - Simulated code reaches the world's time, executor and network only
//!   while the world is entered ([`World::enter`]).

use crate::exec::executor::{self, run_ready, Executor, TaskFuture};
use crate::exec::timers::{self, Event, Timeline};
use crate::exec::HostIdx;
use crate::faults::{FaultPlan, LinkView, ProcessAction};
use crate::machine::recorder::Recorder;
use crate::net::fabric::{self, Fabric, Message, Network};
use leasehold_model::config::{Host, HostKind};
use leasehold_model::history::Record;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Makes a fresh incarnation of one host's software; it clears the flag
/// it is given when the software returns.
pub(super) type Starter = Box<dyn Fn(Arc<AtomicBool>) -> TaskFuture>;

/// The world of one seed.
pub(super) struct World {
    time: Rc<Timeline<Message>>,
    exec: Rc<RefCell<Executor>>,
    net: Rc<Network>,
    /// The run's recorder.
    recorder: Arc<Recorder>,
    plan: FaultPlan,
    /// Each host and its software, in registration order.
    hosts: Vec<(Host, Starter)>,
    /// Whether each host's main task is still running (it ends on a
    /// crash, or when its software returns, as after a graceful shutdown).
    running: Vec<Arc<AtomicBool>>,
    next_process: usize,
    next_link_time: usize,
    links: BTreeMap<(String, String), LinkView>,
    /// Closes the store once its host is down (its connections die with it).
    on_store_down: Box<dyn Fn()>,
}

/// The world's time, executor and network installed as the thread's
/// current ones; dropped in the reverse order.
pub(super) struct Entered(
    #[allow(dead_code)] timers::Entered,
    #[allow(dead_code)] executor::Entered,
    #[allow(dead_code)] fabric::Entered,
);

impl World {
    /// A world at true time 0 of `hosts` (in registration order, each with
    /// its software), on `fabric` and `exec`, applying `plan`; nothing
    /// started yet.
    pub(super) fn new(
        hosts: Vec<(Host, Starter)>,
        fabric: Fabric,
        exec: Executor,
        plan: FaultPlan,
        recorder: Arc<Recorder>,
        on_store_down: Box<dyn Fn()>,
    ) -> Self {
        let time: Rc<Timeline<Message>> = Rc::default();
        World {
            net: Network::new(time.clone(), fabric),
            time,
            exec: Rc::new(RefCell::new(exec)),
            recorder,
            plan,
            running: hosts.iter().map(|_| Arc::default()).collect(),
            hosts,
            next_process: 0,
            next_link_time: 0,
            links: BTreeMap::new(),
            on_store_down,
        }
    }

    /// Installs the world as the thread's current one until the guard
    /// drops. Keep the guard alive longer than the world's tear-down.
    pub(super) fn enter(&self) -> Entered {
        Entered(
            timers::enter(self.time.clone()),
            executor::enter(self.exec.clone()),
            fabric::enter(self.net.clone()),
        )
    }

    /// True time now (ms).
    pub(super) fn now(&self) -> u64 {
        self.time.now()
    }

    /// Moves true time forward to `t` (never back).
    pub(super) fn advance_to(&self, t: u64) {
        self.time.advance_to(t);
    }

    /// The true time of the next timer or delivery.
    pub(super) fn next_event(&self) -> Option<u64> {
        self.time.events.borrow().next_time()
    }

    /// Polls ready tasks until none is left.
    pub(super) fn run_ready(&self) -> Result<u64, String> {
        run_ready(&self.exec)
    }

    /// Fires every timer and delivery due at `now`, in (time, insertion)
    /// order, one at a time: the queue is not borrowed while one fires.
    pub(super) fn fire_due(&self, now: u64) {
        loop {
            let ev = self.time.events.borrow_mut().pop_due(now);
            match ev {
                None => break,
                Some(Event::Wake(w)) => w.wake(),
                Some(Event::Deliver(m)) => fabric::deliver(&self.net, m),
            }
        }
    }

    /// Starts every host, in registration order.
    pub(super) fn start_all(&mut self) {
        for i in 0..self.hosts.len() {
            self.start(i);
        }
    }

    /// Turns recording off, then drops every task of host `i`, in spawn
    /// order, and takes it off the network. The caller turns recording
    /// back on.
    fn take_down(&mut self, i: HostIdx) {
        self.recorder.set_crashing(true);
        let tasks = self.exec.borrow_mut().take_host(i);
        // One after another, outside the executor's borrow.
        for t in tasks {
            drop(t);
        }
        let gone = self.net.fabric.borrow_mut().host_down(i);
        drop(gone);
    }

    fn start(&mut self, i: HostIdx) {
        // What an incarnation whose software returned left behind goes
        // with it, silently (it did not crash).
        self.take_down(i);
        self.recorder.set_crashing(false);
        self.net.fabric.borrow_mut().host_up(i);
        self.running[i].store(true, Ordering::SeqCst);
        let fut = (self.hosts[i].1)(self.running[i].clone());
        self.exec.borrow_mut().spawn(i, fut);
    }

    fn idx(&self, host: &str) -> Option<HostIdx> {
        self.hosts.iter().position(|(h, _)| h.name == host)
    }

    /// Kills host `i` and records it at `now`.
    fn crash(&mut self, i: HostIdx, now: u64) {
        self.take_down(i);
        if self.hosts[i].0.kind == HostKind::Store {
            (self.on_store_down)();
        }
        self.running[i].store(false, Ordering::SeqCst);
        self.recorder.set_crashing(false);
        self.recorder.record_runner(Record::HostCrashed {
            t: now,
            host: self.hosts[i].0.name.clone(),
        });
    }

    /// The true time of the next fault not yet applied.
    pub(super) fn next_fault(&self) -> Option<u64> {
        let p = self.plan.process.get(self.next_process).map(|(t, _)| *t);
        let l = self.plan.link_times.get(self.next_link_time).copied();
        p.into_iter().chain(l).min()
    }

    /// Applies every process action and link change due at `now`.
    pub(super) fn apply_due(&mut self, now: u64) {
        while let Some((at, action)) = self.plan.process.get(self.next_process).cloned() {
            if at > now {
                break;
            }
            self.next_process += 1;
            let (host, restart) = match &action {
                ProcessAction::Crash(h) => (h, false),
                ProcessAction::Restart(h) => (h, true),
            };
            let Some(i) = self.idx(host) else {
                continue;
            };
            if self.running[i].load(Ordering::SeqCst) {
                self.crash(i, now);
            }
            if restart {
                self.start(i);
            }
        }
        let mut changed = false;
        while self
            .plan
            .link_times
            .get(self.next_link_time)
            .is_some_and(|&t| t <= now)
        {
            self.next_link_time += 1;
            changed = true;
        }
        if changed {
            for (a, b) in self.plan.link_pairs() {
                let new = self.plan.link_at(&a, &b, now);
                let key = (a.clone(), b.clone());
                let old = self.links.get(&key).copied().unwrap_or_default();
                if new == old {
                    continue;
                }
                if let (Some(ia), Some(ib)) = (self.idx(&a), self.idx(&b)) {
                    let again = self.net.fabric.borrow_mut().set_link(ia, ib, new);
                    fabric::resend(&self.net, again);
                }
                self.recorder.record_runner(Record::Link {
                    t: now,
                    a: a.clone(),
                    b: b.clone(),
                    drop_ab: new.drop_ab,
                    drop_ba: new.drop_ba,
                    held: new.held(),
                });
                self.links.insert(key, new);
            }
        }
    }

    /// Whether every scheduled process action and link change is applied.
    pub(super) fn faults_done(&self) -> bool {
        self.next_process >= self.plan.process.len()
            && self.next_link_time >= self.plan.link_times.len()
    }

    /// Drops every task of every host with recording off (the run is over).
    pub(super) fn tear_down(&mut self) {
        self.recorder.set_crashing(true);
        for i in 0..self.hosts.len() {
            let tasks = self.exec.borrow_mut().take_host(i);
            for t in tasks {
                drop(t);
            }
        }
    }
}
