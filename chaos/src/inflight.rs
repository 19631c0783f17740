//! The in-flight board (CHAOS ONLY): which `Worker`s of a worker process
//! have a store call in flight, published in a 16-byte file for the
//! nemesis to read, so it can strike while several Workers' batches are in
//! the store's `BatchMerger` (`kill-merged`) or while Workers wait behind a
//! SQLite write transaction (`kill-writer-queued`).
//!
//! The worker process wraps each Worker's view of the shared store in a
//! counter (its `tracked.rs`): the board sees a call from when the Worker
//! sends it until its answer comes back or the Worker drops it. It cannot
//! see inside the merger (which calls share one transaction); the faults
//! report exactly what it saw.
//!
//! Layout: two little-endian `u64` bit masks, bit `k` for Worker `k`:
//! Workers with a `Store::batch` in flight, then Workers with any store
//! write (batch, renew, release) in flight. Rewritten with one `pwrite` on
//! every change, under a lock, so the file always holds the latest masks.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Size of the board file.
pub const BOARD_BYTES: usize = 16;

/// What kind of store call a Worker has in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// A `Store::batch` (its releases and claims): also a write.
    Batch,
    /// A renew or a single release.
    Write,
}

/// What the board showed at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Workers with a `Store::batch` in flight.
    pub batch: u64,
    /// Workers with any store write in flight.
    pub write: u64,
}

impl Snapshot {
    /// The Worker indexes in `mask`, as `w0,w2`.
    pub fn names(mask: u64) -> String {
        (0..64)
            .filter(|k| mask & (1 << k) != 0)
            .map(|k| format!("w{k}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[derive(Debug, Default)]
struct Counts {
    batch: Vec<u32>,
    write: Vec<u32>,
}

/// A process's board (see the module docs). Without a file it only counts.
#[derive(Debug)]
pub struct InFlightBoard {
    file: Option<File>,
    counts: Mutex<Counts>,
}

impl InFlightBoard {
    /// A board for `workers` Workers (at most 64), published to `path` if given.
    pub fn open(path: Option<&Path>, workers: usize) -> std::io::Result<Arc<Self>> {
        let file = path.map(File::create).transpose()?;
        let board = InFlightBoard {
            file,
            counts: Mutex::new(Counts {
                batch: vec![0; workers.min(64)],
                write: vec![0; workers.min(64)],
            }),
        };
        board.publish(&board.lock());
        Ok(Arc::new(board))
    }

    /// Worker `worker` sends a `call`; it is in flight until the guard drops.
    pub fn enter(self: &Arc<Self>, worker: usize, call: Call) -> InFlightGuard {
        self.change(worker, call, true);
        InFlightGuard {
            board: self.clone(),
            worker,
            call,
        }
    }

    /// What the board shows now.
    pub fn snapshot(&self) -> Snapshot {
        let c = self.lock();
        Snapshot {
            batch: mask(&c.batch),
            write: mask(&c.write),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        // Counts stay consistent even if a holder panicked.
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn change(&self, worker: usize, call: Call, up: bool) {
        let mut c = self.lock();
        let step = |v: &mut Vec<u32>| {
            if let Some(n) = v.get_mut(worker) {
                *n = if up { *n + 1 } else { n.saturating_sub(1) };
            }
        };
        step(&mut c.write);
        if call == Call::Batch {
            step(&mut c.batch);
        }
        self.publish(&c);
    }

    fn publish(&self, c: &Counts) {
        if let Some(f) = &self.file {
            let mut bytes = [0u8; BOARD_BYTES];
            bytes[..8].copy_from_slice(&mask(&c.batch).to_le_bytes());
            bytes[8..].copy_from_slice(&mask(&c.write).to_le_bytes());
            // Best effort: a lost update only blunts the nemesis's aim,
            // never a check.
            let _ = f.write_at(&bytes, 0);
        }
    }
}

fn mask(counts: &[u32]) -> u64 {
    counts
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .fold(0, |m, (k, _)| m | 1 << k)
}

/// A call in flight; dropping it (answered or abandoned) takes it off the board.
#[derive(Debug)]
pub struct InFlightGuard {
    board: Arc<InFlightBoard>,
    worker: usize,
    call: Call,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.board.change(self.worker, self.call, false);
    }
}

/// Reads a board file (`None` while it does not exist or is short).
pub fn read_board(path: &Path) -> Option<Snapshot> {
    let f = File::open(path).ok()?;
    let mut bytes = [0u8; BOARD_BYTES];
    f.read_exact_at(&mut bytes, 0).ok()?;
    let word =
        |r: std::ops::Range<usize>| u64::from_le_bytes(bytes[r].try_into().unwrap_or([0; 8]));
    Some(Snapshot {
        batch: word(0..8),
        write: word(8..16),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_shows_who_is_in_flight_until_the_guard_drops() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inflight");
        let board = InFlightBoard::open(Some(&path), 4).unwrap();
        assert_eq!(read_board(&path), Some(Snapshot::default()));
        let a = board.enter(0, Call::Batch);
        let b = board.enter(2, Call::Write);
        let c = board.enter(2, Call::Batch);
        let seen = read_board(&path).unwrap();
        assert_eq!((seen.batch, seen.write), (0b101, 0b101));
        assert_eq!(Snapshot::names(seen.batch), "w0,w2");
        drop(c);
        assert_eq!(read_board(&path).unwrap().batch, 0b001);
        assert_eq!(
            read_board(&path).unwrap().write,
            0b101,
            "w2's renew is still out"
        );
        drop((a, b));
        assert_eq!(read_board(&path), Some(Snapshot::default()));
        assert_eq!(board.snapshot(), Snapshot::default());
    }
}
