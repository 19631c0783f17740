//! The core's [`Runtime`] for one simulated host, and the pause gate.
//!
//! ## Time
//! True time is `turmoil::sim_elapsed()` (never tokio's or std's `Instant`,
//! never `std::time`). A host's monotonic and wall clocks are functions of
//! true time ([`ClockModel`]). `sleep(d)` asks the model for the first true
//! instant at which the local clock has advanced by `d`, and waits for it
//! with a tokio timer on the host's runtime (turmoil drives that runtime's
//! paused clock in lockstep with simulated time).
//!
//! ## Pauses (GC stalls)
//! A paused host runs nothing: every task of the host (its main task and
//! everything spawned through [`Runtime::spawn`]) is wrapped in a [`Gate`].
//! Whenever a gated task is woken during a pause window (a timer fired,
//! bytes arrived), the gate parks it until the pause ends instead of
//! polling it. Timers and network I/O therefore complete late, all at once,
//! when the host resumes with its stale beliefs; its clocks kept running.
//! Pause windows are known in advance, so the gate is deterministic. The
//! host's network stack (turmoil's, below the gate) still buffers arriving
//! messages, as a kernel would.
//!
//! ## Determinism (tokio_unstable)
//! turmoil seeds each host's tokio runtime only under `--cfg
//! tokio_unstable`. Without it, tokio's thread-local generator is seeded
//! from process randomness; on the current-thread runtime turmoil uses, it
//! is read only by unbiased `select!` and by `watch` channels (which of 8
//! notifiers a waiter parks on). The core uses `biased;` in every `select!`
//! and so does the simulator; the only `watch` channels are the core's
//! stop signal (one waiter each) and shutdown (raised by a scripted
//! `shutdown` fault, whose woken handlers then return in (job, token) order,
//! see `hosts/handler.rs`). So no wake-up order depends on that generator, and the sim
//! runs deterministically *without* `tokio_unstable`; the determinism tests
//! check it, including across processes.
//!
//! ## Panics
//! A panic in a spawned task would be swallowed by tokio; the gate catches
//! it and reports it to the runner, which fails the run as a harness error.

use super::shared::{Shared, TaskSlot};
use crate::clock::ClockModel;
use crate::faults::paused_until;
use leasehold_core::{BoxFuture, Millis, Runtime, StoreTime};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

/// True time now, from inside a simulated host, in whole milliseconds.
pub fn true_now_ms() -> u64 {
    true_now().as_millis() as u64
}

/// True time now, from inside a simulated host.
pub fn true_now() -> Duration {
    turmoil::sim_elapsed().expect("true time is only read inside a simulated host")
}

/// Waits until true time `t` (ms).
///
/// Every timer of a host's software goes through here, declared to turmoil
/// (`turmoil::timer_hint`) for as long as it is pending: the runner lets
/// turmoil skip a host's idle steps, which is exact only if turmoil knows
/// each timer (see `runner` docs, Speed).
pub fn sleep_until_true(t: u64) -> HostSleep {
    HostSleep {
        hint: turmoil::timer_hint(Duration::from_millis(t)),
        sleep: Box::pin(tokio::time::sleep(
            Duration::from_millis(t).saturating_sub(true_now()),
        )),
    }
}

/// A tokio sleep declared to turmoil until it fires or is dropped.
pub struct HostSleep {
    sleep: Pin<Box<tokio::time::Sleep>>,
    hint: Option<turmoil::TimerHint>,
}

impl Future for HostSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let out = self.sleep.as_mut().poll(cx);
        if out.is_ready() {
            self.hint = None;
        }
        out
    }
}

struct HostCtx {
    name: String,
    shared: Arc<Shared>,
    clock: Arc<ClockModel>,
    pauses: Arc<Vec<(u64, u64)>>,
}

/// A host's clocks, timers and spawner.
#[derive(Clone)]
pub struct HostRuntime(Arc<HostCtx>);

impl HostRuntime {
    /// The runtime of `host`.
    pub fn new(shared: Arc<Shared>, host: &str) -> Self {
        HostRuntime(Arc::new(HostCtx {
            name: host.to_string(),
            clock: shared.clock(host),
            pauses: shared.plan.pauses_of(host),
            shared,
        }))
    }

    /// The host's name.
    pub fn host(&self) -> &str {
        &self.0.name
    }

    /// The run's shared state.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.0.shared
    }

    /// The host's clock model.
    pub fn clock(&self) -> &ClockModel {
        &self.0.clock
    }

    /// `(true, local)` milliseconds now.
    pub fn times(&self) -> (u64, u64) {
        let t = true_now_ms();
        (t, self.0.clock.mono(t))
    }

    /// The true time at which this host's monotonic clock reads `local`
    /// (`None` for a deadline that never comes).
    pub fn true_of_local(&self, local: u64) -> Option<u64> {
        (local < u64::MAX / 4).then(|| self.0.clock.true_at_mono(local))
    }

    /// Wraps `fut` in this host's pause gate.
    pub fn gate<F: Future + Send + 'static>(&self, fut: F) -> Gate<F> {
        Gate {
            inner: Box::pin(fut),
            pauses: self.0.pauses.clone(),
            shared: self.0.shared.clone(),
            wait: None,
        }
    }
}

impl Runtime for HostRuntime {
    fn now(&self) -> Millis {
        Millis(self.0.clock.mono(true_now_ms()))
    }

    fn sleep(&self, d: Millis) -> BoxFuture<()> {
        let local = self.0.clock.mono(true_now_ms());
        let target = self.0.clock.true_at_mono(local.saturating_add(d.0));
        Box::pin(sleep_until_true(target))
    }

    fn spawn(&self, task: BoxFuture<()>) {
        let gated = self.gate(task);
        let slot: Arc<TaskSlot> = Arc::new(Mutex::new(Some(Box::pin(async move {
            gated.await;
        }))));
        self.0.shared.register_task(&self.0.name, &slot);
        tokio::spawn(Slotted(slot));
    }

    fn wall(&self) -> StoreTime {
        self.0.clock.wall(true_now_ms())
    }
}

/// A spawned task whose future lives in a [`TaskSlot`] its host's registry
/// can empty: a crash drops the futures in spawn order
/// ([`Shared::drop_host_tasks`]), and tokio later drops the empty shell.
struct Slotted(Arc<TaskSlot>);

impl Future for Slotted {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let Some(f) = slot.as_mut() else {
            return Poll::Ready(());
        };
        if f.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        let done = slot.take();
        drop(slot);
        drop(done);
        Poll::Ready(())
    }
}

/// A task that does not run while its host is paused, and whose panics are
/// reported instead of swallowed.
pub struct Gate<F: Future> {
    inner: Pin<Box<F>>,
    pauses: Arc<Vec<(u64, u64)>>,
    shared: Arc<Shared>,
    wait: Option<HostSleep>,
}

impl<F: Future> Future for Gate<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // At most two rounds: a pause ends at a fixed instant, and pauses
        // are merged, so after waiting once the host is running.
        for _ in 0..3 {
            if let Some(w) = self.wait.as_mut() {
                if Pin::new(w).poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.wait = None;
            }
            if self.pauses.is_empty() {
                break;
            }
            match paused_until(&self.pauses, true_now_ms()) {
                Some(end) => self.wait = Some(sleep_until_true(end)),
                None => break,
            }
        }
        let inner = self.inner.as_mut();
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Some(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "non-string panic".into());
                self.shared.report_panic(msg);
                Poll::Ready(None)
            }
        }
    }
}
