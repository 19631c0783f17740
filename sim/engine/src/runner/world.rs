//! The simulated world of one seed: its hosts (started, crashed, restarted
//! by the fault plan), its links (cut, held, healed), and the fault plan
//! applied at the exact instants it names.
//!
//! ## Invariants
//! - A crash drops every task of the host at once, in spawn order, with
//!   recording off (`Shared::set_crashing`), then takes the host off the
//!   network: nothing of that incarnation is recorded after its
//!   `HostCrashed` record, and answers to it are dropped ("dead is dead",
//!   `tests/engine_dead_is_dead.rs`).
//! - A restart starts a new incarnation from the host's software.

use crate::exec::context::SimCore;
use crate::exec::executor::TaskFuture;
use crate::exec::HostIdx;
use crate::faults::{FaultPlan, LinkView, ProcessAction};
use crate::history::Record;
use crate::hosts::Shared;
use crate::net::fabric;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Makes a fresh incarnation of one host's software; it clears the flag
/// it is given when the software returns.
pub(super) type Starter = Box<dyn Fn(Arc<AtomicBool>) -> TaskFuture>;

/// The runner's view of the world: its hosts and which faults are applied.
pub(super) struct World {
    pub(super) core: Rc<SimCore>,
    pub(super) shared: Arc<Shared>,
    pub(super) plan: FaultPlan,
    /// Each host's name and software, in registration order.
    pub(super) hosts: Vec<(String, Starter)>,
    /// Whether each host's main task is still running (it ends on a
    /// crash, or when its software returns, as after a graceful shutdown).
    pub(super) running: Vec<Arc<AtomicBool>>,
    pub(super) next_process: usize,
    pub(super) next_link_time: usize,
    pub(super) links: BTreeMap<(String, String), LinkView>,
    /// Closes the store once its host is down (its connections die with it).
    pub(super) on_store_down: Box<dyn Fn()>,
}

impl World {
    /// Starts every host, in registration order.
    pub(super) fn start_all(&mut self) {
        for i in 0..self.hosts.len() {
            self.start(i);
        }
    }

    fn start(&mut self, i: HostIdx) {
        // What an incarnation whose software returned left behind goes
        // with it, silently (it did not crash).
        self.shared.set_crashing(true);
        let left = self.core.exec.borrow_mut().take_host(i);
        for t in left {
            drop(t);
        }
        let gone = self.core.net.borrow_mut().host_down(i);
        drop(gone);
        self.shared.set_crashing(false);
        self.core.net.borrow_mut().host_up(i);
        self.running[i].store(true, Ordering::SeqCst);
        let fut = (self.hosts[i].1)(self.running[i].clone());
        self.core.exec.borrow_mut().spawn(i, fut);
    }

    fn idx(&self, host: &str) -> Option<HostIdx> {
        self.hosts.iter().position(|(h, _)| h == host)
    }

    /// Kills host `i` and records it at `now`.
    fn crash(&mut self, i: HostIdx, now: u64) {
        self.shared.set_crashing(true);
        let tasks = self.core.exec.borrow_mut().take_host(i);
        // One after another, outside the executor's borrow.
        for t in tasks {
            drop(t);
        }
        let gone = self.core.net.borrow_mut().host_down(i);
        drop(gone);
        if self.hosts[i].0 == "store" {
            (self.on_store_down)();
        }
        self.running[i].store(false, Ordering::SeqCst);
        self.shared.set_crashing(false);
        self.shared.record_runner(Record::HostCrashed {
            t: now,
            host: self.hosts[i].0.clone(),
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
                    let again = self.core.net.borrow_mut().set_link(ia, ib, new);
                    fabric::resend(&self.core, again);
                }
                self.shared.record_runner(Record::Link {
                    t: now,
                    a: a.clone(),
                    b: b.clone(),
                    drop_ab: new.drop_ab,
                    drop_ba: new.drop_ba,
                    held: new.held,
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
        self.shared.set_crashing(true);
        for i in 0..self.hosts.len() {
            let tasks = self.core.exec.borrow_mut().take_host(i);
            for t in tasks {
                drop(t);
            }
        }
    }
}
