//! The resolved schedule as the runner applies it: process actions at their
//! exact instants, link states, and each host's pause windows.

use leasehold_model::config::ScriptedFault;
use leasehold_model::duration::Dur;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A process fault the runner applies to the world.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProcessAction {
    /// Kill the host's software (`Sim::crash`).
    Crash(String),
    /// Start it again (`Sim::bounce`), as a new process incarnation.
    Restart(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum LinkKind {
    /// Drop messages in the named directions.
    Drop { ab: bool, ba: bool },
    /// Hold messages in the named directions until the end.
    Hold { ab: bool, ba: bool },
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct LinkFault {
    a: String,
    b: String,
    from: u64,
    to: u64,
    kind: LinkKind,
}

impl LinkFault {
    /// `kind` on the link `a`–`b` over `[from, to)`; both ends are noted
    /// in `times` as instants the link may change.
    fn new(
        a: String,
        b: String,
        from: &Dur,
        to: &Dur,
        kind: LinkKind,
        times: &mut BTreeSet<u64>,
    ) -> Self {
        let (from, to) = (from.as_ms(), to.as_ms());
        times.insert(from);
        times.insert(to);
        LinkFault {
            a,
            b,
            from,
            to,
            kind,
        }
    }
}

/// The state of the link between `a` and `b` (names in sorted order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkView {
    /// Messages from `a` to `b` are dropped.
    pub drop_ab: bool,
    /// Messages from `b` to `a` are dropped.
    pub drop_ba: bool,
    /// Messages from `a` to `b` that are not dropped are held.
    pub held_ab: bool,
    /// Messages from `b` to `a` that are not dropped are held.
    pub held_ba: bool,
}

impl LinkView {
    /// Some direction is held (what the history's link record says; the
    /// recorded schedule's `hold` sentences say which direction).
    pub fn held(&self) -> bool {
        self.held_ab || self.held_ba
    }
}

/// Pause windows `[from, to)` of every host, merged and sorted.
pub type Pauses = Arc<Vec<(u64, u64)>>;

/// What the runner applies, derived from the schedule.
#[derive(Clone, Debug, Default)]
pub struct FaultPlan {
    /// Process actions in time order.
    pub process: Vec<(u64, ProcessAction)>,
    /// Pause windows by host.
    pub pauses: BTreeMap<String, Pauses>,
    /// Graceful shutdown times by worker host, ascending.
    pub shutdowns: BTreeMap<String, Vec<u64>>,
    links: Vec<LinkFault>,
    /// Scripted `Conflict` windows `[from, to)` by requesting host.
    conflicts: BTreeMap<String, Vec<(u64, u64)>>,
    /// Instants at which some link may change state, ascending.
    pub link_times: Vec<u64>,
}

fn sorted_pair(a: &str, b: &str) -> (String, String, bool) {
    if a <= b {
        (a.to_string(), b.to_string(), false)
    } else {
        (b.to_string(), a.to_string(), true)
    }
}

/// Which directions of the sorted pair a fault named `a`–`b` touches: both,
/// or only from `a` to `b` when `oneway` (`flipped`: `a` sorts after `b`).
fn directions(oneway: bool, flipped: bool) -> (bool, bool) {
    match (oneway, flipped) {
        (false, _) => (true, true),
        (true, false) => (true, false),
        (true, true) => (false, true),
    }
}

fn merge(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (from, to) in v {
        match out.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => out.push((from, to)),
        }
    }
    out
}

impl FaultPlan {
    /// The plan of a resolved schedule.
    pub fn new(schedule: &[ScriptedFault]) -> Self {
        let mut process = Vec::new();
        let mut pauses: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
        let mut shutdowns: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        let mut links = Vec::new();
        let mut conflicts: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
        let mut times = BTreeSet::new();
        for f in schedule {
            match f {
                ScriptedFault::Crash { host, at } => {
                    process.push((at.as_ms(), ProcessAction::Crash(host.clone())))
                }
                ScriptedFault::Restart { host, at } => {
                    process.push((at.as_ms(), ProcessAction::Restart(host.clone())))
                }
                ScriptedFault::Shutdown { host, at } => {
                    shutdowns.entry(host.clone()).or_default().push(at.as_ms())
                }
                ScriptedFault::Pause { host, at, len } => pauses
                    .entry(host.clone())
                    .or_default()
                    .push((at.as_ms(), at.as_ms() + len.as_ms())),
                ScriptedFault::Partition {
                    a,
                    b,
                    from,
                    to,
                    oneway,
                }
                | ScriptedFault::Hold {
                    a,
                    b,
                    from,
                    to,
                    oneway,
                } => {
                    let (x, y, flipped) = sorted_pair(a, b);
                    let (ab, ba) = directions(*oneway, flipped);
                    // A partition drops, a hold delays; either may be one way.
                    let kind = if matches!(f, ScriptedFault::Partition { .. }) {
                        LinkKind::Drop { ab, ba }
                    } else {
                        LinkKind::Hold { ab, ba }
                    };
                    links.push(LinkFault::new(x, y, from, to, kind, &mut times));
                }
                ScriptedFault::Conflict { host, from, to } => conflicts
                    .entry(host.clone())
                    .or_default()
                    .push((from.as_ms(), to.as_ms())),
                ScriptedFault::Skew { .. } | ScriptedFault::Drift { .. } => {}
            }
        }
        // Stable: a crash and a restart at the same instant keep their order.
        process.sort_by_key(|p| p.0);
        for v in shutdowns.values_mut() {
            v.sort_unstable();
            v.dedup();
        }
        FaultPlan {
            process,
            shutdowns,
            pauses: pauses
                .into_iter()
                .map(|(h, v)| (h, Arc::new(merge(v))))
                .collect(),
            links,
            conflicts: conflicts.into_iter().map(|(h, v)| (h, merge(v))).collect(),
            link_times: times.into_iter().collect(),
        }
    }

    /// Every host pair that has a link fault, names sorted.
    pub fn link_pairs(&self) -> Vec<(String, String)> {
        let set: BTreeSet<(String, String)> = self
            .links
            .iter()
            .filter(|l| l.a != l.b)
            .map(|l| (l.a.clone(), l.b.clone()))
            .collect();
        set.into_iter().collect()
    }

    /// The state of link `(a, b)` (sorted names) at true time `t`.
    pub fn link_at(&self, a: &str, b: &str, t: u64) -> LinkView {
        let mut v = LinkView::default();
        for l in &self.links {
            if l.a != a || l.b != b || t < l.from || t >= l.to {
                continue;
            }
            match l.kind {
                LinkKind::Drop { ab, ba } => {
                    v.drop_ab |= ab;
                    v.drop_ba |= ba;
                }
                LinkKind::Hold { ab, ba } => {
                    v.held_ab |= ab;
                    v.held_ba |= ba;
                }
            }
        }
        v
    }

    /// The first graceful shutdown of `host` at or after true time `t` (the
    /// one an incarnation started at `t` obeys).
    pub fn shutdown_after(&self, host: &str, t: u64) -> Option<u64> {
        self.shutdowns_of(host).after(t)
    }

    /// The graceful shutdowns of `host`: the part of the plan its worker
    /// host reads.
    pub fn shutdowns_of(&self, host: &str) -> Shutdowns {
        Shutdowns(self.shutdowns.get(host).cloned().unwrap_or_default())
    }

    /// Whether a scripted `conflict` window of `host` covers true time `t`:
    /// the store then answers its renew, release or cancel `Conflict`.
    pub fn conflict_at(&self, host: &str, t: u64) -> bool {
        self.conflict_windows().at(host, t)
    }

    /// The scripted `conflict` windows: the part of the plan the store
    /// host reads.
    pub fn conflict_windows(&self) -> ConflictWindows {
        ConflictWindows(self.conflicts.clone())
    }

    /// The pause windows of `host`.
    pub fn pauses_of(&self, host: &str) -> Pauses {
        self.pauses.get(host).cloned().unwrap_or_default()
    }
}

/// The scripted `Conflict` windows `[from, to)` by requesting host.
#[derive(Clone, Debug, Default)]
pub struct ConflictWindows(BTreeMap<String, Vec<(u64, u64)>>);

impl ConflictWindows {
    /// Whether a window of `host` covers true time `t`.
    pub fn at(&self, host: &str, t: u64) -> bool {
        self.0
            .get(host)
            .is_some_and(|v| v.iter().any(|&(from, to)| from <= t && t < to))
    }
}

/// One worker host's graceful shutdown times, ascending.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shutdowns(Vec<u64>);

impl Shutdowns {
    /// The first shutdown at or after true time `t`.
    pub fn after(&self, t: u64) -> Option<u64> {
        self.0.get(self.0.partition_point(|&s| s < t)).copied()
    }
}

/// The end of the pause covering `t`, if `t` falls inside one.
pub fn paused_until(pauses: &[(u64, u64)], t: u64) -> Option<u64> {
    let i = pauses.partition_point(|p| p.0 <= t);
    let p = pauses.get(i.checked_sub(1)?)?;
    (t < p.1).then_some(p.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_model::duration::Dur;

    /// The plan of `faults`, each in the scenario files' grammar.
    fn plan_of(faults: &[&str]) -> FaultPlan {
        let s: Vec<ScriptedFault> = faults.iter().map(|s| s.parse().unwrap()).collect();
        FaultPlan::new(&s)
    }

    #[test]
    fn overlapping_link_faults_combine() {
        let p = plan_of(&[
            "partition worker-1 -> store 1s..5s",
            "hold store worker-1 3s..8s",
            "pause worker-1 for 2s at 1s",
            "pause worker-1 for 2s at 2s",
            "crash worker-1 at 4s",
            "shutdown worker-1 at 9s",
            "shutdown worker-1 at 6s",
            "conflict worker-1 2s..2001ms",
        ]);
        assert_eq!(p.link_pairs(), vec![("store".into(), "worker-1".into())]);
        let v = p.link_at("store", "worker-1", 3500);
        assert!(v.drop_ba && !v.drop_ab && v.held_ab && v.held_ba);
        assert!(!p.link_at("store", "worker-1", 6000).drop_ba);
        assert_eq!(p.link_times, vec![1000, 3000, 5000, 8000]);
        assert_eq!(*p.pauses_of("worker-1"), vec![(1000, 4000)]);
        assert_eq!(paused_until(&p.pauses_of("worker-1"), 3999), Some(4000));
        assert_eq!(paused_until(&p.pauses_of("worker-1"), 4000), None);
        assert_eq!(
            p.process,
            vec![(4000, ProcessAction::Crash("worker-1".into()))]
        );
        assert_eq!(p.shutdown_after("worker-1", 0), Some(6000));
        assert_eq!(p.shutdown_after("worker-1", 6000), Some(6000));
        assert_eq!(p.shutdown_after("worker-1", 6001), Some(9000));
        assert_eq!(p.shutdown_after("worker-1", 9001), None);
        assert_eq!(p.shutdown_after("worker-2", 0), None);
        assert!(!p.conflict_at("worker-1", 1999));
        assert!(p.conflict_at("worker-1", 2000));
        assert!(!p.conflict_at("worker-1", 2001));
        assert!(!p.conflict_at("worker-2", 2000));
        let _ = Dur::ms(0);
    }

    #[test]
    fn a_one_way_hold_holds_only_its_own_direction() {
        let p = plan_of(&[
            "hold worker-1 -> store 800ms..900ms",
            "hold store -> worker-1 900ms..1000ms",
        ]);
        assert_eq!(p.link_pairs(), vec![("store".into(), "worker-1".into())]);
        // Sorted pair (store, worker-1): `ab` is store -> worker-1.
        let v = p.link_at("store", "worker-1", 850);
        assert!(v.held_ba && !v.held_ab && v.held());
        let v = p.link_at("store", "worker-1", 950);
        assert!(v.held_ab && !v.held_ba);
        assert_eq!(p.link_at("store", "worker-1", 1000), LinkView::default());
        assert_eq!(p.link_times, vec![800, 900, 1000]);
    }
}
