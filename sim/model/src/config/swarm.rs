//! The swarm's fault ranges: the `[faults]` table, from which each seed
//! draws its own rates.

use super::range::Range;
use super::store_paths::{BatchParts, ConflictOn};
use crate::duration::{Dur, SignedDur};
use serde::{Deserialize, Serialize};

/// Swarm fault ranges: each seed draws its own rate from every range, then
/// faults happen only inside `[0, window)`; after it everything heals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Faults {
    /// Faults happen only before this time.
    pub window: Dur,
    /// Worker crashes per worker per minute.
    pub worker_crash_rate: Range<f64>,
    /// Sweeper crashes per sweeper per minute.
    pub sweeper_crash_rate: Range<f64>,
    /// Scheduler crashes per scheduler per minute.
    pub scheduler_crash_rate: Range<f64>,
    /// Time until a crashed host restarts.
    pub restart_after: Range<Dur>,
    /// Store crashes per minute.
    pub store_crash_rate: Range<f64>,
    /// Partitions per non-store host per minute (from the store).
    pub partition_rate: Range<f64>,
    /// Partition length.
    pub partition_len: Range<Dur>,
    /// Share of partitions that are one-way.
    pub oneway_share: f64,
    /// Pauses per non-store host per minute.
    pub pause_rate: Range<f64>,
    /// Pause length.
    pub pause_len: Range<Dur>,
    /// Probability a message is lost.
    pub message_loss: Range<f64>,
    /// Probability the store's answer is lost after the request committed.
    pub answer_loss: Range<f64>,
    /// Probability the store answers a renew, release or cancel `Conflict`
    /// without applying it: contention that the adapter's own retries could
    /// not clear, as PostgreSQL answers it. Never twice in a row to one
    /// host for one job (contention passes), so a worker that retries
    /// promptly always gets through; one that gives up loses its lease.
    pub store_conflict: Range<f64>,
    /// Probability a wake-up the store host sends a worker process (work
    /// became available) is lost (inside the window). Workers must find the
    /// work by polling.
    #[serde(skip_serializing_if = "is_never")]
    pub wake_loss: Range<f64>,
    /// Probability a worker's batch is cancelled by its caller while the
    /// store is inside its transaction, just before the commit (inside the
    /// window). Nothing of it may commit, and later writers must get
    /// through; the caller gets no answer.
    #[serde(skip_serializing_if = "is_never")]
    pub store_cancel: Range<f64>,
    /// Probability a renew, a claim sent alone or a sweep is dropped by its
    /// caller at the store's commit point (inside the window), as a request
    /// timeout drops it: nothing of it may commit, and the caller gets no
    /// answer. Drawn from a generator of its own.
    #[serde(skip_serializing_if = "is_never")]
    pub single_cancel: Range<f64>,
    /// The order in which a batch's parts finish (see [`BatchParts`]).
    #[serde(skip_serializing_if = "BatchParts::is_list")]
    pub batch_parts: BatchParts,
    /// Which writes `store_conflict` reaches (see [`ConflictOn`]).
    #[serde(skip_serializing_if = "ConflictOn::is_row_writes")]
    pub conflict_on: ConflictOn,
    /// Extra delay of held (late, reordered) messages, per host per minute.
    pub hold_rate: Range<f64>,
    /// How long messages are held.
    pub hold_len: Range<Dur>,
    /// Wall-clock offset of each host at start.
    pub clock_offset: Range<SignedDur>,
    /// Drift of each host's clocks, in ppm (negative = slow).
    pub clock_drift_ppm: Range<i64>,
    /// Wall-clock steps per host per minute.
    pub clock_step_rate: Range<f64>,
    /// Size of a wall-clock step.
    pub clock_step: Range<SignedDur>,
}

impl Faults {
    /// The ranges of rates (events per host per minute), each with its
    /// path in the config file, in the order they are checked.
    pub fn rates(&self) -> [(&'static str, &Range<f64>); 8] {
        [
            ("faults.worker_crash_rate", &self.worker_crash_rate),
            ("faults.sweeper_crash_rate", &self.sweeper_crash_rate),
            ("faults.scheduler_crash_rate", &self.scheduler_crash_rate),
            ("faults.store_crash_rate", &self.store_crash_rate),
            ("faults.partition_rate", &self.partition_rate),
            ("faults.pause_rate", &self.pause_rate),
            ("faults.hold_rate", &self.hold_rate),
            ("faults.clock_step_rate", &self.clock_step_rate),
        ]
    }

    /// The ranges of probabilities, each with its path in the config file,
    /// in the order they are checked.
    pub fn probabilities(&self) -> [(&'static str, &Range<f64>); 6] {
        [
            ("faults.message_loss", &self.message_loss),
            ("faults.answer_loss", &self.answer_loss),
            ("faults.store_conflict", &self.store_conflict),
            ("faults.wake_loss", &self.wake_loss),
            ("faults.store_cancel", &self.store_cancel),
            ("faults.single_cancel", &self.single_cancel),
        ]
    }
}

impl Default for Faults {
    fn default() -> Self {
        let none = Range::exactly(0.0);
        Faults {
            window: Dur::secs(300),
            worker_crash_rate: none,
            sweeper_crash_rate: none,
            scheduler_crash_rate: none,
            restart_after: Range::new(Dur::secs(1), Dur::secs(30)),
            store_crash_rate: none,
            partition_rate: none,
            partition_len: Range::new(Dur::secs(1), Dur::secs(60)),
            oneway_share: 0.0,
            pause_rate: none,
            pause_len: Range::new(Dur::secs(1), Dur::secs(30)),
            message_loss: none,
            answer_loss: none,
            store_conflict: none,
            wake_loss: none,
            store_cancel: none,
            single_cancel: none,
            batch_parts: BatchParts::List,
            conflict_on: ConflictOn::RowWrites,
            hold_rate: none,
            hold_len: Range::new(Dur::ms(100), Dur::secs(5)),
            clock_offset: Range::exactly(SignedDur(0)),
            clock_drift_ppm: Range::exactly(0),
            clock_step_rate: none,
            clock_step: Range::new(SignedDur(-30_000), SignedDur(30_000)),
        }
    }
}

fn is_never(r: &Range<f64>) -> bool {
    r.lo == 0.0 && r.hi == 0.0
}
