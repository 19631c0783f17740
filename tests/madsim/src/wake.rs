//! Wake-ups over madsim's network: the store node tells every worker node
//! that work became claimable on a queue, as PostgreSQL's `NOTIFY` reaches
//! each process's `LISTEN` connection.
//!
//! The store node listens to its own store's
//! [`Store::work_available`] (the memory adapter announces after every
//! commit that made work claimable, by the core's `wakes_workers` rule)
//! and sends each worker node one datagram with the queue's name. madsim's
//! faults reach it like any other message: packet loss, a clogged link or
//! a killed node drops it. The worker node announces what it hears on its
//! [`WorkSignal`], which its store client's `work_available` subscribes
//! to. A wake-up is only a hint: a lost one costs a worker at most its
//! poll interval.

use crate::world::Host;
use leasehold_core::worker::wake::WorkSignal;
use leasehold_core::Store;
use leasehold_memory::MemoryStore;
use madsim::net::Endpoint;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

/// The port a worker node hears wake-ups on.
const WAKE_PORT: u16 = 7001;
/// Tag of wake-up messages.
const WAKE_TAG: u64 = 0;

/// Worker node `i`'s address (from 1), as the run builds it.
pub fn worker_ip(i: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 1, 0, i as u8))
}

/// The store node's sender: one incarnation, until madsim kills the node.
/// Wakes every worker node on each announcement of `queue` (announcements
/// made while a round of datagrams goes out coalesce into the next round).
pub async fn announce_wake_ups(host: Host, store: Arc<MemoryStore>, queue: String) {
    let Ok(ep) = Endpoint::bind("0.0.0.0:0").await else {
        return;
    };
    let workers = host.shared.scenario.workers;
    // Subscribed before the first commit can land.
    let mut next = store.work_available(&queue);
    loop {
        next.await;
        // Subscribed again before sending, so nothing announced meanwhile
        // is missed.
        next = store.work_available(&queue);
        for i in 1..=workers {
            let to = SocketAddr::new(worker_ip(i), WAKE_PORT);
            // A datagram: madsim decides whether it arrives.
            let _ = ep.send_to_raw(to, WAKE_TAG, Box::new(queue.clone())).await;
        }
    }
}

/// A worker node's listener: one incarnation; announces every wake-up it
/// hears on `signal`.
pub async fn hear_wake_ups(signal: Arc<WorkSignal>) {
    let Ok(ep) = Endpoint::bind(SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), WAKE_PORT)).await
    else {
        return;
    };
    while let Ok((payload, _)) = ep.recv_from_raw(WAKE_TAG).await {
        if let Ok(queue) = payload.downcast::<String>() {
            signal.announce(&queue);
        }
    }
}
