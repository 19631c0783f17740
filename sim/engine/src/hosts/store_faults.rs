//! The store host's faults: the rates this seed drew for what happens at
//! the store (message and answer loss, conflicts, cancelled batches, lost
//! wake-ups), the fault window they apply in, and the generators that
//! decide each one.
//!
//! Every decision draws from a generator of its own, derived from the seed
//! by name, and only when its rate is above zero, so a scenario without a
//! kind of fault draws exactly as one written before that kind existed.
//! The generators live as long as the run, not one store incarnation: a
//! restarted store goes on drawing where the crashed one stopped.

use crate::faults::{ConflictWindows, SwarmDraw};
use crate::machine::recorder::lock;
use leasehold_core::JobId;
use leasehold_model::rng::SimRng;
use std::collections::BTreeSet;
use std::sync::Mutex;

/// The store host's fault rates, window and generators.
pub struct StoreFaults {
    draw: SwarmDraw,
    window_ms: u64,
    net_rng: Mutex<SimRng>,
    conflicts: Mutex<Conflicts>,
    wake_rng: Mutex<SimRng>,
    cancel_rng: Mutex<SimRng>,
    transient_rng: Mutex<SimRng>,
    interleave_rng: Mutex<SimRng>,
    scripted: ConflictWindows,
}

/// The store's injected conflicts: their generator, and the (host, job)
/// pairs whose last request was answered `Conflict`.
struct Conflicts {
    rng: SimRng,
    last: BTreeSet<(String, JobId)>,
}

impl StoreFaults {
    /// The store faults of `seed`, at the rates of `draw`, inside the
    /// first `window_ms` of true time, and the scenario's scripted
    /// `conflict` windows.
    pub fn new(seed: u64, draw: SwarmDraw, window_ms: u64, scripted: ConflictWindows) -> Self {
        let rng = |name: &str| Mutex::new(SimRng::derive(seed, name, &[]));
        StoreFaults {
            draw,
            window_ms,
            net_rng: rng("network"),
            conflicts: Mutex::new(Conflicts {
                rng: SimRng::derive(seed, "store-conflict", &[]),
                last: BTreeSet::new(),
            }),
            wake_rng: rng("wake-loss"),
            cancel_rng: rng("store-cancel"),
            transient_rng: rng("store-transient"),
            interleave_rng: rng("store-interleave"),
            scripted,
        }
    }

    /// Whether a scripted `conflict` window of `host` covers true time
    /// `t` (no draw: a scripted fault is certain).
    pub fn scripted_conflict(&self, host: &str, t: u64) -> bool {
        self.scripted.at(host, t)
    }

    /// Whether true time `t` is inside the fault window.
    pub fn in_window(&self, t: u64) -> bool {
        t < self.window_ms
    }

    /// Whether a request arriving in or out of the window is lost (the
    /// seed's `message_loss` rate, inside the window).
    pub fn request_lost(&self, in_window: bool) -> bool {
        self.net_chance(self.message_loss(in_window))
    }

    /// Whether the answer to a request executed in or out of the window is
    /// lost: `answer_loss`, then `message_loss` again (the answer is a
    /// message too), both inside the window only.
    pub fn answer_lost(&self, in_window: bool) -> bool {
        let loss = self.message_loss(in_window);
        in_window && (self.net_chance(self.draw.answer_loss) || self.net_chance(loss))
    }

    fn message_loss(&self, in_window: bool) -> f64 {
        if in_window {
            self.draw.message_loss
        } else {
            0.0
        }
    }

    /// Whether the store answers this request from `host` on `job`
    /// `Conflict` without applying it (the seed's `store_conflict` rate,
    /// inside the fault window). Never twice in a row for one host and job:
    /// the contention has passed by the next try.
    pub fn store_conflict(&self, host: &str, job: JobId, in_window: bool) -> bool {
        let p = self.draw.store_conflict;
        if p <= 0.0 {
            return false;
        }
        let mut c = lock(&self.conflicts);
        let key = (host.to_string(), job);
        if c.last.remove(&key) || !in_window {
            return false;
        }
        let hit = c.rng.chance(p);
        if hit {
            c.last.insert(key);
        }
        hit
    }

    /// Whether one wake-up datagram is lost (the seed's `wake_loss` rate,
    /// inside the fault window).
    pub fn wake_lost(&self, in_window: bool) -> bool {
        let p = self.draw.wake_loss;
        in_window && p > 0.0 && lock(&self.wake_rng).chance(p)
    }

    /// Whether the caller of one worker batch drops it mid-transaction
    /// (the seed's `store_cancel` rate, inside the window).
    pub fn store_cancelled(&self, in_window: bool) -> bool {
        let p = self.draw.store_cancel;
        in_window && p > 0.0 && lock(&self.cancel_rng).chance(p)
    }

    /// Whether a write the store did not answer `Conflict` still meets one
    /// failure its adapter retries (the seed's `store_conflict` rate, from
    /// a generator of its own, inside the window). Only a store that raises
    /// injected failures itself (PostgreSQL) shows anything of it, and then
    /// only by retrying: its answer is the same.
    pub fn store_transient(&self, in_window: bool) -> bool {
        let p = self.draw.store_conflict;
        in_window && p > 0.0 && lock(&self.transient_rng).chance(p)
    }

    /// Whether the store host defers one poll of a store call (a coin per
    /// poll; see `hosts::store`).
    pub fn defer_store_poll(&self) -> bool {
        lock(&self.interleave_rng).chance(0.5)
    }

    /// Draws from the network drop generator.
    fn net_chance(&self, p: f64) -> bool {
        p > 0.0 && lock(&self.net_rng).chance(p)
    }
}
