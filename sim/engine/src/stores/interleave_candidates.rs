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
//! 3. **Claims after what may free rows.** While a transaction that
//!    decided has not committed and its decision was not a claim's (a
//!    sweep's scan, a release's or renew's row lock, a batch carrying
//!    releases), no transaction is chosen at a claim's decision step
//!    ([`Step::Claims`](leasehold_core::statement_gate::Step)). Its
//!    `SKIP LOCKED` scan would skip the rows the other locked, which may
//!    become claimable at its commit (a sweep returns an expired lease to
//!    `pending`), while the order of decisions records the other first:
//!    the claim's answer would leave out a row the history shows it as
//!    claimable, and the reference model reports I11 on a correct store
//!    (issue 47: seeds 5 and 8 of bug 31's scenario, claims answered no
//!    lease beside a sweep recorded before them). Claims among themselves
//!    stay free: one that skips rows another claim locked is recorded
//!    after it, and sees them taken.
//! 4. **No stall.** When rule 2 leaves nothing to choose (the only
//!    transactions rule 1 allows are held back at their commit), the
//!    earliest open decided transaction at its gate is chosen instead: it
//!    holds the locks of what it decided, so it goes on to its commit. If
//!    it is not at its gate either, rules 2 and 3 are dropped for that step, so
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
    /// Whether that decision step is a claim's ([`Step::Claims`]).
    ///
    /// [`Step::Claims`]: leasehold_core::statement_gate::Step
    pub(super) claims: bool,
    /// Whether its decision in the current try was a claim's.
    decided_claims: bool,
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
            claims: false,
            decided_claims: false,
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
                self.decided_claims = self.claims;
                self.deciding = true;
            }
        } else if at == COMMIT {
            self.point = Some(self.decided.unwrap_or(2 * n));
        }
        self.status = Status::Running;
        self.decides = false;
        self.claims = false;
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
        .filter(|&j| !commit_held_back(txs, j) && !claim_held_back(txs, j))
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

/// Rule 3: whether `j`, at a claim's decision step, must wait for an open
/// decision that was not a claim's.
fn claim_held_back(txs: &[Tx], j: usize) -> bool {
    if !(txs[j].claims && matches!(txs[j].status, Status::Parked(_))) {
        return false;
    }
    txs.iter()
        .enumerate()
        .any(|(i, t)| i != j && t.open_decision().is_some() && !t.decided_claims)
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

    /// Seeds 5 and 8 of bug 31's scenario on the correct store: a sweep
    /// decided at step 4 (it locks an expired lease it will return to
    /// `pending`); a claim at its scan must wait for the sweep's commit,
    /// else it skips the row the history shows it as claimable. Another
    /// claim's open decision holds no claim back.
    #[test]
    fn a_claim_scan_waits_for_an_open_sweep_but_not_for_a_claim() {
        let claim_at_scan = |session| Tx {
            decides: true,
            claims: true,
            ..tx(Status::Parked("scan"), Some(session))
        };
        let mut txs = vec![
            decided(Status::Parked(COMMIT), Some(10), 4),
            claim_at_scan(11),
            tx(Status::Parked(BEGIN), Some(12)),
        ];
        assert_eq!(candidates(&txs), [0, 2]);
        // The sweep committed: the claim scans.
        txs[0].point = Some(4);
        txs[0].status = Status::Done;
        assert_eq!(candidates(&txs), [1, 2]);
        // A claim decided at step 4 instead: the other claim scans.
        let mut claim = decided(Status::Parked(COMMIT), Some(10), 4);
        claim.decided_claims = true;
        txs[0] = claim;
        assert_eq!(candidates(&txs), [0, 1, 2]);
        // Chosen at its scan, a claim's decision is marked as one.
        let mut t = claim_at_scan(13);
        t.chosen("scan", 7);
        assert_eq!((t.decided, t.decided_claims), (Some(14), true));
        // The sweep waits on a lock the claim holds: nothing stalls, the
        // claim goes.
        let txs = vec![
            decided(Status::Waits(vec![11]), Some(10), 4),
            claim_at_scan(11),
        ];
        assert_eq!(candidates(&txs), [1]);
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
