//! Which transactions of an interleaved group the statement scheduler may
//! choose next (`interleave.rs` draws one of them with the seed).
//!
//! Why a rule beyond "any transaction at its gate": the store host records
//! the calls of a group in the order they took effect, and the reference
//! model (I11) replays them in that order, judging every answer and every
//! row image read back right after a call. A transaction that decided at a
//! `SKIP LOCKED` scan ([`Step::Decides`](leasehold_core::statement_gate::Step))
//! takes effect there, but its rows change only at its commit: another
//! transaction committing in between would be recorded after it while its
//! answer and its row images show the rows before it (issue 47, PostgreSQL
//! seed 3: a fire answered with the job a claim had decided on, its image
//! still pending). So the order of commits must follow the order of
//! decisions.
//!
//! The rules, in order:
//! 1. **Locks.** While a transaction waits on a lock the database reports,
//!    only the transactions holding what it waits for are chosen, so no
//!    second transaction starts waiting on the same holder and the
//!    database never chooses which waiter it wakes.
//! 2. **Commit order.** While a transaction that decided has not committed,
//!    no transaction that decided later, or has not decided, is chosen at
//!    its commit, except one the decided transaction waits on (its commit
//!    frees the decided one). Any other step stays free: what a later
//!    transaction reads or writes meanwhile is either skipped by the
//!    decided one's scan (rows it locks) or waits on its row locks.
//! 3. **No stall.** When rule 2 leaves nothing to choose (the only
//!    transactions rule 1 allows are held back at their commit), the
//!    earliest open decided transaction at its gate is chosen instead: it
//!    holds the locks of what it decided, so it goes on to its commit. If
//!    it is not at its gate either, rule 2 is dropped for that step, so
//!    a group never stalls (a recorded order may then disagree with the
//!    database, which I11 reports: a finding, never a hang).
//!
//! SQLite's adapter has no decision steps (its writes hold the store's
//! write lock for their whole transaction), so rule 2 never applies there.

use leasehold_core::statement_gate::{BEGIN, COMMIT};
use tokio::sync::oneshot;

/// Where one transaction of a group stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Status {
    /// Running a step (or, at first, to its first gate).
    Running,
    /// At its gate, before the statement named.
    Parked(&'static str),
    /// Its adapter answered a lock held by another transaction of the
    /// group (SQLite); chosen again once `ended` transactions have ended.
    Blocked { at: &'static str, ended: usize },
    /// Waiting on a lock these database sessions hold (PostgreSQL).
    Waits(Vec<i64>),
    /// Its call is answered.
    Done,
}

/// One transaction (one call) of a group, as the scheduler sees it.
pub(super) struct Tx {
    pub(super) status: Status,
    pub(super) session: Option<i64>,
    pub(super) go: Option<oneshot::Sender<()>>,
    /// Whether the gate it is parked at is a decision step.
    pub(super) decides: bool,
    /// The step of the first decision step of its current try.
    pub(super) decided: Option<u64>,
    /// Where it took effect: the step of its commit (or of the decision
    /// step before it), or, for a call that committed nothing, the last
    /// step taken when it ended (`answer_order` in `interleave.rs`).
    pub(super) point: Option<u64>,
    /// Whether its current lock wait is in the order already.
    pub(super) wait_logged: bool,
    /// Running the statement of its first decision (see [`Tx::waits`]).
    deciding: bool,
    /// Its decision waited on a lock: it takes effect once it is granted,
    /// when the transaction next reaches its gate.
    decides_on_park: bool,
}

impl Tx {
    pub(super) fn new() -> Self {
        Tx {
            status: Status::Running,
            session: None,
            go: None,
            decides: false,
            decided: None,
            point: None,
            wait_logged: false,
            deciding: false,
            decides_on_park: false,
        }
    }

    /// Chosen to take step `n` from the gate it is parked at.
    ///
    /// Points are on a doubled scale: step `n` is `2n`, and `2n + 1` is
    /// "after step `n`, before the next": where a decision that waited
    /// on a lock freed at step `n` takes effect ([`Tx::parked`]).
    pub(super) fn chosen(&mut self, at: &'static str, n: u64) {
        if at == BEGIN {
            // A new try: what an earlier try decided is gone.
            self.decided = None;
            self.decides_on_park = false;
        } else if self.decides {
            if self.decided.is_none() && !self.decides_on_park {
                self.decided = Some(2 * n);
                self.deciding = true;
            }
        } else if at == COMMIT {
            self.point = Some(self.decided.unwrap_or(2 * n));
        }
        self.status = Status::Running;
        self.decides = false;
        self.wait_logged = false;
    }

    /// Reached its gate again, `taken` steps chosen so far.
    pub(super) fn parked(&mut self, taken: u64) {
        if std::mem::take(&mut self.decides_on_park) {
            self.decided = Some(2 * taken + 1);
        }
        self.deciding = false;
    }

    /// The database reports it waiting on a lock these sessions hold.
    ///
    /// A decision that waits (a `FOR UPDATE` on a row another transaction
    /// holds) decides only once the lock is granted, after the holder's
    /// commit: it no longer counts as taken where it was chosen (else the
    /// holder, committing after that step, would be recorded after a
    /// transaction that saw its commit).
    pub(super) fn waits(&mut self, holders: Vec<i64>) {
        if std::mem::take(&mut self.deciding) {
            self.decided = None;
            self.decides_on_park = true;
        }
        self.status = Status::Waits(holders);
    }

    /// Its call ended, `taken` steps chosen so far: a call that committed
    /// nothing took effect among the steps before (`answer_order`).
    pub(super) fn ended(&mut self, taken: u64) {
        let after_wait = u64::from(std::mem::take(&mut self.decides_on_park));
        self.point.get_or_insert(2 * taken + after_wait);
        self.deciding = false;
        self.status = Status::Done;
    }

    /// Decided in its current try and not committed yet (nor ended): the
    /// step it decided at.
    fn open_decision(&self) -> Option<u64> {
        match (self.decided, self.point, &self.status) {
            (_, _, Status::Done) | (_, Some(_), _) => None,
            (d, None, _) => d,
        }
    }

    fn waits_on(&self, other: &Tx) -> bool {
        match (&self.status, other.session) {
            (Status::Waits(h), Some(s)) => h.contains(&s),
            _ => false,
        }
    }
}

/// The transactions the scheduler may choose (see the module docs), in
/// index order.
pub(super) fn candidates(txs: &[Tx]) -> Vec<usize> {
    let ready = ready_by_locks(txs);
    let ordered: Vec<usize> = ready
        .iter()
        .copied()
        .filter(|&j| !commit_held_back(txs, j))
        .collect();
    if !ordered.is_empty() || ready.is_empty() {
        return ordered;
    }
    let earliest = (0..txs.len())
        .filter(|&i| matches!(txs[i].status, Status::Parked(_)))
        .filter_map(|i| txs[i].open_decision().map(|d| (d, i)))
        .min();
    match earliest {
        Some((_, i)) => vec![i],
        None => ready,
    }
}

/// Rule 1: those some lock waiter waits for, if any waits; else every one
/// at its gate, and those SQLite blocked once another has ended since.
fn ready_by_locks(txs: &[Tx]) -> Vec<usize> {
    let ended = txs.iter().filter(|t| t.status == Status::Done).count();
    let holders: Vec<i64> = txs
        .iter()
        .filter_map(|t| match &t.status {
            Status::Waits(h) => Some(h.iter().copied()),
            _ => None,
        })
        .flatten()
        .collect();
    (0..txs.len())
        .filter(|&i| {
            let ready = match txs[i].status {
                Status::Parked(_) => true,
                Status::Blocked { ended: e, .. } => ended > e,
                _ => false,
            };
            ready && (holders.is_empty() || txs[i].session.is_some_and(|s| holders.contains(&s)))
        })
        .collect()
}

/// Rule 2: whether `j`, at its commit, must wait for an open decision
/// made before its own (or before it, when it made none).
fn commit_held_back(txs: &[Tx], j: usize) -> bool {
    if txs[j].status != Status::Parked(COMMIT) {
        return false;
    }
    let own = txs[j].decided.unwrap_or(u64::MAX);
    txs.iter()
        .enumerate()
        .any(|(i, t)| i != j && t.open_decision().is_some_and(|d| d < own) && !t.waits_on(&txs[j]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tx(status: Status, session: Option<i64>) -> Tx {
        Tx {
            status,
            session,
            ..Tx::new()
        }
    }

    fn decided(status: Status, session: Option<i64>, at: u64) -> Tx {
        Tx {
            decided: Some(at),
            ..tx(status, session)
        }
    }

    #[test]
    fn only_the_holders_of_a_waited_lock_are_chosen() {
        let txs = vec![
            tx(Status::Parked("select rows"), Some(10)),
            tx(Status::Waits(vec![12]), Some(11)),
            tx(Status::Parked("commit"), Some(12)),
            tx(Status::Parked("begin"), None),
        ];
        assert_eq!(candidates(&txs), [2]);
        let free = vec![
            tx(Status::Parked("select rows"), Some(10)),
            tx(Status::Running, Some(11)),
            tx(Status::Parked("begin"), None),
            tx(Status::Done, Some(12)),
        ];
        assert_eq!(candidates(&free), [0, 2]);
    }

    #[test]
    fn a_blocked_transaction_waits_for_another_to_end() {
        let mut txs = vec![
            tx(Status::Parked("commit"), None),
            tx(
                Status::Blocked {
                    at: "write lock",
                    ended: 0,
                },
                None,
            ),
        ];
        assert_eq!(candidates(&txs), [0]);
        txs[0].status = Status::Done;
        assert_eq!(candidates(&txs), [1]);
    }

    /// Seed 3's shape: a claim decided at step 4 and stands before its
    /// update; a fire at its commit must wait, its other steps need not.
    #[test]
    fn no_commit_passes_an_earlier_open_decision() {
        let mut txs = vec![
            decided(Status::Parked("update rows"), Some(10), 4),
            tx(Status::Parked(COMMIT), Some(11)),
            tx(Status::Parked("fire reads"), Some(12)),
        ];
        assert_eq!(candidates(&txs), [0, 2]);
        // A transaction that decided later is held back as well.
        txs[2] = decided(Status::Parked(COMMIT), Some(12), 6);
        assert_eq!(candidates(&txs), [0]);
        // One that decided earlier is not.
        txs[2] = decided(Status::Parked(COMMIT), Some(12), 2);
        assert_eq!(candidates(&txs), [0, 2]);
        // Once the decided one committed, the commit is free.
        txs[2] = tx(Status::Parked("fire reads"), Some(12));
        txs[0].point = Some(4);
        txs[0].status = Status::Done;
        assert_eq!(candidates(&txs), [1, 2]);
        // A new try forgets what the last try decided.
        let mut retry = decided(Status::Parked(BEGIN), Some(10), 4);
        retry.decides = false;
        retry.chosen(BEGIN, 9);
        assert_eq!(retry.open_decision(), None);
    }

    /// The decided transaction waits on the lock of one at its commit:
    /// that commit frees it, so it is chosen.
    #[test]
    fn the_commit_a_decision_waits_on_goes_first() {
        let txs = vec![
            decided(Status::Waits(vec![11]), Some(10), 4),
            tx(Status::Parked(COMMIT), Some(11)),
        ];
        assert_eq!(candidates(&txs), [1]);
    }

    /// A third transaction waits on one held back at its commit: the
    /// earliest open decision runs on instead of stalling the group, and
    /// with none at its gate the commit goes (never a stall).
    #[test]
    fn a_held_back_holder_lets_the_earlier_decision_run() {
        let mut txs = vec![
            decided(Status::Parked("update rows"), Some(10), 4),
            tx(Status::Parked(COMMIT), Some(11)),
            tx(Status::Waits(vec![11]), Some(12)),
        ];
        assert_eq!(candidates(&txs), [0]);
        txs[0].status = Status::Running;
        assert_eq!(candidates(&txs), [1]);
    }
}
