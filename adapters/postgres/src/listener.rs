//! Enqueue wake-ups over `LISTEN/NOTIFY`, with a bounded poll fallback.
//!
//! Two users: [`WorkListener`], a listener a caller drives itself, and
//! `PgWake`, the store's own background listener behind
//! [`leasehold_core::Store::work_available`], which wakes idle
//! [`leasehold_core::Worker`]s without any setup. Enqueue sends the
//! notification in its own statement; a release or sweep that makes a job
//! claimable now (or frees a slot of a limited queue) sends one through
//! [`notify_queues`]. A notification is a hint: the worker's poll still
//! finds work whose notification was lost, and work due in the future.

use crate::error;
use leasehold_core::{StoreError, WorkSignal};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgListener, PgPool, PgPoolOptions};
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::time::Instant;

/// Listens for enqueue notifications. Made by [`crate::PgStore::work_listener`].
///
/// A notification can be missed (for example across a reconnect), so a
/// caller must treat [`WorkListener::wait_for_work`] returning `false` as
/// "poll now": it is the bounded fallback, not proof that no work exists.
pub struct WorkListener {
    inner: PgListener,
}

impl WorkListener {
    pub(crate) async fn connect(pool: &PgPool, channel: &str) -> Result<Self, StoreError> {
        let mut inner = PgListener::connect_with(pool).await.map_err(error::map)?;
        inner.listen(channel).await.map_err(error::map)?;
        Ok(WorkListener { inner })
    }

    /// Waits until a job is enqueued on `queue` (answers `true`) or
    /// `max_wait` has passed (answers `false`: poll anyway).
    pub async fn wait_for_work(
        &mut self,
        queue: &str,
        max_wait: Duration,
    ) -> Result<bool, StoreError> {
        let deadline = Instant::now() + max_wait;
        // Bounded by the deadline: every pass either returns or waits less.
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            match tokio::time::timeout(left, self.inner.recv()).await {
                Err(_) => return Ok(false),
                Ok(Ok(n)) if n.payload() == queue => return Ok(true),
                Ok(Ok(_)) => continue,
                Ok(Err(e)) => return Err(error::map(e)),
            }
        }
    }
}

/// First wait before reconnecting a dropped wake listener.
pub const LISTEN_RETRY_FIRST: Duration = Duration::from_millis(50);
/// Longest wait between reconnect attempts of the wake listener (the
/// backoff doubles up to it, and resets after a successful `LISTEN`).
pub const LISTEN_RETRY_CAP: Duration = Duration::from_secs(5);
/// Longest a wake listener's connect (and `LISTEN`) may take before it
/// counts as failed and is retried after the backoff.
pub const LISTEN_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

const _: () = assert!(LISTEN_RETRY_FIRST.as_millis() < LISTEN_RETRY_CAP.as_millis());

/// Aborts the task when dropped, so a store's listener ends with the store.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The wake-ups behind [`leasehold_core::Store::work_available`] for a
/// [`crate::PgStore`]: one background task per store holds a `LISTEN`
/// connection of its own (not one of the pool's) and announces each
/// notified queue on an in-process [`WorkSignal`].
///
/// The task starts at the first `work_available` call made inside a tokio
/// runtime, and ends when the store is dropped or closed. After every
/// (re)connect it announces every queue, because enqueues committed while
/// it was not listening were never announced; between attempts it waits a
/// doubling backoff from [`LISTEN_RETRY_FIRST`] to [`LISTEN_RETRY_CAP`].
/// While it is down, workers fall back to their poll interval.
pub(crate) struct PgWake {
    signal: Arc<WorkSignal>,
    channel: String,
    opts: PgConnectOptions,
    task: OnceLock<AbortOnDrop>,
    closed: AtomicBool,
}

impl PgWake {
    pub(crate) fn new(pool: &PgPool, channel: &str) -> Self {
        PgWake {
            signal: Arc::new(WorkSignal::new()),
            channel: channel.to_string(),
            opts: (*pool.connect_options()).clone(),
            task: OnceLock::new(),
            closed: AtomicBool::new(false),
        }
    }

    /// Subscribes to `queue` (eagerly: see [`WorkSignal::subscribe`]) and
    /// starts the listener task if it is not running yet.
    pub(crate) fn work_available(&self, queue: &str) -> impl Future<Output = ()> + Send + 'static {
        let wait = self.signal.subscribe(queue);
        if self.task.get().is_none() && !self.closed.load(Ordering::Acquire) {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                self.task.get_or_init(|| {
                    let task =
                        listen_loop(self.opts.clone(), self.channel.clone(), self.signal.clone());
                    AbortOnDrop(rt.spawn(task).abort_handle())
                });
            }
        }
        wait
    }

    /// Stops the listener task for good (the store was closed).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        if let Some(t) = self.task.get() {
            t.0.abort();
        }
    }
}

/// Connects a one-connection pool and `LISTEN`s on `channel`, bounded by
/// [`LISTEN_CONNECT_TIMEOUT`].
async fn connect_listener(
    opts: &PgConnectOptions,
    channel: &str,
) -> Result<PgListener, sqlx::Error> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(LISTEN_CONNECT_TIMEOUT)
        .connect_lazy_with(opts.clone());
    let connect = async {
        let mut l = PgListener::connect_with(&pool).await?;
        l.listen(channel).await?;
        Ok(l)
    };
    match tokio::time::timeout(LISTEN_CONNECT_TIMEOUT, connect).await {
        Ok(r) => r,
        Err(_) => Err(sqlx::Error::PoolTimedOut),
    }
}

/// The listener task. It runs until aborted (its store dropped or closed);
/// every pass of the outer loop either waits for notifications or waits at
/// least the backoff, so a database that stays down costs one connect
/// attempt per [`LISTEN_RETRY_CAP`].
async fn listen_loop(opts: PgConnectOptions, channel: String, signal: Arc<WorkSignal>) {
    let mut backoff = LISTEN_RETRY_FIRST;
    loop {
        match connect_listener(&opts, &channel).await {
            Ok(mut listener) => {
                backoff = LISTEN_RETRY_FIRST;
                // Work committed before this LISTEN took effect was never
                // announced to us: every waiting worker claims once.
                signal.announce_all();
                // Ends when the connection fails for good; sqlx reconnects
                // a plainly dropped connection itself (`Ok(None)`).
                loop {
                    match listener.try_recv().await {
                        Ok(Some(n)) => signal.announce(n.payload()),
                        Ok(None) => {
                            tracing::debug!("wake listener reconnected; announcing every queue");
                            signal.announce_all();
                        }
                        Err(e) => {
                            tracing::debug!(error = %e, "wake listener lost its connection");
                            break;
                        }
                    }
                }
            }
            Err(e) => tracing::debug!(error = %e, ?backoff, "wake listener cannot connect"),
        }
        tokio::time::sleep(backoff).await;
        backoff = next_backoff(backoff);
    }
}

/// The wait after `backoff` failed again: doubled, up to
/// [`LISTEN_RETRY_CAP`].
fn next_backoff(backoff: Duration) -> Duration {
    (backoff * 2).min(LISTEN_RETRY_CAP)
}

/// Sends one `NOTIFY channel, queue` per queue in `queues`, inside the
/// caller's transaction (delivered at commit): for writes other than an
/// enqueue that make work claimable (see [`leasehold_core::wakes_workers`]).
pub(crate) async fn notify_queues(
    conn: &mut PgConnection,
    channel: &str,
    queues: &BTreeSet<&str>,
) -> Result<(), StoreError> {
    if queues.is_empty() {
        return Ok(());
    }
    let queues: Vec<&str> = queues.iter().copied().collect();
    crate::tx::gate("notify").await;
    sqlx::query("SELECT COUNT(pg_notify($1, q)) FROM unnest($2::text[]) AS q")
        .bind(channel)
        .bind(queues)
        .execute(&mut *conn)
        .await
        .map_err(error::map)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{next_backoff, LISTEN_RETRY_CAP, LISTEN_RETRY_FIRST};
    use std::time::Duration;

    /// A database that stays down is tried less and less often: 50 ms,
    /// 100 ms, … up to the cap, and then at the cap.
    #[test]
    fn the_reconnect_backoff_doubles_up_to_its_cap() {
        let mut b = LISTEN_RETRY_FIRST;
        let mut waits = vec![b];
        for _ in 0..10 {
            b = next_backoff(b);
            waits.push(b);
        }
        assert_eq!(waits[1], LISTEN_RETRY_FIRST * 2);
        assert_eq!(waits[2], LISTEN_RETRY_FIRST * 4);
        assert!(waits.windows(2).all(|w| w[1] >= w[0]), "{waits:?}");
        assert_eq!(*waits.last().expect("waits"), LISTEN_RETRY_CAP);
        assert_eq!(next_backoff(LISTEN_RETRY_CAP), LISTEN_RETRY_CAP);
        assert!(LISTEN_RETRY_FIRST > Duration::ZERO);
    }
}
