//! The soak's ledger, kept on the handler's side: which enqueued jobs ran,
//! when each first started, and whether any ran twice; and the check of
//! every pruned id against it (nothing pruned before it ran, nothing
//! pruned less than `R` after it started).
//!
//! Memory is bounded by `--jobs` and nothing else: one bit per enqueue
//! index (ran), one `u32` (first start, ms since the run began), and one
//! `(id, index)` pair per job to map a pruned id back to its index. The
//! payload of each job is its enqueue index, so the handler needs no map.

use leasehold_core::JobId;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::RwLock;
use std::time::Instant;

/// What the handler and the enqueuer have recorded.
pub struct Ledger {
    start: Instant,
    jobs: usize,
    /// Bit `i` set: the job of enqueue index `i` ran.
    ran: Vec<AtomicU64>,
    /// First start of each job, ms since `start`, plus one (0: not yet).
    started_ms: Vec<AtomicU32>,
    twice: AtomicU64,
    completed: AtomicU64,
    /// `(job id, enqueue index)`, sorted by id (checked as chunks arrive).
    ids: RwLock<Vec<(u64, u32)>>,
}

/// The check of the pruned ids so far.
#[derive(Clone, Debug, Default)]
pub struct PruneTally {
    /// Ids the pruner answered.
    pub pruned: u64,
    /// Pruned less than `R` after the job first started.
    pub early: u64,
    /// Pruned although the handler never ran it.
    pub not_run: u64,
    /// Ids the enqueuer never saw.
    pub unknown: u64,
    /// Smallest (prune answered − job first started), ms: at least `R`
    /// when nothing was pruned early.
    pub min_margin_ms: Option<u64>,
    /// `Store::prune` calls that answered an error.
    pub failed_calls: u64,
    /// `Store::prune` calls dropped before their answer (the Pruner's
    /// request timeout): their rows may have gone unseen.
    pub abandoned_calls: u64,
    /// Pruner wake-ups that ended in an error (retried after its backoff).
    pub failed_wake_ups: u64,
    /// The last error a call or wake-up answered.
    pub last_error: Option<String>,
}

impl Ledger {
    /// A ledger for `jobs` enqueues, timed from now.
    pub fn new(jobs: usize) -> Self {
        Ledger {
            start: Instant::now(),
            jobs,
            ran: (0..jobs.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            started_ms: (0..jobs).map(|_| AtomicU32::new(0)).collect(),
            twice: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            ids: RwLock::new(Vec::with_capacity(jobs)),
        }
    }

    /// The payload of the job of enqueue index `index`.
    pub fn payload(index: u32) -> Vec<u8> {
        index.to_le_bytes().to_vec()
    }

    /// Milliseconds since the run began.
    pub fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// The handler started a job with `payload`: marks it, counting a
    /// second start. Answers false for a payload that is no index.
    pub fn ran(&self, payload: &[u8]) -> bool {
        let Some(index) = payload
            .try_into()
            .ok()
            .map(u32::from_le_bytes)
            .filter(|&i| (i as usize) < self.jobs)
        else {
            return false;
        };
        let i = index as usize;
        let bit = 1u64 << (i % 64);
        if self.ran[i / 64].fetch_or(bit, Ordering::SeqCst) & bit != 0 {
            self.twice.fetch_add(1, Ordering::SeqCst);
            return true;
        }
        let at = u32::try_from(self.now_ms() + 1).unwrap_or(u32::MAX);
        self.started_ms[i].store(at, Ordering::SeqCst);
        self.completed.fetch_add(1, Ordering::SeqCst);
        true
    }

    /// Jobs that ran (first starts).
    pub fn completed(&self) -> u64 {
        self.completed.load(Ordering::SeqCst)
    }

    /// Second starts seen.
    pub fn twice(&self) -> u64 {
        self.twice.load(Ordering::SeqCst)
    }

    /// Enqueue indexes whose job never ran.
    pub fn missing(&self) -> u64 {
        (0..self.jobs)
            .filter(|&i| self.ran[i / 64].load(Ordering::SeqCst) & (1 << (i % 64)) == 0)
            .count() as u64
    }

    /// Jobs that first started after `since_ms` (ms since the run began).
    pub fn started_after(&self, since_ms: u64) -> u64 {
        self.started_ms
            .iter()
            .filter(|t| u64::from(t.load(Ordering::SeqCst)) > since_ms + 1)
            .count() as u64
    }

    /// The enqueuer's answer for the jobs of indexes `first..`: records
    /// their ids. Fails if they are not all above every id seen before
    /// (one enqueuer, so the store's ids only grow).
    pub fn enqueued(&self, ids: &[JobId], first: u32) -> Result<(), String> {
        let mut chunk: Vec<(u64, u32)> = ids
            .iter()
            .enumerate()
            .map(|(k, id)| (id.0, first + k as u32))
            .collect();
        chunk.sort_unstable();
        let mut all = self.ids.write().map_err(|_| "ledger poisoned")?;
        if let (Some(last), Some(next)) = (all.last(), chunk.first()) {
            if next.0 <= last.0 {
                return Err(format!("job id {} after {}: ids went back", next.0, last.0));
            }
        }
        all.extend(chunk);
        Ok(())
    }

    /// Checks `pruned`, answered `answered_ms` after the run began, with
    /// retention `retention_ms`, into `tally`. A job finished no earlier
    /// than it first started and the prune decided no later than it
    /// answered, so a margin below `R` is a job pruned early for certain.
    pub fn check_pruned(
        &self,
        pruned: &[JobId],
        answered_ms: u64,
        retention_ms: u64,
        tally: &mut PruneTally,
    ) {
        let Ok(ids) = self.ids.read() else {
            tally.unknown += pruned.len() as u64;
            return;
        };
        for id in pruned {
            tally.pruned += 1;
            let Ok(k) = ids.binary_search_by_key(&id.0, |p| p.0) else {
                tally.unknown += 1;
                continue;
            };
            let at = u64::from(self.started_ms[ids[k].1 as usize].load(Ordering::SeqCst));
            if at == 0 {
                tally.not_run += 1;
                continue;
            }
            let margin = answered_ms.saturating_sub(at - 1);
            if margin < retention_ms {
                tally.early += 1;
            }
            tally.min_margin_ms = Some(tally.min_margin_ms.map_or(margin, |m| m.min(margin)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_start_and_a_missing_job_are_counted() {
        let l = Ledger::new(130);
        for i in 0..129u32 {
            assert!(l.ran(&Ledger::payload(i)));
        }
        assert!(l.ran(&Ledger::payload(7)));
        assert!(!l.ran(&Ledger::payload(130)), "index past --jobs");
        assert!(!l.ran(b"junk"));
        assert_eq!((l.completed(), l.twice(), l.missing()), (129, 1, 1));
    }

    #[test]
    fn ids_must_grow_and_pruned_ids_are_judged_by_their_start() {
        let l = Ledger::new(4);
        l.enqueued(&[JobId(11), JobId(10)], 0).unwrap();
        assert!(l.enqueued(&[JobId(9)], 2).is_err(), "ids went back");
        l.enqueued(&[JobId(12), JobId(13)], 2).unwrap();
        l.ran(&Ledger::payload(0)); // id 11, started at ~0 ms
        let mut t = PruneTally::default();
        let now = l.now_ms();
        // Answered 60 s after it started: on time. Answered at once: early.
        l.check_pruned(&[JobId(11)], now + 60_000, 60_000, &mut t);
        assert_eq!((t.pruned, t.early), (1, 0));
        l.check_pruned(&[JobId(11)], now + 10, 60_000, &mut t);
        assert_eq!(t.early, 1);
        l.check_pruned(&[JobId(10), JobId(99)], now, 60_000, &mut t);
        assert_eq!((t.not_run, t.unknown, t.pruned), (1, 1, 4));
        assert!(t.min_margin_ms.unwrap() < 60_000);
    }
}
