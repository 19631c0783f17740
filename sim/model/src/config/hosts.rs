//! The hosts of a scenario's world, typed: what each runs is decided by its
//! kind, not by the prefix of its name.
//!
//! This is the one list of a scenario's hosts ([`Hosts::of`]): validation
//! checks scripted faults against it, and the engine builds its world,
//! draws its faults and shrinks its scenarios from it. Two orders of it
//! matter to every history hash, so both are written down here and
//! nowhere else:
//! - the registration order ([`Hosts::registration`]): store, workers,
//!   sweepers, schedulers, client, pruners. It numbers the hosts on the
//!   engine's executor and network, and is the order they first start in;
//! - the draw order ([`Hosts::draw`]): store, client, workers, sweepers,
//!   schedulers, pruners. The swarm draws each host's faults in this order, the
//!   schedule keeps faults of one instant in it (a stable sort), and
//!   validation lists the hosts in it.

use super::Topology;

/// What a host runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HostKind {
    /// The store host.
    Store,
    /// Worker host `n` (from 1): one process of
    /// `topology.workers_per_process` workers.
    Worker(u32),
    /// Sweeper host `n` (from 1).
    Sweeper(u32),
    /// Scheduler host `n` (from 1).
    Scheduler(u32),
    /// The client: enqueues, cancels and operator actions.
    Client,
    /// Pruner host `n` (from 1), only under `[pruner]`. Last in both
    /// orders, so a scenario without pruners numbers and draws as before.
    Pruner(u32),
}

impl HostKind {
    /// The host's name, as scenarios and histories spell it.
    pub fn name(self) -> String {
        match self {
            HostKind::Store => "store".into(),
            HostKind::Worker(n) => format!("worker-{n}"),
            HostKind::Sweeper(n) => format!("sweeper-{n}"),
            HostKind::Scheduler(n) => format!("scheduler-{n}"),
            HostKind::Client => "client".into(),
            HostKind::Pruner(n) => format!("pruner-{n}"),
        }
    }
}

/// One host of a world: its kind, its name, and its number in
/// registration order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    /// What it runs.
    pub kind: HostKind,
    /// Its name.
    pub name: String,
    /// Its place in registration order (from 0): its number on the
    /// engine's executor and network.
    pub index: usize,
}

/// Every host of a scenario, in registration order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hosts(Vec<Host>);

impl Hosts {
    /// The hosts of `topology`.
    pub fn of(topology: &Topology) -> Self {
        let t = topology;
        let mut kinds = vec![HostKind::Store];
        kinds.extend((1..=t.workers).map(HostKind::Worker));
        kinds.extend((1..=t.sweepers).map(HostKind::Sweeper));
        kinds.extend((1..=t.schedulers).map(HostKind::Scheduler));
        kinds.push(HostKind::Client);
        Hosts(
            kinds
                .into_iter()
                .enumerate()
                .map(|(index, kind)| Host {
                    kind,
                    name: kind.name(),
                    index,
                })
                .collect(),
        )
    }

    /// These hosts and `n` pruner hosts after them (last: see the module
    /// docs).
    pub fn with_pruners(mut self, n: u32) -> Self {
        let first = self.0.len();
        self.0.extend((1..=n).enumerate().map(|(i, k)| {
            let kind = HostKind::Pruner(k);
            Host {
                kind,
                name: kind.name(),
                index: first + i,
            }
        }));
        self
    }

    /// In registration order: the index of each is its number on the
    /// executor and the network.
    pub fn registration(&self) -> &[Host] {
        &self.0
    }

    /// In the swarm's draw order: the store, the client, then the rest in
    /// registration order.
    pub fn draw(&self) -> impl Iterator<Item = &Host> {
        let first = |k: HostKind| self.0.iter().filter(move |h| h.kind == k);
        first(HostKind::Store).chain(first(HostKind::Client)).chain(
            self.0
                .iter()
                .filter(|h| !matches!(h.kind, HostKind::Store | HostKind::Client)),
        )
    }

    /// The host named `name`, if there is one.
    pub fn named(&self, name: &str) -> Option<&Host> {
        self.0.iter().find(|h| h.name == name)
    }

    /// Whether a host of this name exists.
    pub fn contains(&self, name: &str) -> bool {
        self.named(name).is_some()
    }

    /// The hosts of one kind of software (`Worker`, say, for every worker
    /// host), in registration order.
    pub fn of_kind(&self, same: impl Fn(HostKind) -> bool) -> impl Iterator<Item = &Host> {
        self.0.iter().filter(move |h| same(h.kind))
    }

    /// How many hosts there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none (never: a world has a store and a client).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts() -> Hosts {
        Hosts::of(&Topology {
            workers: 2,
            sweepers: 1,
            schedulers: 2,
            ..Topology::default()
        })
    }

    fn names<'a>(it: impl Iterator<Item = &'a Host>) -> Vec<&'a str> {
        it.map(|h| h.name.as_str()).collect()
    }

    #[test]
    fn registration_order_numbers_store_workers_sweepers_schedulers_client() {
        let h = hosts();
        assert_eq!(
            names(h.registration().iter()),
            [
                "store",
                "worker-1",
                "worker-2",
                "sweeper-1",
                "scheduler-1",
                "scheduler-2",
                "client"
            ]
        );
        for (i, host) in h.registration().iter().enumerate() {
            assert_eq!(host.index, i, "{} numbered by its place", host.name);
        }
    }

    #[test]
    fn draw_order_is_store_client_then_registration_order() {
        assert_eq!(
            names(hosts().draw()),
            [
                "store",
                "client",
                "worker-1",
                "worker-2",
                "sweeper-1",
                "scheduler-1",
                "scheduler-2"
            ]
        );
    }

    #[test]
    fn pruners_come_last_in_both_orders() {
        let h = hosts().with_pruners(2);
        let all = names(h.registration().iter());
        assert_eq!(all[..7], names(hosts().registration().iter())[..]);
        assert_eq!(all[7..], ["pruner-1", "pruner-2"]);
        assert_eq!(h.named("pruner-2").map(|p| p.index), Some(8));
        let drawn = names(h.draw());
        assert_eq!(drawn[..7], names(hosts().draw())[..]);
        assert_eq!(drawn[7..], ["pruner-1", "pruner-2"]);
    }

    #[test]
    fn kinds_are_found_by_name_and_by_kind() {
        let h = hosts();
        assert_eq!(
            h.named("worker-2").map(|w| w.kind),
            Some(HostKind::Worker(2))
        );
        assert_eq!(h.named("worker-3"), None);
        assert_eq!(h.named("worker-02"), None);
        let workers = names(h.of_kind(|k| matches!(k, HostKind::Worker(_))));
        assert_eq!(workers, ["worker-1", "worker-2"]);
        assert_eq!(h.len(), 7);
    }
}
