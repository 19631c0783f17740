//! The store paths a scenario opts into (`faults.batch_parts`,
//! `faults.single_cancel`, `faults.conflict_on`), decided at the store
//! host: the generator that orders a batch's parts, the one that cancels
//! single requests at their commit point, and which writes beyond a row's
//! renew, release or cancel the `store_conflict` rate reaches.
//!
//! Each path draws from a generator of its own, derived from the seed by
//! name, and only when the scenario turns it on, so a scenario without
//! these options draws exactly as before they existed.

use crate::machine::recorder::lock;
use leasehold_core::JobId;
use leasehold_model::config::{BatchParts, ConflictOn, SimConfig};
use leasehold_model::rng::SimRng;
use leasehold_model::wire::WireOp;
use std::sync::Mutex;

/// The store host's opted-in paths and their generators.
pub struct StorePaths {
    /// Orders the parts of each batch (`batch_parts = "drawn"`).
    parts: Option<Mutex<SimRng>>,
    /// The drawn rate of single cancellations and their generator.
    single_cancel: Option<(f64, Mutex<SimRng>)>,
    /// Whether `store_conflict` reaches every write.
    every_write: bool,
}

/// Keys under which a conflict on a write naming no one job is never
/// drawn twice in a row for one host (no job has these ids).
const CLAIM_CONFLICT_KEY: JobId = JobId(u64::MAX - 1);
const SWEEP_CONFLICT_KEY: JobId = JobId(u64::MAX - 2);
const ENQUEUE_CONFLICT_KEY: JobId = JobId(u64::MAX - 3);

impl StorePaths {
    /// The paths `cfg` turns on, with generators derived from `seed`.
    pub fn of(cfg: &SimConfig, seed: u64) -> Self {
        let f = &cfg.faults;
        let rng = |name: &str| Mutex::new(SimRng::derive(seed, name, &[]));
        let single_cancel = (f.single_cancel.hi > 0.0).then(|| {
            let mut r = SimRng::derive(seed, "single-cancel", &[]);
            let p = r.range_f64(f.single_cancel.lo, f.single_cancel.hi);
            (p, Mutex::new(r))
        });
        StorePaths {
            parts: (f.batch_parts == BatchParts::Drawn).then(|| rng("batch-parts")),
            single_cancel,
            every_write: f.conflict_on == ConflictOn::EveryWrite,
        }
    }

    /// A generator for the order of one batch's parts, when the scenario
    /// draws it (`None`: list order).
    pub fn part_order(&self) -> Option<SimRng> {
        self.parts.as_ref().map(|r| SimRng::new(lock(r).next_u64()))
    }

    /// Whether `store_conflict` reaches one part of a batch (only on a
    /// store whose batch runs its parts as separate calls).
    pub fn conflicts_reach_parts(&self) -> bool {
        self.every_write
    }

    /// The key under which a write that is not a row's renew, release or
    /// cancel may be answered `Conflict`: a claim, a sweep or an enqueue,
    /// when `conflict_on = "every-write"`.
    pub fn conflict_key(&self, op: &WireOp) -> Option<JobId> {
        if !self.every_write {
            return None;
        }
        match op {
            WireOp::Claim(_) => Some(CLAIM_CONFLICT_KEY),
            WireOp::Sweep(..) => Some(SWEEP_CONFLICT_KEY),
            WireOp::Enqueue(_) => Some(ENQUEUE_CONFLICT_KEY),
            _ => None,
        }
    }

    /// Whether the caller of this single request drops it at the store's
    /// commit point (a renew, a claim or a sweep, at the drawn
    /// `single_cancel` rate, inside the fault window).
    pub fn single_cancelled(&self, op: &WireOp, in_window: bool) -> bool {
        let cancellable = matches!(op, WireOp::Renew(_) | WireOp::Claim(_) | WireOp::Sweep(..));
        match &self.single_cancel {
            Some((p, rng)) if cancellable && in_window => lock(rng).chance(*p),
            _ => false,
        }
    }
}
