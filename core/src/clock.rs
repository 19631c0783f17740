//! Clocks and the runtime seam.
//!
//! Nothing in the core or the worker runtime reads `std::time` or tokio's
//! clock directly. Workers and sweepers measure durations on a [`Runtime`]
//! (their host's monotonic clock) and sleep and spawn through it, so the
//! simulator can give every host its own skewed, drifting clock. Stores read
//! their lease clock through a [`StoreClock`].

use crate::time::{Millis, StoreTime};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A host's monotonic clock, timer and task spawner.
pub trait Runtime: Clone + Send + Sync + 'static {
    /// Milliseconds on this host's monotonic clock since an arbitrary origin.
    /// Never goes backwards.
    fn now(&self) -> Millis;
    /// Completes after `d` has passed on this host's monotonic clock.
    fn sleep(&self, d: Millis) -> BoxFuture<()>;
    /// Completes once this host's monotonic clock reads `at` or more (at
    /// once if it already does).
    ///
    /// The worker arms every deadline it owes (a renew, a retry) with
    /// this, not with `sleep(at - now())`: [`Runtime::now`] reads whole
    /// milliseconds, floored, so a wait counted from that reading starts
    /// up to a millisecond after the reading it was counted from and ends
    /// up to a millisecond past `at` (a madsim seed, whose clock moves
    /// between a task's polls, sent a renew 1 ms past its due time that
    /// way). The default does exactly that, which is right for a runtime
    /// whose clock is not the timer's own (one that shifts or jumps its
    /// readings); a runtime that can, arms the timer at `at` itself.
    fn sleep_until(&self, at: Millis) -> BoxFuture<()> {
        self.sleep(at.saturating_sub(self.now()))
    }
    /// Runs `task` concurrently on this host.
    fn spawn(&self, task: BoxFuture<()>);
    /// This host's wall clock (it may jump). Never used to decide lease
    /// validity: for logs, and for the catalogue's buggy variants.
    fn wall(&self) -> StoreTime;
}

/// [`Runtime`] on tokio's clock and executor (production, and tests with
/// tokio's paused time, where it is deterministic).
#[derive(Clone, Debug)]
pub struct TokioRuntime {
    origin: tokio::time::Instant,
}

impl TokioRuntime {
    /// A runtime whose monotonic origin is the moment of this call.
    pub fn new() -> Self {
        TokioRuntime {
            // The one clock read of the production runtime: its origin.
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Default for TokioRuntime {
    fn default() -> Self {
        Self::new()
    }
}

impl Runtime for TokioRuntime {
    fn now(&self) -> Millis {
        Millis(self.origin.elapsed().as_millis() as u64)
    }
    fn sleep(&self, d: Millis) -> BoxFuture<()> {
        Box::pin(tokio::time::sleep(d.to_std()))
    }
    fn sleep_until(&self, at: Millis) -> BoxFuture<()> {
        // The instant at which `now()` first reads `at`: exact, where a
        // wait from a floored reading would end up to 1 ms late.
        match self.origin.checked_add(at.to_std()) {
            Some(deadline) => Box::pin(tokio::time::sleep_until(deadline)),
            None => Box::pin(std::future::pending()),
        }
    }
    fn spawn(&self, task: BoxFuture<()>) {
        tokio::spawn(task);
    }
    fn wall(&self) -> StoreTime {
        SystemStoreClock.now()
    }
}

/// The store's lease clock.
pub trait StoreClock: Send + Sync + 'static {
    /// The store's wall clock now.
    fn now(&self) -> StoreTime;
}

/// The operating system's wall clock, as a store clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemStoreClock;

impl StoreClock for SystemStoreClock {
    fn now(&self) -> StoreTime {
        // The store clock is a wall clock by definition (spec §2).
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        StoreTime(since.as_millis() as i64)
    }
}

/// A store clock that moves only when told to (tests, the simulator).
#[derive(Clone, Debug, Default)]
pub struct ManualStoreClock(Arc<AtomicI64>);

impl ManualStoreClock {
    /// A clock reading `start`.
    pub fn new(start: StoreTime) -> Self {
        ManualStoreClock(Arc::new(AtomicI64::new(start.0)))
    }
    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Millis) {
        self.0.fetch_add(d.0 as i64, Ordering::SeqCst);
    }
    /// Sets the clock (it may step backwards, like an NTP correction).
    pub fn set(&self, t: StoreTime) {
        self.0.store(t.0, Ordering::SeqCst);
    }
}

impl StoreClock for ManualStoreClock {
    fn now(&self) -> StoreTime {
        StoreTime(self.0.load(Ordering::SeqCst))
    }
}

impl<F: Fn() -> StoreTime + Send + Sync + 'static> StoreClock for F {
    fn now(&self) -> StoreTime {
        self()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The production runtime's wall clock is the system's (for logs):
    /// not a constant, and after this code was written.
    #[tokio::test(flavor = "current_thread")]
    async fn the_tokio_runtime_reads_the_system_wall_clock() {
        let wall = TokioRuntime::new().wall();
        let system = SystemStoreClock.now();
        assert!(wall.0 > 1_750_000_000_000, "{wall:?}");
        assert!(system.0.abs_diff(wall.0) < 60_000, "{wall:?} vs {system:?}");
    }

    /// A deadline fires while the clock reads it, even when the clock was
    /// read most of a millisecond after a whole one. A wait counted from
    /// that floored reading (`sleep(5 - now())`) fires while the clock
    /// reads 6 here: tokio's paused clock jumps in whole ms from the
    /// instant it stands at, as its timer wheel counts whole ms.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_deadline_fires_while_the_clock_reads_it() {
        let start = tokio::time::Instant::now();
        let rt = TokioRuntime::new();
        tokio::time::advance(std::time::Duration::from_micros(900)).await;
        assert_eq!(rt.now(), Millis(0));
        rt.sleep_until(Millis(5)).await;
        assert_eq!(rt.now(), Millis(5));
        let took = start.elapsed();
        assert!(
            took < std::time::Duration::from_millis(6),
            "fired {took:?} after the origin, past the clock's 5 ms"
        );
        // A deadline already read fires at once.
        rt.sleep_until(Millis(2)).await;
        assert_eq!(start.elapsed(), took);
    }
}
