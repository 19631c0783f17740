//! The nemesis schedule: which fault, when, on which worker slot. A pure
//! function of the seed and the run's shape, so a seed replays it exactly.
//! What the processes happen to be doing when a fault lands (the
//! interleaving) is not replayed: real processes and a real database
//! schedule themselves.

use crate::config::FaultKind;
use crate::rng::Rng;
use leasehold_core::Millis;
use std::fmt;
use std::time::Duration;

/// Most faults in one schedule.
pub const MAX_FAULTS: usize = 100_000;
/// No fault before the workers have had this long to start.
pub const WARM_UP: Duration = Duration::from_millis(1_000);
/// Time planned for a PostgreSQL restart; no other restart inside it.
pub const RESTART_SPAN: Duration = Duration::from_secs(5);
/// Shortest time a killed worker stays down before its replacement starts.
pub const MIN_DOWN: Duration = Duration::from_millis(200);

/// One fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// SIGKILL the slot's process; start a new one `down_for` later.
    Kill {
        /// The worker slot.
        slot: u32,
        /// How long the slot stays empty.
        down_for: Duration,
    },
    /// SIGSTOP the slot's process, SIGCONT after `len` (longer than the lease).
    Pause {
        /// The worker slot.
        slot: u32,
        /// How long it stays stopped.
        len: Duration,
    },
    /// Terminate the slot's PostgreSQL backends.
    TerminateBackend {
        /// The worker slot.
        slot: u32,
    },
    /// Restart PostgreSQL in immediate mode.
    Restart,
    /// SIGKILL the slot's process while it holds SQLite's write lock.
    KillWriter {
        /// The worker slot.
        slot: u32,
        /// How long the slot stays empty.
        down_for: Duration,
    },
    /// Terminate the slot's LISTEN connection (PostgreSQL).
    KillListener {
        /// The worker slot.
        slot: u32,
    },
    /// SIGKILL the slot's process while several of its Workers have a
    /// `Store::batch` in flight.
    KillMerged {
        /// The worker slot.
        slot: u32,
        /// How long the slot stays empty.
        down_for: Duration,
    },
    /// SIGKILL the slot's process inside its SQLite write transaction while
    /// other Workers of it wait.
    KillWriterQueued {
        /// The worker slot.
        slot: u32,
        /// How long the slot stays empty.
        down_for: Duration,
    },
}

impl Fault {
    /// Its kind.
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::Kill { .. } => FaultKind::Kill,
            Fault::Pause { .. } => FaultKind::Pause,
            Fault::TerminateBackend { .. } => FaultKind::TerminateBackend,
            Fault::Restart => FaultKind::Restart,
            Fault::KillWriter { .. } => FaultKind::KillWriter,
            Fault::KillListener { .. } => FaultKind::KillListener,
            Fault::KillMerged { .. } => FaultKind::KillMerged,
            Fault::KillWriterQueued { .. } => FaultKind::KillWriterQueued,
        }
    }

    /// The worker slot it targets, if any.
    pub fn slot(&self) -> Option<u32> {
        match self {
            Fault::Kill { slot, .. }
            | Fault::Pause { slot, .. }
            | Fault::TerminateBackend { slot }
            | Fault::KillWriter { slot, .. }
            | Fault::KillListener { slot }
            | Fault::KillMerged { slot, .. }
            | Fault::KillWriterQueued { slot, .. } => Some(*slot),
            Fault::Restart => None,
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Kill { slot, down_for } => {
                write!(f, "kill worker {slot}, down {}ms", down_for.as_millis())
            }
            Fault::Pause { slot, len } => {
                write!(f, "pause worker {slot} for {}ms", len.as_millis())
            }
            Fault::TerminateBackend { slot } => write!(f, "terminate backends of worker {slot}"),
            Fault::Restart => f.write_str("restart postgres (immediate)"),
            Fault::KillWriter { slot, down_for } => write!(
                f,
                "kill worker {slot} mid-transaction, down {}ms",
                down_for.as_millis()
            ),
            Fault::KillListener { slot } => {
                write!(f, "terminate the LISTEN backend of worker {slot}")
            }
            Fault::KillMerged { slot, down_for } => write!(
                f,
                "kill worker {slot} with merged batches in flight, down {}ms",
                down_for.as_millis()
            ),
            Fault::KillWriterQueued { slot, down_for } => write!(
                f,
                "kill worker {slot} mid-transaction with Workers waiting, down {}ms",
                down_for.as_millis()
            ),
        }
    }
}

/// A fault at a time after the start of the fault window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Planned {
    /// When, from the start of the fault window.
    pub at: Duration,
    /// What.
    pub fault: Fault,
}

/// The shape of the run the schedule is drawn for.
#[derive(Clone, Debug)]
pub struct PlanInputs {
    /// Worker slots.
    pub workers: u32,
    /// The fault window.
    pub duration: Duration,
    /// The lease (pauses last longer).
    pub lease: Millis,
    /// The sweep interval.
    pub sweep: Millis,
    /// Mean gap between faults.
    pub fault_every: Duration,
    /// The kinds in play.
    pub kinds: Vec<FaultKind>,
}

/// Draws the schedule for `seed`. Faults never target a slot that is
/// already stopped or down, at most half the slots (at least one) are
/// impaired at once, pauses end inside the window, and restarts never
/// overlap.
pub fn plan(seed: u64, p: &PlanInputs) -> Vec<Planned> {
    let mut rng = Rng::new(seed, 1);
    let mut out = Vec::new();
    if p.kinds.is_empty() || p.workers == 0 {
        return out;
    }
    let lease = Duration::from_millis(p.lease.0);
    let sweep = Duration::from_millis(p.sweep.0);
    let max_impaired = (p.workers / 2).max(1) as usize;
    // When each slot is healthy again, and when the store is.
    let mut busy_until = vec![Duration::ZERO; p.workers as usize];
    let mut store_busy_until = Duration::ZERO;
    let every = p.fault_every.as_millis() as u64;
    let mut t = WARM_UP;
    while out.len() < MAX_FAULTS {
        t += Duration::from_millis(rng.range(every / 2, every + every / 2).max(1));
        if t >= p.duration {
            break;
        }
        let Some(&kind) = rng.pick(&p.kinds) else {
            break;
        };
        let free: Vec<u32> = (0..p.workers)
            .filter(|&s| busy_until[s as usize] <= t)
            .collect();
        let impaired = p.workers as usize - free.len();
        let slot = rng.pick(&free).copied();
        let fault = match (kind, slot) {
            (FaultKind::Restart, _) => {
                if store_busy_until > t || t + RESTART_SPAN > p.duration {
                    continue;
                }
                store_busy_until = t + RESTART_SPAN;
                Fault::Restart
            }
            (FaultKind::TerminateBackend, Some(slot)) => Fault::TerminateBackend { slot },
            (FaultKind::KillListener, Some(slot)) => Fault::KillListener { slot },
            (_, None) => continue,
            (_, Some(_)) if impaired >= max_impaired => continue,
            (FaultKind::Pause, Some(slot)) => {
                let base = lease + sweep + Duration::from_millis(1_000);
                let len = base + Duration::from_millis(rng.range(0, lease.as_millis() as u64));
                if t + len > p.duration {
                    continue;
                }
                busy_until[slot as usize] = t + len;
                Fault::Pause { slot, len }
            }
            (
                FaultKind::Kill
                | FaultKind::KillWriter
                | FaultKind::KillMerged
                | FaultKind::KillWriterQueued,
                Some(slot),
            ) => {
                let down_for = Duration::from_millis(
                    rng.range(MIN_DOWN.as_millis() as u64, lease.as_millis() as u64),
                );
                busy_until[slot as usize] = t + down_for;
                match kind {
                    FaultKind::Kill => Fault::Kill { slot, down_for },
                    FaultKind::KillWriter => Fault::KillWriter { slot, down_for },
                    FaultKind::KillMerged => Fault::KillMerged { slot, down_for },
                    _ => Fault::KillWriterQueued { slot, down_for },
                }
            }
        };
        out.push(Planned { at: t, fault });
    }
    out
}

/// FNV-1a of the schedule's text: two runs with the same seed and shape
/// print the same hash.
pub fn schedule_hash(plan: &[Planned]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in plan {
        for b in format!("{} {}\n", p.at.as_millis(), p.fault).bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(kinds: Vec<FaultKind>) -> PlanInputs {
        PlanInputs {
            workers: 4,
            duration: Duration::from_secs(60),
            lease: Millis(3_000),
            sweep: Millis(500),
            fault_every: Duration::from_millis(1_000),
            kinds,
        }
    }

    #[test]
    fn a_seed_replays_its_schedule_and_another_seed_does_not() {
        let p = inputs(vec![FaultKind::Kill, FaultKind::Pause, FaultKind::Restart]);
        assert_eq!(plan(5, &p), plan(5, &p));
        assert_eq!(schedule_hash(&plan(5, &p)), schedule_hash(&plan(5, &p)));
        assert_ne!(schedule_hash(&plan(5, &p)), schedule_hash(&plan(6, &p)));
        assert!(plan(5, &p).len() > 20, "{:?}", plan(5, &p));
    }

    #[test]
    fn pauses_outlast_the_lease_and_never_hit_an_impaired_slot() {
        let p = inputs(vec![FaultKind::Kill, FaultKind::Pause]);
        for seed in 0..50 {
            let s = plan(seed, &p);
            let mut busy: Vec<Duration> = vec![Duration::ZERO; 4];
            for f in &s {
                assert!(f.at >= WARM_UP && f.at < p.duration);
                if let Some(slot) = f.fault.slot() {
                    assert!(busy[slot as usize] <= f.at, "seed {seed}: {s:?}");
                }
                let impaired = busy.iter().filter(|b| **b > f.at).count();
                assert!(
                    impaired <= 2,
                    "seed {seed}: at most half the slots impaired"
                );
                match f.fault {
                    Fault::Pause { slot, len } => {
                        assert!(len > Duration::from_millis(3_000 + 500));
                        assert!(f.at + len <= p.duration);
                        busy[slot as usize] = f.at + len;
                    }
                    Fault::Kill { slot, down_for } => busy[slot as usize] = f.at + down_for,
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn restarts_never_overlap() {
        let p = inputs(vec![FaultKind::Restart]);
        let s = plan(9, &p);
        assert!(!s.is_empty());
        for w in s.windows(2) {
            assert!(w[1].at >= w[0].at + RESTART_SPAN, "{s:?}");
        }
    }
}
