//! The core's [`Runtime`] for one simulated host, and the pause gate.
//!
//! ## Time
//! True time is the seed's one simulated clock ([`crate::exec`]), never
//! tokio's or std's `Instant`, never `std::time`. A host's monotonic and
//! wall clocks are functions of true time ([`ClockModel`]). `sleep(d)` asks
//! the model for the first true instant at which the local clock has
//! advanced by `d`, and waits for it on the seed's event queue.
//!
//! ## Pauses (GC stalls)
//! A paused host runs nothing: every task of the host (its main task and
//! everything spawned through [`Runtime::spawn`]) is wrapped in a [`Gate`].
//! Whenever a gated task is woken during a pause window (a timer fired,
//! bytes arrived), the gate parks it until the pause ends instead of
//! polling it. Timers and network I/O therefore complete late, all at once,
//! when the host resumes with its stale beliefs; its clocks kept running.
//! Pause windows are known in advance, so the gate is deterministic. The
//! host's inbox (below the gate) still takes arriving messages, as a
//! kernel would.
//!
//! ## Determinism
//! Tasks run on the simulator's own executor, in the order they were woken
//! ([`crate::exec`]). tokio's thread-local generator (seeded from process
//! randomness) is read only by unbiased `select!` and by `watch` channels
//! (which of 8 notifiers a waiter parks on). The core and the simulator use
//! `biased;` in every `select!` (tests/determinism_rules.rs checks it); the
//! only `watch` channels are the core's stop signal (one waiter each) and
//! shutdown (raised by a scripted `shutdown` fault, whose woken handlers
//! then return in (job, token) order, see `hosts/handler.rs`). So no
//! wake-up order depends on that generator; the determinism tests check it,
//! including across processes.
//!
//! ## Panics
//! A panic in a spawned task would be lost; the gate catches it and reports
//! it to the runner, which fails the run as a harness error.
//!
//! ## What a host is given
//! One [`HostRuntime`] per host and world, shared by all its incarnations:
//! its name and number, its clock, its pause windows, its incarnation
//! count and the run's [`Recorder`]. Nothing else of the run: what a host's
//! software reads besides is its own settings (see [`crate::hosts::software`]).

use super::recorder::Recorder;
use crate::faults::{paused_until, Pauses};
use leasehold_core::{BoxFuture, Millis, Runtime, StoreTime, WorkerId};
use leasehold_model::clock::ClockModel;
use leasehold_model::config::Host;
use leasehold_model::history::Record;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

/// True time now, from inside a simulated host, in whole milliseconds.
pub fn true_now_ms() -> u64 {
    crate::exec::now_ms()
}

/// Waits until true time `t` (ms): every timer of a host's software is one
/// of these, on the seed's one event queue.
pub fn sleep_until_true(t: u64) -> HostSleep {
    crate::exec::sleep_until(t)
}

/// A timer on the simulated clock.
pub type HostSleep = crate::exec::Sleep;

struct HostCtx {
    name: String,
    idx: crate::exec::HostIdx,
    recorder: Arc<Recorder>,
    clock: Arc<ClockModel>,
    pauses: Pauses,
    incarnations: AtomicU32,
}

/// A host's clocks, timers and spawner.
#[derive(Clone)]
pub struct HostRuntime(Arc<HostCtx>);

impl HostRuntime {
    /// The runtime of `host` (numbered by its place in registration
    /// order), on `clock`, paused in `pauses`, recording to `recorder`.
    pub fn new(
        host: &Host,
        clock: Arc<ClockModel>,
        pauses: Pauses,
        recorder: Arc<Recorder>,
    ) -> Self {
        HostRuntime(Arc::new(HostCtx {
            idx: host.index,
            name: host.name.clone(),
            recorder,
            clock,
            pauses,
            incarnations: AtomicU32::new(0),
        }))
    }

    /// The host's name.
    pub fn host(&self) -> &str {
        &self.0.name
    }

    /// The host's number in the world.
    pub fn idx(&self) -> crate::exec::HostIdx {
        self.0.idx
    }

    /// The run's recorder.
    pub fn recorder(&self) -> &Recorder {
        &self.0.recorder
    }

    /// The number of the incarnation starting now (0 on the host's first
    /// start): each call is one more start. Called by the software itself
    /// when it first runs, so a start that never ran (crashed before its
    /// first poll, or during a pause) numbers nothing.
    pub fn next_incarnation(&self) -> u32 {
        self.0.incarnations.fetch_add(1, Ordering::Relaxed)
    }

    /// Starts one incarnation of a host other than a worker: numbers it
    /// and records its start (see [`HostRuntime::started`]). Answers the
    /// incarnation and the true time.
    pub fn start(&self) -> (u32, u64) {
        let incarnation = self.next_incarnation();
        (incarnation, self.started(incarnation, None))
    }

    /// Records that `incarnation` (running `worker`'s identity, on a
    /// worker host) started now; answers the true time.
    pub fn started(&self, incarnation: u32, worker: Option<WorkerId>) -> u64 {
        let (t, _) = self.times();
        self.recorder().record(Record::HostStarted {
            t,
            host: self.host().to_string(),
            incarnation,
            worker,
        });
        t
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
            recorder: self.0.recorder.clone(),
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

    fn sleep_until(&self, at: Millis) -> BoxFuture<()> {
        // The first true ms at which this host's clock reads `at`, as
        // `sleep(at - now())` gives here (true time stands still while a
        // task runs): the trait's default, made explicit.
        let local = self.0.clock.mono(true_now_ms());
        let target = self.0.clock.true_at_mono(at.0.max(local));
        Box::pin(sleep_until_true(target))
    }

    fn spawn(&self, task: BoxFuture<()>) {
        let gated = self.gate(task);
        let idx = self.0.idx;
        crate::exec::executor::spawn(
            idx,
            Box::pin(async move {
                gated.await;
            }),
        )
        .expect("tasks are only spawned inside a simulation");
    }

    fn wall(&self) -> StoreTime {
        self.0.clock.wall(true_now_ms())
    }
}

/// A task that does not run while its host is paused, and whose panics are
/// reported instead of swallowed.
pub struct Gate<F: Future> {
    inner: Pin<Box<F>>,
    pauses: Pauses,
    recorder: Arc<Recorder>,
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
                self.recorder.report_panic(msg);
                Poll::Ready(None)
            }
        }
    }
}
