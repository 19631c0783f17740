//! Wake-ups over the simulated network: the store host tells every worker
//! process that work became claimable on a queue, as PostgreSQL's
//! `NOTIFY` reaches each process's `LISTEN` connection.
//!
//! A wake-up is one UDP datagram (the queue's name) from the store host to
//! a worker host's [`WAKE_PORT`], so the network's faults reach it like any
//! other message: a partition or a crashed receiver drops it, a hold
//! delays it, and inside the fault window the store host loses it at the
//! seed's `faults.wake_loss` rate. The worker process announces what it
//! hears on its [`WorkSignal`], which its store client's
//! `Store::work_available` subscribes to. A wake-up is only a hint: a lost
//! one costs the worker at most its poll interval, which is what the
//! scenarios with lost wake-ups check (I6).

use leasehold_core::worker::wake::WorkSignal;
use std::sync::Arc;
use turmoil::net::UdpSocket;

/// The port worker processes hear wake-ups on.
pub const WAKE_PORT: u16 = 7001;
/// Longest queue name a wake-up carries (longer ones are cut: a hint).
const MAX_WAKE_BYTES: usize = 256;
/// Most wake-ups one incarnation of a worker process hears (a bound far
/// above any scenario's).
const MAX_WAKE_UPS: u64 = 100_000_000;

/// Hears wake-ups for as long as the process lives and announces each on
/// `signal`. Ends only if the port cannot be bound or the bound is reached.
pub async fn listen_for_wake_ups(signal: Arc<WorkSignal>) {
    let Ok(socket) = UdpSocket::bind(("0.0.0.0", WAKE_PORT)).await else {
        return std::future::pending().await;
    };
    let mut buf = [0u8; MAX_WAKE_BYTES];
    for _ in 0..MAX_WAKE_UPS {
        let Ok((n, _)) = socket.recv_from(&mut buf).await else {
            continue;
        };
        if let Ok(queue) = std::str::from_utf8(&buf[..n]) {
            signal.announce(queue);
        }
    }
    std::future::pending().await
}

/// The store host's sender of wake-ups.
pub struct WakeSender {
    socket: UdpSocket,
    workers: Vec<String>,
}

impl WakeSender {
    /// Binds the store host's wake-up socket; `workers` are the worker hosts.
    pub async fn bind(workers: Vec<String>) -> std::io::Result<Self> {
        let socket = UdpSocket::bind(("0.0.0.0", WAKE_PORT)).await?;
        Ok(WakeSender { socket, workers })
    }

    /// Sends `queue`'s wake-up to every worker host `lost` lets through
    /// (`lost(host)` decides, per datagram, whether it is lost).
    pub async fn send(&self, queue: &str, mut lost: impl FnMut(&str) -> bool) {
        let bytes = &queue.as_bytes()[..queue.len().min(MAX_WAKE_BYTES)];
        for host in &self.workers {
            if lost(host) {
                continue;
            }
            // A receiver that is down or cut off just never hears it.
            let _ = self.socket.send_to(bytes, (host.as_str(), WAKE_PORT)).await;
        }
    }
}
