//! [`TxFaults`]: faults a SQL adapter injects into its own transactions at
//! their commit point, when the simulator arms them. Production never arms
//! them; an unarmed hook costs one uncontended lock per transaction.
//!
//! Two faults, each taken by the next transaction that reaches its commit
//! point with every statement done:
//! - **stall**: the transaction signals that it got there and then waits
//!   forever, so its caller's future can be dropped mid-transaction, as a
//!   request timeout drops it. The adapter must then commit nothing and
//!   leave nothing locked for later writers.
//! - **failures**: the adapter makes its database raise the given error
//!   there (PostgreSQL: a serialization failure or a deadlock), so the
//!   transaction rolls back through the adapter's own retry path.
//!
//! Invariants: an armed stall is taken by at most one transaction, and a
//! failure count only goes down; [`TxFaults::disarm`] clears both.

use std::sync::{Mutex, MutexGuard};
use tokio::sync::oneshot;

/// What a transaction does at its commit point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtCommit {
    /// Commit.
    Commit,
    /// Make the database raise this SQLSTATE inside the transaction.
    Fail(&'static str),
}

#[derive(Default)]
struct Armed {
    /// Transactions still to fail (`u32::MAX`: every one until disarmed).
    failures: u32,
    sqlstate: &'static str,
    stall: Option<oneshot::Sender<()>>,
}

/// The hook (see the module docs).
#[derive(Default)]
pub struct TxFaults {
    armed: Mutex<Armed>,
}

impl std::fmt::Debug for TxFaults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = self.lock();
        f.debug_struct("TxFaults")
            .field("failures", &a.failures)
            .field("stall", &a.stall.is_some())
            .finish()
    }
}

impl TxFaults {
    fn lock(&self) -> MutexGuard<'_, Armed> {
        // A panic while holding the lock leaves a consistent value.
        self.armed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Arms a stall; the receiver fires when a transaction reaches its
    /// commit point and starts waiting there.
    pub fn arm_stall(&self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.lock().stall = Some(tx);
        rx
    }

    /// Makes the next `times` transactions (`None`: every one until
    /// disarmed) fail at their commit point with `sqlstate`.
    pub fn arm_failures(&self, times: Option<u32>, sqlstate: &'static str) {
        let mut a = self.lock();
        a.failures = times.unwrap_or(u32::MAX);
        a.sqlstate = sqlstate;
    }

    /// Clears every armed fault.
    pub fn disarm(&self) {
        *self.lock() = Armed::default();
    }

    /// Called by the adapter once a transaction's statements are done and
    /// before it commits. Never returns while a stall is armed.
    pub async fn at_commit(&self) -> AtCommit {
        let stall = {
            let mut a = self.lock();
            if a.failures > 0 {
                if a.failures != u32::MAX {
                    a.failures -= 1;
                }
                return AtCommit::Fail(a.sqlstate);
            }
            a.stall.take()
        };
        if let Some(reached) = stall {
            let _ = reached.send(());
            std::future::pending::<()>().await;
        }
        AtCommit::Commit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now<F: std::future::Future>(f: F) -> Option<F::Output> {
        let mut f = std::pin::pin!(f);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => Some(v),
            std::task::Poll::Pending => None,
        }
    }

    #[test]
    fn debug_shows_what_is_armed() {
        let f = TxFaults::default();
        assert_eq!(format!("{f:?}"), "TxFaults { failures: 0, stall: false }");
        let _rx = f.arm_stall();
        assert!(format!("{f:?}").contains("stall: true"), "{f:?}");
    }

    #[test]
    fn unarmed_commits() {
        assert_eq!(now(TxFaults::default().at_commit()), Some(AtCommit::Commit));
    }

    #[test]
    fn failures_count_down_then_commit() {
        let f = TxFaults::default();
        f.arm_failures(Some(2), "40001");
        assert_eq!(now(f.at_commit()), Some(AtCommit::Fail("40001")));
        assert_eq!(now(f.at_commit()), Some(AtCommit::Fail("40001")));
        assert_eq!(now(f.at_commit()), Some(AtCommit::Commit));
        f.arm_failures(None, "40P01");
        for _ in 0..5 {
            assert_eq!(now(f.at_commit()), Some(AtCommit::Fail("40P01")));
        }
        f.disarm();
        assert_eq!(now(f.at_commit()), Some(AtCommit::Commit));
    }

    #[test]
    fn a_stall_is_taken_once_and_signals() {
        let f = TxFaults::default();
        let mut reached = f.arm_stall();
        assert!(reached.try_recv().is_err());
        assert_eq!(now(f.at_commit()), None, "the stalled transaction waits");
        assert!(reached.try_recv().is_ok());
        assert_eq!(now(f.at_commit()), Some(AtCommit::Commit));
    }
}
