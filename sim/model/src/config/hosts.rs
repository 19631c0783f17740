//! The hosts of a scenario's world, typed: what each runs is decided by its
//! kind, not by the prefix of its name.
//!
//! This is the one list of a scenario's hosts ([`Hosts::of`]): validation
//! checks scripted faults against it, and the engine builds its world,
//! draws its faults and shrinks its scenarios from it. Two orders of it
//! matter to every history hash, so both are written down here and
//! nowhere else:
//! - the registration order ([`Hosts::registration`]): store, workers,
//!   sweepers, schedulers, client. It numbers the hosts on the engine's
//!   executor and network, and is the order they first start in;
//! - the draw order ([`Hosts::draw`]): store, client, workers, sweepers,
//!   schedulers. The swarm draws each host's faults in this order, the
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

    /// In registration order: the index of each is its number on the
    /// executor and the network.
    pub fn registration(&self) -> &[Host] {
        &self.0
    }

    /// In the swarm's draw order: the store, the client, then the rest in
    /// registration order.
    pub fn draw(&self) -> impl Iterator<Item = &Host> {
        let n = self.0.len();
        // Registration puts the store first and the client last.
        [&self.0[0], &self.0[n - 1]]
            .into_iter()
            .chain(&self.0[1..n - 1])
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
