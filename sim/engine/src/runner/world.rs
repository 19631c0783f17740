//! Applying the fault plan to the turmoil world between steps.

use crate::faults::{FaultPlan, LinkView, ProcessAction};
use crate::history::Record;
use crate::hosts::Shared;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Applies a link's new state through turmoil. turmoil keeps one state per
/// direction, and `hold`/`release`/`repair` reset both, so the link is first
/// brought back to healthy (delivering held messages only when the hold
/// ends) and the new state is laid on top.
fn apply_link(sim: &mut turmoil::Sim<'_>, a: &str, b: &str, old: LinkView, new: LinkView) {
    if old.held && new.held {
        sim.hold(a, b);
    } else if old.held {
        sim.release(a, b);
    } else {
        sim.repair(a, b);
        if new.held {
            sim.hold(a, b);
        }
    }
    if new.drop_ab {
        sim.partition_oneway(a, b);
    }
    if new.drop_ba {
        sim.partition_oneway(b, a);
    }
}

/// The runner's view of the world: which faults are applied so far.
pub(super) struct World {
    pub(super) shared: Arc<Shared>,
    pub(super) plan: FaultPlan,
    pub(super) next_process: usize,
    pub(super) next_link_time: usize,
    pub(super) links: BTreeMap<(String, String), LinkView>,
    /// Closes the store once its host is down (its connections die with it).
    pub(super) on_store_down: Box<dyn Fn()>,
}

impl World {
    /// Applies every process action and link change due at `now`.
    pub(super) fn apply_due(&mut self, sim: &mut turmoil::Sim<'_>, now: u64) {
        while let Some((at, action)) = self.plan.process.get(self.next_process).cloned() {
            if at > now {
                break;
            }
            self.next_process += 1;
            self.shared.set_crashing(true);
            match &action {
                ProcessAction::Crash(h) => {
                    if sim.is_host_running(h.as_str()) {
                        let shared = self.shared.clone();
                        sim.crash_with(h.as_str(), |_| shared.drop_host_tasks(h));
                        self.store_down(h);
                        self.shared.set_crashing(false);
                        self.shared.record_runner(Record::HostCrashed {
                            t: now,
                            host: h.clone(),
                        });
                    }
                }
                ProcessAction::Restart(h) => {
                    if sim.is_host_running(h.as_str()) {
                        let shared = self.shared.clone();
                        sim.crash_with(h.as_str(), |_| shared.drop_host_tasks(h));
                        self.store_down(h);
                        self.shared.set_crashing(false);
                        self.shared.record_runner(Record::HostCrashed {
                            t: now,
                            host: h.clone(),
                        });
                        self.shared.set_crashing(true);
                    }
                    sim.bounce(h.as_str());
                }
            }
            self.shared.set_crashing(false);
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
                if new != old {
                    apply_link(sim, &a, &b, old, new);
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
    }

    fn store_down(&self, host: &str) {
        if host == "store" {
            (self.on_store_down)();
        }
    }

    /// Whether every scheduled process action and link change is applied.
    pub(super) fn faults_done(&self) -> bool {
        self.next_process >= self.plan.process.len()
            && self.next_link_time >= self.plan.link_times.len()
    }
}
