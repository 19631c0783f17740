//! Two processes on one SQLite file, one holding the write lock: the
//! setting of the tests that prove a call answers from a read while
//! another process writes, or waits for the lock when it must write.
//!
//! The lock is held for [`HOLD`]; a call that answers within
//! [`READ_LIMIT`] did not wait for it, and one that answers after
//! [`HeldWriteLock::release`] returned did.

use crate::lock_hold::answered_after_release;
use leasehold_core::{ManualStoreClock, Policy};
use leasehold_sqlite::{Durability, SqliteStore};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the other process holds the write lock.
pub const HOLD: Duration = Duration::from_millis(1_000);
/// An answer from a read, whoever holds the write lock: slack for a loaded
/// machine, far below [`HOLD`].
pub const READ_LIMIT: Duration = Duration::from_millis(250);

/// The store under test and another process's store on the same new file
/// (migrated), on the same clock when one is given.
pub struct TwoProcesses {
    /// The store under test.
    pub store: Arc<SqliteStore>,
    /// Another process's store, which takes the write lock.
    pub other: SqliteStore,
    /// Removed last, after both stores.
    _dir: tempfile::TempDir,
}

/// Opens [`TwoProcesses`] on a new file in a new temp directory.
pub async fn two_processes(clock: Option<ManualStoreClock>) -> TwoProcesses {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jobs.db");
    let mut builder = SqliteStore::builder(&path)
        .policy(Policy::default())
        .durability(Durability::Normal);
    let mut other = SqliteStore::builder(&path);
    if let Some(clock) = clock {
        builder = builder.clock(clock.clone());
        other = other.clock(clock);
    }
    let store = builder.open().await.expect("open");
    store.migrate().await.expect("migrate");
    let other = other.open().await.expect("open other");
    TwoProcesses {
        store: Arc::new(store),
        other,
        _dir: dir,
    }
}

/// The other process's open `BEGIN IMMEDIATE` transaction.
pub struct HeldWriteLock {
    tx: sqlx::Transaction<'static, sqlx::Sqlite>,
    held_at: Instant,
}

/// Takes the write lock from `other`.
pub async fn hold_write_lock(other: &SqliteStore) -> HeldWriteLock {
    let tx = other
        .pool()
        .begin_with("BEGIN IMMEDIATE")
        .await
        .expect("the other process takes the write lock");
    HeldWriteLock {
        tx,
        held_at: Instant::now(),
    }
}

impl HeldWriteLock {
    /// Starts `call`, releases the lock once [`HOLD`] has passed since it
    /// was taken, and returns `call`'s output with whether it answered only
    /// after the release (as a call that needs the lock must).
    pub async fn release<T: Send + 'static>(
        self,
        call: impl Future<Output = T> + Send + 'static,
    ) -> (T, bool) {
        let tx = self.tx;
        let let_go = async move { tx.rollback().await.expect("release the lock") };
        answered_after_release(call, self.held_at, HOLD, let_go).await
    }
}
