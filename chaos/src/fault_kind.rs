//! The kinds of fault the nemesis injects, and which store each applies to.
//!
//! Three kinds are aimed at the production shape (several `Worker`s per
//! process on one store): `kill-listener` cuts the process's LISTEN
//! connection, `kill-merged` kills a process while several of its Workers
//! have a `Store::batch` in flight (merged by the store's `BatchMerger`, or
//! queued for the next merged batch), `kill-writer-queued` kills a SQLite
//! process inside its write transaction while other Workers of it wait.

use crate::store_target::StoreTarget;

/// A kind of fault the nemesis injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum FaultKind {
    /// SIGKILL a worker process; a new one (fresh identity) starts later.
    Kill,
    /// SIGSTOP a worker process for longer than the lease, then SIGCONT.
    Pause,
    /// `pg_terminate_backend` every connection of a worker (PostgreSQL).
    TerminateBackend,
    /// Restart the PostgreSQL server in immediate mode.
    Restart,
    /// SIGKILL a worker while it holds SQLite's write lock, mid-transaction.
    KillWriter,
    /// `pg_terminate_backend` the LISTEN connection of a worker process
    /// (PostgreSQL): its Workers fall back to polling until it reconnects.
    KillListener,
    /// SIGKILL a worker process while at least two of its Workers have a
    /// `Store::batch` in flight (production shape).
    KillMerged,
    /// SIGKILL a worker process while it holds SQLite's write lock and at
    /// least two of its Workers have store writes in flight: one rides in
    /// that transaction, the others ride with it or wait behind it (SQLite,
    /// production shape).
    KillWriterQueued,
}

impl FaultKind {
    /// Every kind, in report order.
    pub const ALL: [FaultKind; 8] = [
        FaultKind::Kill,
        FaultKind::Pause,
        FaultKind::TerminateBackend,
        FaultKind::Restart,
        FaultKind::KillWriter,
        FaultKind::KillListener,
        FaultKind::KillMerged,
        FaultKind::KillWriterQueued,
    ];

    /// The flag value and report name.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Pause => "pause",
            FaultKind::TerminateBackend => "terminate-backend",
            FaultKind::Restart => "restart",
            FaultKind::KillWriter => "kill-writer",
            FaultKind::KillListener => "kill-listener",
            FaultKind::KillMerged => "kill-merged",
            FaultKind::KillWriterQueued => "kill-writer-queued",
        }
    }

    /// Whether this fault applies to `store`.
    pub fn applies_to(self, store: &StoreTarget) -> bool {
        let pg = matches!(store, StoreTarget::Postgres { .. });
        match self {
            FaultKind::Kill | FaultKind::Pause | FaultKind::KillMerged => true,
            FaultKind::TerminateBackend | FaultKind::Restart | FaultKind::KillListener => pg,
            FaultKind::KillWriter | FaultKind::KillWriterQueued => !pg,
        }
    }

    /// Whether this fault needs several `Worker`s in one process.
    pub fn needs_several_workers(self) -> bool {
        matches!(self, FaultKind::KillMerged | FaultKind::KillWriterQueued)
    }

    /// Whether this fault SIGKILLs its process (a replacement starts later).
    pub fn kills(self) -> bool {
        matches!(
            self,
            FaultKind::Kill
                | FaultKind::KillWriter
                | FaultKind::KillMerged
                | FaultKind::KillWriterQueued
        )
    }

    /// Whether this fault waits for a condition before it strikes, so the
    /// report counts how often it landed as aimed.
    pub fn is_aimed(self) -> bool {
        matches!(
            self,
            FaultKind::KillWriter
                | FaultKind::KillListener
                | FaultKind::KillMerged
                | FaultKind::KillWriterQueued
        )
    }
}
