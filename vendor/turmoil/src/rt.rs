use std::future::{poll_fn, Future};
use std::mem;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use rand::rngs::SmallRng;
use tokio::runtime::{Runtime, RuntimeMetrics};
use tokio::task::JoinHandle;
use tokio::task::LocalSet;
use tokio::time::{sleep, Duration, Instant};

use super::Result;

// To support re-creation, we need to store a factory of the future that
// represents the software. This is somewhat annoying in that it requires
// boxxing to avoid generics.
type Software<'a> = Box<dyn Fn() -> Pin<Box<dyn Future<Output = Result>>> + 'a>;

/// Runtime kinds.
pub enum Kind<'a> {
    /// A runtime for executing test code.
    Client,

    /// A runtime that is running simulated host software.
    Host { software: Software<'a> },

    /// A runtime without any software. The network topology uses this for
    /// time tracking and message delivery.
    NoSoftware,
}

/// Runtime configuration.
#[derive(Clone, Default)]
pub struct Config {
    /// Whether io is enabled on the runtime.
    pub enable_io: bool,

    /// Rng used to seed the tokio runtime.
    ///
    /// Only used if the `tokio_unstable` cfg flag is set.
    #[cfg_attr(not(tokio_unstable), expect(dead_code))]
    pub rng: Option<SmallRng>,
}

/// Per host simulated runtime.
///
/// The tokio runtime is paused (see [`Builder::start_paused`]), which gives us
/// control over when and how to advance time. In particular, see [`Rt::tick`],
/// which lets the runtime do a bit more work.
pub struct Rt<'a> {
    pub kind: Kind<'a>,

    /// Handle to the Tokio runtime driving this simulated host. Each runtime
    /// may have a different sense of "now" which simulates clock skew.
    tokio: Runtime,

    /// Local task set used for running !Send tasks.
    local: LocalSet,

    /// A user readable name to identify the node.
    pub nodename: Arc<str>,

    /// Optional handle to a host's software. When software finishes, the handle is
    /// consumed to check for error, which is propagated up to fail the simulation.
    handle: Option<JoinHandle<Result>>,

    /// Runtime configuration.
    config: Config,

    /// Idle-tick skipping state (see [`Rt::is_idle_until`]).
    idle: Idle,
}

/// tokio's default `global_queue_interval` for the current-thread scheduler,
/// set explicitly so that [`Rt::catch_up`] knows the period of the
/// scheduler's local/remote queue alternation.
const GLOBAL_QUEUE_INTERVAL: u32 = 31;

/// The state behind skipping the ticks of an idle host (speed only).
///
/// An idle tick (no ready task, no timer due, nothing delivered) changes
/// three things in the host's runtime: the paused clock advances by the tick,
/// the current-thread scheduler's `tick` counter advances once per park, and
/// the `LocalSet`'s `tick` counter advances once. The counters decide, when
/// both a local and a remote run queue hold tasks, which runs first, so a
/// skipped tick must be paid back exactly before the host runs again:
/// [`Rt::catch_up`] does that.
struct Idle {
    /// Set by every wake that schedules a `LocalSet` task from outside the
    /// `LocalSet` (network delivery, timers, other hosts): the `LocalSet`
    /// has a task queued that the next tick would run.
    wake: Arc<WakeFlag>,
    /// `wake` as a waker, registered as the `LocalSet`'s waker.
    waker: Waker,
    /// Ticks skipped since the last tick (not yet applied to the clock).
    skipped: u32,
    /// The length of the skipped ticks.
    lag: Duration,
    /// The runtime's clock at its creation: the timer wheel's origin.
    origin: Instant,
    /// The runtime's metrics (kept: each `Handle::metrics` clones the
    /// handle).
    metrics: RuntimeMetrics,
}

impl Idle {
    fn new(origin: Instant, tokio: &Runtime) -> Self {
        let wake = Arc::new(WakeFlag::default());
        Idle {
            waker: Waker::from(wake.clone()),
            wake,
            skipped: 0,
            lag: Duration::ZERO,
            origin,
            metrics: tokio.metrics(),
        }
    }
}

/// Whole milliseconds of a span that starts and ends on the runtime's
/// millisecond grid.
fn wheel_ms(d: Duration) -> u64 {
    debug_assert_eq!(d.subsec_nanos() % 1_000_000, 0);
    d.as_millis() as u64
}

/// A waker that records that it was woken, then wakes the `block_on` waker
/// of the tick in progress (so the runtime behaves exactly as if that waker
/// had been registered itself).
#[derive(Default)]
struct WakeFlag {
    woken: AtomicBool,
    inner: Mutex<Option<Waker>>,
}

impl WakeFlag {
    fn set_inner(&self, waker: &Waker) {
        let mut inner = self.inner.lock().expect("wake flag");
        if !inner.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *inner = Some(waker.clone());
        }
    }

    fn inner(&self) -> Waker {
        self.inner
            .lock()
            .expect("wake flag")
            .clone()
            .expect("polled before set_inner")
    }
}

impl Wake for WakeFlag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        let inner = self.inner.lock().expect("wake flag").clone();
        if let Some(w) = inner {
            w.wake();
        }
    }
}

/// Polls `fut` with the waker [`WakeFlag::inner`] instead of the one it is
/// given, so the tick's own sleep never sets the wake flag.
struct WithInnerWaker<'f, F> {
    fut: Pin<&'f mut F>,
    flag: &'f WakeFlag,
}

impl<F: Future> Future for WithInnerWaker<'_, F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<F::Output> {
        // Borrowed under the lock rather than cloned (a clone and a drop of
        // an `Arc` per poll). The future only registers the waker; a wake
        // from inside the poll goes to the inner waker, never to the flag,
        // so the lock is not taken twice.
        let flag = self.flag;
        let inner = flag.inner.lock().expect("wake flag");
        let waker = inner.as_ref().expect("polled before set_inner");
        self.fut.as_mut().poll(&mut Context::from_waker(waker))
    }
}

impl<'a> Rt<'a> {
    pub(crate) fn client<F>(nodename: Arc<str>, client: F, mut config: Config) -> Self
    where
        F: Future<Output = Result> + 'static,
    {
        let (tokio, local, origin) = init(&mut config);

        let handle = with(&tokio, &local, || tokio::task::spawn_local(client));
        let idle = Idle::new(origin, &tokio);

        Self {
            kind: Kind::Client,
            tokio,
            local,
            nodename,
            handle: Some(handle),
            config,
            idle,
        }
    }

    pub(crate) fn host<F, Fut>(nodename: Arc<str>, software: F, mut config: Config) -> Self
    where
        F: Fn() -> Fut + 'a,
        Fut: Future<Output = Result> + 'static,
    {
        let (tokio, local, origin) = init(&mut config);

        let software: Software = Box::new(move || Box::pin(software()));
        let handle = with(&tokio, &local, || tokio::task::spawn_local(software()));

        let idle = Idle::new(origin, &tokio);
        // The software's first task is queued on the `LocalSet`.
        idle.wake.woken.store(true, Ordering::SeqCst);
        Self {
            kind: Kind::Host { software },
            tokio,
            local,
            nodename,
            handle: Some(handle),
            config,
            idle,
        }
    }

    pub(crate) fn no_software() -> Self {
        let mut config = Config::default();
        let (tokio, local, origin) = init(&mut config);
        let idle = Idle::new(origin, &tokio);

        Self {
            kind: Kind::NoSoftware,
            tokio,
            local,
            nodename: String::new().into(),
            handle: None,
            config,
            idle,
        }
    }

    pub(crate) fn is_client(&self) -> bool {
        matches!(self.kind, Kind::Client)
    }

    fn is_host(&self) -> bool {
        matches!(self.kind, Kind::Host { .. })
    }

    pub(crate) fn is_software_running(&self) -> bool {
        self.handle.is_some()
    }

    pub(crate) fn now(&self) -> Instant {
        let _guard = self.tokio.enter();
        Instant::now()
    }

    // This method is called by [`Sim::run`], which iterates through all the
    // runtimes and ticks each one. The magic of this method is described in the
    // documentation for [`LocalSet::run_until`], but it may not be entirely
    // obvious how things fit together.
    //
    // A [`LocalSet`] tracks the tasks to run, which may in turn spawn more
    // tasks. `run_until` drives a top level task to completion, but not its
    // children. If you look below, you may be confused. The task we run here
    // just sleeps and has no children! However, it's the _same `LocalSet`_ that
    // is used to run software on the host.
    //
    // In this way, every time `tick` is called, the following unfolds:
    //
    // 1. Time advances on the runtime
    // 2. We schedule a new task that simply sleeps
    // 3. Other tasks on the `LocalSet` get a chance to run
    // 4. The sleep finishes
    // 5. The runtime pauses
    //
    // Returns whether the software has finished successfully or the error
    // that caused failure. Subsequent calls do not return the error as it is
    // expected to fail the simulation.
    pub(crate) fn tick(&mut self, duration: Duration) -> Result<bool> {
        debug_assert!(self.idle.skipped == 0, "catch_up before tick");
        let (local, idle) = (&self.local, &self.idle);
        self.tokio.block_on(async {
            let tick = pin!(sleep(duration));
            let mut run = pin!(local.run_until(WithInnerWaker {
                fut: tick,
                flag: &idle.wake,
            }));
            poll_fn(|cx| {
                idle.wake.set_inner(cx.waker());
                // `run_until` ticks the `LocalSet` (draining both its
                // queues) only when its future is pending; when it is ready
                // the wakes recorded so far are still queued.
                let before = idle.wake.woken.swap(false, Ordering::SeqCst);
                let out = run.as_mut().poll(&mut Context::from_waker(&idle.waker));
                if out.is_ready() && before {
                    idle.wake.woken.store(true, Ordering::SeqCst);
                }
                out
            })
            .await
        });

        // pull for software completion
        match &self.handle {
            Some(handle) if handle.is_finished() => {
                // Consume handle to extract task result
                if let Some(h) = self.handle.take() {
                    match self.tokio.block_on(h) {
                        // If the host was crashed the JoinError is cancelled, which
                        // needs to be handled to not fail the simulation.
                        Err(je) if je.is_cancelled() => {}
                        res => res??,
                    }
                };
                Ok(true)
            }
            Some(_) => Ok(false),
            None => Ok(true),
        }
    }

    /// Whether this host would do nothing but advance its clock in a tick
    /// ending at `end`: no `LocalSet` task is queued, no task is queued on
    /// the runtime's scheduler, and `next_timer` (the earliest timer the
    /// software declared, see [`crate::TimerHint`]) is after `end`.
    pub(crate) fn is_idle_until(&self, next_timer: Option<Duration>, end: Duration) -> bool {
        self.is_host()
            && self.handle.is_some()
            && !self.idle.wake.woken.load(Ordering::SeqCst)
            && self.idle.metrics.global_queue_depth() == 0
            && next_timer.is_none_or(|t| t > end)
    }

    /// Skips an idle tick (see [`Rt::is_idle_until`]); [`Rt::catch_up`]
    /// applies it before the host next runs.
    pub(crate) fn skip_tick(&mut self, duration: Duration) {
        self.idle.skipped += 1;
        self.idle.lag += duration;
    }

    /// Brings the runtime to the state the skipped ticks would have left it
    /// in: the clock advanced by their length, the wheel processed (nothing
    /// fires: no timer was due), and both scheduling counters advanced as
    /// far as they would have. Must run before anything is delivered to the
    /// host.
    pub(crate) fn catch_up(&mut self) {
        let skipped = mem::take(&mut self.idle.skipped);
        let lag = mem::take(&mut self.idle.lag);
        if skipped == 0 {
            return;
        }
        assert!(
            !self.idle.wake.woken.load(Ordering::SeqCst)
                && self.idle.metrics.global_queue_depth() == 0,
            "turmoil: host {} was woken while {skipped} of its ticks were skipped \
             (skip_idle_hosts requires every wake-up to come from the network or a \
             hinted timer)",
            self.nodename
        );
        let metrics = &self.idle.metrics;
        let parks_before = metrics.worker_park_count(0);
        let start = self.now();
        let from = wheel_ms(start - self.idle.origin);
        let to = wheel_ms(start + lag - self.idle.origin);
        // The scheduler's counter advances once per park. Every tick ends
        // with its sleep firing, which unparks the driver, so each skipped
        // tick parked once without advancing the clock, once at its end,
        // and once at every multiple of 64 ms (a timer wheel cascade point,
        // counted from the runtime's start) that its own sleep crossed. A
        // tick end is never such a multiple (see `Sim::step`) and every
        // cascade point of the host's own timers is one.
        let crossed = (to - 1) / 64 - from / 64;
        let ticked = 2 * u64::from(skipped) + crossed;
        let (local, idle, nodename) = (&self.local, &self.idle, &self.nodename);
        // One `block_on` for the whole catch-up (entering the runtime is
        // most of its cost): `block_on` starts by polling its future and
        // returns as soon as it is ready, so the counters advance exactly
        // as in two consecutive `block_on`s (the sleep, then the yields).
        self.tokio.block_on(async {
            // Each skipped tick ran the `LocalSet` once with empty queues.
            // Its counter is a `u8`, so 256 rounds are none.
            for _ in 0..skipped % 256 {
                let mut run = pin!(local.run_until(std::future::pending::<()>()));
                let _ = run.as_mut().poll(&mut Context::from_waker(&idle.waker));
            }
            // One sleep to the end of the skipped ticks. Nothing fires
            // before it: no timer was due.
            sleep(lag).await;
            // The sleep parked `parks` times (it also starts unparked);
            // yield for the rest. A yield advances the counter without a
            // park (it parks with a zero timeout, which is not counted).
            let parks = metrics.worker_park_count(0) - parks_before;
            assert!(
                parks <= ticked,
                "turmoil: host {nodename} catch-up parked {parks} times, the skipped ticks {ticked}"
            );
            let owed = (ticked - parks) % u64::from(GLOBAL_QUEUE_INTERVAL);
            for _ in 0..owed {
                tokio::task::yield_now().await;
            }
        });
        // A tick ends with its sleep waking the runtime (which leaves the
        // driver unparked); the yields consumed that: wake it again.
        self.idle.wake.inner().wake();
    }

    pub(crate) fn crash(&mut self) {
        if !self.is_host() {
            panic!("can only crash host's software");
        }

        if self.handle.take().is_some() {
            self.cancel_tasks();
        };
    }

    pub(crate) fn bounce(&mut self) {
        if !self.is_host() {
            panic!("can only bounce host's software");
        }

        self.cancel_tasks();

        if let Kind::Host { software } = &self.kind {
            let handle = with(&self.tokio, &self.local, || {
                tokio::task::spawn_local(software())
            });
            self.handle.replace(handle);
        };
    }

    /// Cancel all tasks within the [`Rt`] by dropping the current tokio
    /// [`Runtime`].
    ///
    /// Dropping the runtime blocks the calling thread until all futures have
    /// completed, which is desired here to ensure host software completes and
    /// all resources are dropped.
    ///
    /// Both the [`Runtime`] and [`LocalSet`] are replaced with new instances.
    fn cancel_tasks(&mut self) {
        let (tokio, local, origin) = init(&mut self.config);

        _ = mem::replace(&mut self.tokio, tokio);
        drop(mem::replace(&mut self.local, local));
        // A fresh runtime: nothing to catch up; a bounce queues the software.
        self.idle = Idle::new(origin, &self.tokio);
        self.idle.wake.woken.store(true, Ordering::SeqCst);
    }
}

fn init(config: &mut Config) -> (Runtime, LocalSet, Instant) {
    let mut tokio_builder = tokio::runtime::Builder::new_current_thread();

    #[cfg(tokio_unstable)]
    tokio_builder.unhandled_panic(tokio::runtime::UnhandledPanic::ShutdownRuntime);

    if config.enable_io {
        tokio_builder.enable_io();
    }

    #[cfg(tokio_unstable)]
    if let Some(rng) = &mut config.rng {
        let bytes: [u8; 32] = rand::Rng::random(rng);
        let seed = tokio::runtime::RngSeed::from_bytes(&bytes);
        tokio_builder.rng_seed(seed);
    }

    let tokio = tokio_builder
        .global_queue_interval(GLOBAL_QUEUE_INTERVAL)
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();

    // The clock is paused, so this is the time driver's start.
    let origin = {
        let _guard = tokio.enter();
        Instant::now()
    };

    tokio.block_on(async {
        // Sleep to "round" `Instant::now()` to the closest `ms`
        tokio::time::sleep(Duration::from_millis(1)).await;
    });

    (tokio, new_local(), origin)
}

fn new_local() -> LocalSet {
    #[cfg(not(tokio_unstable))]
    let local = LocalSet::new();

    #[cfg(tokio_unstable)]
    let mut local = LocalSet::new();

    #[cfg(tokio_unstable)]
    local.unhandled_panic(tokio::runtime::UnhandledPanic::ShutdownRuntime);

    local
}

fn with<R>(tokio: &Runtime, local: &LocalSet, f: impl FnOnce() -> R) -> R {
    tokio.block_on(async { local.run_until(async { f() }).await })
}
