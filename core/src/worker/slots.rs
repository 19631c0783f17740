//! A worker's slots: which handlers run, of which queue, and how many free
//! slots each queue may claim next. Pure (sans-IO): the worker's loop
//! drives it, and the exhaustive checker drives the same accounting.
//!
//! Invariants (each checked by `debug_assert!` where it could break):
//! - at most `concurrency` handlers run, and at most a queue's limit of
//!   that queue: [`Slots::plan`] never asks for more than is free;
//! - at most `2 · concurrency` lease tasks live: a task whose handler has
//!   finished frees its handler slot as soon as its release is queued, and
//!   keeps a task slot until its release is answered for sure (an unknown
//!   outcome keeps it: the task will retry);
//! - slots asked for by a claim in flight are reserved until it is
//!   answered ([`Slots::plan`] then [`Slots::unreserve`]), so concurrent
//!   claims never ask for the same slot twice;
//! - free slots go to the queues one at a time in turn, starting one queue
//!   further each plan, so no queue with free capacity is passed over
//!   while another takes every slot.

use super::config::WorkerConfig;
use crate::ids::{JobId, Token};
use std::collections::{BTreeMap, BTreeSet};

/// What a worker runs. See the module docs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Slots {
    /// Leases whose handler runs, with the index of their queue.
    running: BTreeMap<(JobId, Token), usize>,
    /// Running handlers per queue.
    per_queue: Vec<u32>,
    /// Slots per queue asked for by claims in flight.
    asked: Vec<u32>,
    /// Limit per queue (never above `concurrency`).
    limits: Vec<u32>,
    concurrency: u32,
    /// Lease tasks holding a task slot (running handlers plus those
    /// waiting for a release answer).
    tasks: BTreeSet<(JobId, Token)>,
    /// Lease tasks that have not reported their end.
    alive: u32,
    /// The queue offered the first free slot in the next plan.
    turn: usize,
    /// Frees a limited queue's slot twice (`queue-slot-freed-twice`).
    free_twice: bool,
}

impl Slots {
    /// Empty slots for `cfg`'s queues.
    pub fn new(cfg: &WorkerConfig) -> Slots {
        #[allow(unused_mut)]
        let mut limits: Vec<u32> = cfg
            .queues
            .iter()
            .map(|q| q.limit.min(cfg.concurrency))
            .collect();
        #[cfg(feature = "buggy-variants")]
        if cfg.variant == Some(crate::variants::Variant::FirstQueueLimitForAll) {
            let first = limits.first().copied().unwrap_or(cfg.concurrency);
            limits.iter_mut().for_each(|l| *l = first);
        }
        Slots {
            running: BTreeMap::new(),
            per_queue: vec![0; limits.len()],
            asked: vec![0; limits.len()],
            limits,
            concurrency: cfg.concurrency,
            tasks: BTreeSet::new(),
            alive: 0,
            turn: 0,
            #[cfg(feature = "buggy-variants")]
            free_twice: cfg.variant == Some(crate::variants::Variant::QueueSlotFreedTwice),
            #[cfg(not(feature = "buggy-variants"))]
            free_twice: false,
        }
    }

    /// How many leases to ask of each queue now: `(queue index, max)`,
    /// only queues asked for at least one. The slots are reserved until
    /// [`Slots::unreserve`].
    pub fn plan(&mut self) -> Vec<(usize, u32)> {
        let reserved: u32 = self.asked.iter().sum();
        let handlers = self.running.len() as u32 + reserved;
        let tasks = self.tasks.len() as u32 + reserved;
        let mut free = (self.concurrency.saturating_sub(handlers))
            .min((2 * self.concurrency).saturating_sub(tasks));
        let n = self.limits.len();
        let mut asks = vec![0u32; n];
        // One slot per queue per round; bounded by `free` rounds with a
        // grant, and a round without one ends the loop.
        while free > 0 {
            let mut granted = false;
            for k in 0..n {
                let q = (self.turn + k) % n;
                if free > 0 && self.per_queue[q] + self.asked[q] + asks[q] < self.limits[q] {
                    asks[q] += 1;
                    free -= 1;
                    granted = true;
                }
            }
            if !granted {
                break;
            }
        }
        let out: Vec<(usize, u32)> = (0..n)
            .map(|k| (self.turn + k) % n)
            .filter(|&q| asks[q] > 0)
            .map(|q| (q, asks[q]))
            .collect();
        if !out.is_empty() {
            self.turn = (self.turn + 1) % n.max(1);
        }
        for &(q, k) in &out {
            self.asked[q] += k;
        }
        out
    }

    /// The claims of `asks` (from [`Slots::plan`]) were answered: their
    /// slots are no longer reserved (granted leases then [`Slots::start`]).
    pub fn unreserve(&mut self, asks: &[(usize, u32)]) {
        for &(q, k) in asks {
            debug_assert!(self.asked[q] >= k, "unreserving more than asked");
            self.asked[q] = self.asked[q].saturating_sub(k);
        }
    }

    /// A lease of queue `q` was granted: its handler runs. Answers `false`
    /// (and changes nothing) for a lease this worker already runs: only a
    /// broken store grants one lease twice, and a second lease task for the
    /// same token would only run its handler twice.
    pub fn start(&mut self, q: usize, job: JobId, token: Token) -> bool {
        if self.running.contains_key(&(job, token)) || self.tasks.contains(&(job, token)) {
            return false;
        }
        self.running.insert((job, token), q);
        self.per_queue[q] += 1;
        self.tasks.insert((job, token));
        self.alive += 1;
        debug_assert!(self.per_queue[q] <= self.limits[q], "queue over its limit");
        debug_assert!(
            self.running.len() as u32 <= self.concurrency,
            "over concurrency"
        );
        debug_assert!(
            self.tasks.len() as u32 <= 2 * self.concurrency,
            "too many lease tasks"
        );
        true
    }

    /// The handler of this lease has finished (its release is queued).
    /// Repeats (a retried release) change nothing.
    pub fn handler_done(&mut self, job: JobId, token: Token) {
        if let Some(q) = self.running.remove(&(job, token)) {
            let limited = self.limits[q] < self.concurrency;
            let freed = if self.free_twice && limited { 2 } else { 1 };
            self.per_queue[q] = self.per_queue[q].saturating_sub(freed);
        }
    }

    /// The release of this lease was answered for sure: its task ends
    /// without another store call, so its task slot is free now (before
    /// the task reports its end), and the next claim may use it.
    pub fn answered(&mut self, job: JobId, token: Token) {
        self.handler_done(job, token);
        self.tasks.remove(&(job, token));
    }

    /// The lease task ended (released or abandoned).
    pub fn end(&mut self, job: JobId, token: Token) {
        self.answered(job, token);
        debug_assert!(self.alive > 0, "an end without a start");
        self.alive = self.alive.saturating_sub(1);
    }

    /// Lease tasks that have not reported their end.
    pub fn alive(&self) -> u32 {
        self.alive
    }

    /// Lease tasks holding a task slot.
    pub fn tasks(&self) -> u32 {
        self.tasks.len() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(concurrency: u32, queues: &[(&str, u32)]) -> Slots {
        let mut b = WorkerConfig::builder("w", queues[0].0).concurrency(concurrency);
        for (q, limit) in queues {
            b = b.queue(*q, *limit);
        }
        Slots::new(&b.build().expect("config"))
    }

    /// Plans and at once gives the reservation back.
    fn ask(s: &mut Slots) -> Vec<(usize, u32)> {
        let asks = s.plan();
        s.unreserve(&asks);
        asks
    }

    /// A lease granted again while its task waits for its release (only a
    /// broken store does that) is not started twice.
    #[test]
    fn a_lease_whose_release_is_waiting_is_not_started_again() {
        let mut s = slots(2, &[("q", 2)]);
        assert!(s.start(0, JobId(1), Token(1)));
        assert!(!s.start(0, JobId(1), Token(1)), "running");
        s.handler_done(JobId(1), Token(1));
        assert!(!s.start(0, JobId(1), Token(1)), "its release waits");
        s.answered(JobId(1), Token(1));
        assert!(s.start(0, JobId(1), Token(2)), "a new token is a new lease");
    }

    #[test]
    fn one_queue_asks_for_every_free_slot() {
        let mut s = slots(4, &[("q", 4)]);
        let asks = s.plan();
        assert_eq!(asks, [(0, 4)]);
        // Reserved while in flight: a second plan asks for nothing.
        assert!(s.plan().is_empty());
        s.unreserve(&asks);
        s.start(0, JobId(1), Token(1));
        assert_eq!(s.plan(), [(0, 3)]);
    }

    #[test]
    fn a_lease_granted_twice_runs_once() {
        // A broken store (the catalogue's claim-without-cas) may grant a
        // lease the worker already runs: no second task, no slot taken.
        let mut s = slots(4, &[("q", 4)]);
        let asks = s.plan();
        s.unreserve(&asks);
        assert!(s.start(0, JobId(1), Token(1)));
        assert!(!s.start(0, JobId(1), Token(1)));
        assert_eq!(s.plan(), [(0, 3)]);
        assert_eq!(s.alive(), 1);
    }

    #[test]
    fn free_slots_are_shared_in_turn_within_limits() {
        let mut s = slots(5, &[("a", 4), ("b", 1), ("c", 2)]);
        let first = s.plan();
        assert_eq!(first, [(0, 2), (1, 1), (2, 2)]);
        s.unreserve(&first);
        // The next plan starts one queue further.
        let second = s.plan();
        assert_eq!(second, [(1, 1), (2, 2), (0, 2)]);
        s.unreserve(&second);
        for i in 0..4 {
            s.start(0, JobId(i), Token(1));
        }
        // `a` is at its limit: the last free slot goes elsewhere.
        let next = ask(&mut s);
        assert_eq!(next.iter().map(|a| a.1).sum::<u32>(), 1);
        assert!(next.iter().all(|&(q, _)| q != 0), "{next:?}");
    }

    #[test]
    fn a_queued_release_frees_the_handler_slot_but_not_the_task_slot() {
        let mut s = slots(2, &[("q", 2)]);
        s.start(0, JobId(1), Token(1));
        s.start(0, JobId(2), Token(1));
        assert!(ask(&mut s).is_empty());
        s.handler_done(JobId(1), Token(1));
        s.handler_done(JobId(1), Token(1)); // a retry changes nothing
        assert_eq!(ask(&mut s), [(0, 1)]);
        s.start(0, JobId(3), Token(1));
        s.handler_done(JobId(2), Token(1));
        s.handler_done(JobId(3), Token(1));
        // Three tasks alive (two releasing): one more at most.
        assert_eq!(ask(&mut s), [(0, 1)]);
        s.end(JobId(1), Token(1));
        assert_eq!(s.tasks(), 2);
        assert_eq!(ask(&mut s), [(0, 2)]);
        // A release answered for sure frees the task slot at once; the
        // task's own end later changes nothing.
        s.answered(JobId(2), Token(1));
        assert_eq!(s.tasks(), 1);
        s.end(JobId(2), Token(1));
        assert_eq!(s.tasks(), 1);
    }

    /// Claims asked and not yet answered count against their queue's limit,
    /// even while handler slots are free.
    #[test]
    fn claims_in_flight_count_against_their_queue_limit() {
        let mut s = slots(4, &[("q", 2)]);
        assert_eq!(s.plan(), [(0, 2)]);
        assert!(s.plan().is_empty(), "two asked, the limit is two");
        s.unreserve(&[(0, 2)]);
        assert_eq!(ask(&mut s), [(0, 2)]);
    }

    /// The last free slot goes to one queue, even when the others have
    /// room in the same round.
    #[test]
    fn the_last_free_slot_is_asked_of_one_queue_only() {
        let mut s = slots(1, &[("a", 1), ("b", 1), ("c", 1)]);
        assert_eq!(s.plan(), [(0, 1)]);
        assert!(s.plan().is_empty(), "the one slot is asked for");
    }

    /// A running lease counts against its queue's limit until its handler
    /// is done.
    #[test]
    fn running_leases_count_against_their_queue_limit() {
        let mut s = slots(4, &[("q", 2)]);
        assert!(s.start(0, JobId(1), Token(1)));
        assert_eq!(ask(&mut s), [(0, 1)], "one of two running");
        assert!(s.start(0, JobId(2), Token(1)));
        assert!(ask(&mut s).is_empty(), "two of two running");
        s.handler_done(JobId(1), Token(1));
        assert_eq!(ask(&mut s), [(0, 1)]);
    }

    /// Lease tasks alive are bounded by twice the concurrency: as many
    /// releasing as running, and no more.
    #[test]
    fn as_many_tasks_may_release_as_run() {
        let mut s = slots(4, &[("q", 4)]);
        for j in 1..=4 {
            s.start(0, JobId(j), Token(1));
            s.handler_done(JobId(j), Token(1));
        }
        // Four releasing: four more may run (8 = 2 x 4 tasks).
        assert_eq!(ask(&mut s), [(0, 4)]);
        for j in 5..=7 {
            s.start(0, JobId(j), Token(1));
            s.handler_done(JobId(j), Token(1));
        }
        // Seven tasks alive: one more, whatever the free handler slots.
        assert_eq!(ask(&mut s), [(0, 1)]);
        s.start(0, JobId(8), Token(1));
        assert!(ask(&mut s).is_empty());
        assert_eq!(s.tasks(), 8);
    }
}
