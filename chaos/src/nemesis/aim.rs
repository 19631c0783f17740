//! Aimed kills: wait (bounded) for the moment a kill is meant to hit, as
//! seen from outside the process, then let the nemesis strike, landed or
//! not. What was seen goes into the fault's note; whether it was seen
//! into its `landed`, which the report counts per kind.

use crate::inflight::{read_board, Snapshot};
use crate::signals::holds_wal_write_lock;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// Longest an aimed kill waits for its moment before it strikes anyway.
pub const AIM_WAIT: Duration = Duration::from_millis(1_000);
/// How often the moment is looked for.
const AIM_POLL: Duration = Duration::from_micros(500);

/// The moment an aimed kill waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aim {
    /// The process holds SQLite's write lock (`/proc/locks`).
    WriteLock,
    /// At least two of its Workers have a `Store::batch` in flight (its
    /// in-flight board): the store's `BatchMerger` runs them in one
    /// transaction or queues the later ones for the next merged batch.
    MergedBatches,
    /// It holds SQLite's write lock and at least two of its Workers have
    /// store writes in flight: one is in that transaction, the others ride
    /// in it or wait behind it.
    WriteLockWithWaiters,
}

/// What an aimed kill saw before it struck.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sighting {
    /// Whether the moment came within [`AIM_WAIT`].
    pub landed: bool,
    /// What was seen, for the fault log.
    pub note: String,
}

/// Waits for `aim` on process `pid`, whose in-flight board is `board`
/// (`shm`: the SQLite `-shm` file, for the write lock).
pub async fn await_moment(aim: Aim, pid: u32, board: &Path, shm: Option<&Path>) -> Sighting {
    let deadline = Instant::now() + AIM_WAIT;
    let holds_lock = || {
        let Some(shm) = shm else { return false };
        std::fs::metadata(shm)
            .ok()
            .is_some_and(|m| holds_wal_write_lock(pid, m.ino()).unwrap_or(false))
    };
    // Bounded by the deadline.
    while Instant::now() < deadline {
        let seen = read_board(board).unwrap_or_default();
        let hit = match aim {
            Aim::WriteLock => holds_lock(),
            Aim::MergedBatches => seen.batch.count_ones() >= 2,
            // The cheap test first: /proc/locks only when Workers wait.
            Aim::WriteLockWithWaiters => seen.write.count_ones() >= 2 && holds_lock(),
        };
        if hit {
            return Sighting {
                landed: true,
                note: describe(aim, seen),
            };
        }
        tokio::time::sleep(AIM_POLL).await;
    }
    let wanted = match aim {
        Aim::WriteLock => "no write transaction",
        Aim::MergedBatches => "fewer than 2 Workers with a batch in flight",
        Aim::WriteLockWithWaiters => "no write transaction with 2 Workers' writes in flight",
    };
    Sighting {
        landed: false,
        note: format!("{wanted} seen within {AIM_WAIT:?}"),
    }
}

fn describe(aim: Aim, seen: Snapshot) -> String {
    match aim {
        Aim::WriteLock => "mid-transaction".into(),
        Aim::MergedBatches => format!("batches of {} in flight", Snapshot::names(seen.batch)),
        Aim::WriteLockWithWaiters => format!(
            "mid-transaction, writes of {} in flight",
            Snapshot::names(seen.write)
        ),
    }
}
