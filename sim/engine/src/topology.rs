//! The hosts of a world, typed: what each runs is decided by its kind, not
//! by the prefix of its name.
//!
//! The list of a scenario's hosts is built here, once, by [`Hosts::of`].
//! Two orders of it matter to every history hash, so both are written down
//! here and nowhere else:
//! - the registration order ([`Hosts::registration`]): store, workers,
//!   sweepers, schedulers, client. It numbers the hosts on the executor
//!   and the network, and is the order they first start in;
//! - the draw order ([`Hosts::draw`]): store, client, workers, sweepers,
//!   schedulers. The swarm draws each host's faults in this order, and the
//!   schedule keeps faults of one instant in it (a stable sort).

use leasehold_model::config::SimConfig;

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

/// One host of a world: its kind and its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    /// What it runs.
    pub kind: HostKind,
    /// Its name.
    pub name: String,
}

/// Every host of a scenario, in registration order.
#[derive(Clone, Debug)]
pub struct Hosts(Vec<Host>);

impl Hosts {
    /// The hosts of `cfg`'s topology.
    pub fn of(cfg: &SimConfig) -> Self {
        let t = &cfg.topology;
        let mut kinds = vec![HostKind::Store];
        kinds.extend((1..=t.workers).map(HostKind::Worker));
        kinds.extend((1..=t.sweepers).map(HostKind::Sweeper));
        kinds.extend((1..=t.schedulers).map(HostKind::Scheduler));
        kinds.push(HostKind::Client);
        Hosts(
            kinds
                .into_iter()
                .map(|kind| Host {
                    kind,
                    name: kind.name(),
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

    /// Whether a host of this name exists.
    pub fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|h| h.name == name)
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

    fn cfg() -> SimConfig {
        let mut c = SimConfig::default();
        c.topology.workers = 2;
        c.topology.sweepers = 1;
        c.topology.schedulers = 2;
        c
    }

    fn names<'a>(it: impl Iterator<Item = &'a Host>) -> Vec<&'a str> {
        it.map(|h| h.name.as_str()).collect()
    }

    #[test]
    fn registration_order_numbers_store_workers_sweepers_schedulers_client() {
        let h = Hosts::of(&cfg());
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
    }

    #[test]
    fn draw_order_is_the_models_host_names() {
        let c = cfg();
        let h = Hosts::of(&c);
        assert_eq!(names(h.draw()), c.host_names());
    }
}
