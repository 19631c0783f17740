//! Worker and sweeper configuration: named defaults, validated at build.
//!
//! Build-time checks: a non-zero lease; a renew interval below the usable
//! part of the lease ([`super::fence::safe_duration`]), so a renew is always
//! due before the worker must self-fence; concurrency and retry bounds ≥ 1;
//! at most [`MAX_QUEUES_PER_WORKER`] queues, each with a limit between 1
//! and the worker's concurrency.
//!
//! ## Several queues
//! [`WorkerConfig::builder`] names the first queue; [`WorkerConfigBuilder::queue`]
//! adds more, each with its own concurrency limit (or sets the limit of a
//! queue already named). A queue without a limit may use all of the
//! worker's `concurrency`. The worker never runs more than `concurrency`
//! handlers in all, nor more than a queue's limit of that queue, and it
//! offers free slots to its queues in turn, so a busy queue cannot starve
//! the others.

use super::fence::safe_duration;
use crate::error::ConfigError;
use crate::ids::WorkerId;
use crate::time::Millis;

/// Default number of jobs one worker runs at once. Handlers are futures,
/// so a slot costs little. A slot is busy for its handler's run plus one
/// store round trip (its release and the claim that refills it travel in
/// one merged batch), so for short jobs a worker's throughput is its
/// slots divided by that round trip: more slots make larger batches of
/// the same few durable commits (`docs/PERFORMANCE.md`, "Slots per
/// worker", measures 32, 64, 128 and 256). Lower it for handlers that
/// hold scarce resources (a connection, a core, a rate-limited API): a
/// worker takes up to this many jobs at once when they are there.
pub const DEFAULT_CONCURRENCY: u32 = 128;
/// Default lease duration.
pub const DEFAULT_LEASE: Millis = Millis(30_000);
/// Default interval between renews of a running lease.
pub const DEFAULT_RENEW_INTERVAL: Millis = Millis(10_000);
/// Default declared bound on clock drift (1 %).
pub const DEFAULT_MAX_DRIFT_PPM: u32 = 10_000;
/// Default safety margin subtracted from the belief.
pub const DEFAULT_FENCE_MARGIN: Millis = Millis(500);
/// Default wait between claims when the queue was empty.
pub const DEFAULT_POLL_INTERVAL: Millis = Millis(1_000);
/// Default number of tries for a release whose outcome was unknown.
pub const DEFAULT_RELEASE_TRIES: u32 = 10;
/// Default first delay between release tries (doubles, capped at the renew interval).
pub const DEFAULT_RELEASE_RETRY_DELAY: Millis = Millis(200);
/// Default time a request may take before its outcome counts as unknown.
pub const DEFAULT_REQUEST_TIMEOUT: Millis = Millis(5_000);
/// Default time running handlers get to finish on shutdown or cancel.
pub const DEFAULT_GRACE: Millis = Millis(10_000);
/// Default interval between sweeps.
pub const DEFAULT_SWEEP_INTERVAL: Millis = Millis(5_000);
/// Default most reclaims per sweep call.
pub const DEFAULT_SWEEP_BATCH: u32 = 100;
/// Most queues one worker claims from.
pub const MAX_QUEUES_PER_WORKER: usize = 64;
/// Most renews of one lease: a bound on the heartbeat loop (at the default
/// interval, about a year).
pub const MAX_RENEWS_PER_LEASE: u64 = 3_200_000;

const _: () = assert!(DEFAULT_RENEW_INTERVAL.0 < DEFAULT_LEASE.0);
const _: () = assert!(DEFAULT_RELEASE_TRIES >= 1);

/// One queue a worker claims from, and the most of its jobs it runs at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueSpec {
    /// The queue's name.
    pub name: String,
    /// Most handlers of this queue running at once (≤ the worker's
    /// concurrency, which is the limit of a queue given none).
    pub limit: u32,
}

/// A validated worker configuration. Build it with [`WorkerConfig::builder`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerConfig {
    /// This worker's identity (one per process incarnation).
    pub worker_id: WorkerId,
    /// The first queue to claim from (also `queues[0].name`).
    pub queue: String,
    /// Every queue to claim from with its limit, `queue` first (derived at
    /// build from the builder's queues).
    pub queues: Vec<QueueSpec>,
    /// Most jobs running at once, over all queues.
    pub concurrency: u32,
    /// Lease duration asked for on claim and renew.
    pub lease: Millis,
    /// Interval between renews.
    pub renew_interval: Millis,
    /// Declared bound ρ on clock drift, in ppm.
    pub max_drift_ppm: u32,
    /// Margin subtracted from the belief.
    pub fence_margin: Millis,
    /// The usable part of a lease (derived: `L·(1−ρ)/(1+ρ) − margin`).
    pub safe_lease: Millis,
    /// Wait between claims when idle.
    pub poll_interval: Millis,
    /// Tries after which a release answered `Conflict` or with an unknown
    /// outcome may be given up, once its heartbeat no longer keeps the
    /// lease (`release_retries`).
    pub release_tries: u32,
    /// First delay between release tries.
    pub release_retry_delay: Millis,
    /// Time a request may take before its outcome counts as unknown.
    pub request_timeout: Millis,
    /// Time handlers get to finish on shutdown or after a cancel request.
    pub grace: Millis,
    /// A deliberately buggy behaviour from the catalogue (simulator only).
    #[cfg(feature = "buggy-variants")]
    pub variant: Option<crate::variants::Variant>,
}

impl WorkerConfig {
    /// The buggy variant in force, if any (always `None` in shipped builds).
    #[cfg(feature = "buggy-variants")]
    pub fn variant(&self) -> Option<crate::variants::Variant> {
        self.variant
    }

    /// The buggy variant in force, if any (always `None` in shipped builds).
    #[cfg(not(feature = "buggy-variants"))]
    pub fn variant(&self) -> Option<std::convert::Infallible> {
        None
    }
}

impl WorkerConfig {
    /// A builder for a worker `worker_id` on `queue`, with the defaults.
    pub fn builder(worker_id: impl Into<String>, queue: impl Into<String>) -> WorkerConfigBuilder {
        let queue = queue.into();
        WorkerConfigBuilder {
            limits: vec![(queue.clone(), None)],
            cfg: WorkerConfig {
                worker_id: WorkerId::new(worker_id),
                queue,
                queues: Vec::new(),
                concurrency: DEFAULT_CONCURRENCY,
                lease: DEFAULT_LEASE,
                renew_interval: DEFAULT_RENEW_INTERVAL,
                max_drift_ppm: DEFAULT_MAX_DRIFT_PPM,
                fence_margin: DEFAULT_FENCE_MARGIN,
                safe_lease: Millis::ZERO,
                poll_interval: DEFAULT_POLL_INTERVAL,
                release_tries: DEFAULT_RELEASE_TRIES,
                release_retry_delay: DEFAULT_RELEASE_RETRY_DELAY,
                request_timeout: DEFAULT_REQUEST_TIMEOUT,
                grace: DEFAULT_GRACE,
                #[cfg(feature = "buggy-variants")]
                variant: None,
            },
        }
    }
}

/// Builds a [`WorkerConfig`].
#[derive(Clone, Debug)]
pub struct WorkerConfigBuilder {
    cfg: WorkerConfig,
    /// Queues in the order named, with the limit set for each (if any).
    limits: Vec<(String, Option<u32>)>,
}

/// Builder setters: each `/// doc` `name: Type` becomes a method that sets
/// `self.cfg.name` and returns the builder. Exported for the other
/// crates' config builders (`leasehold-chaos`).
#[macro_export]
macro_rules! setter {
    ($(#[$doc:meta] $name:ident: $ty:ty),* $(,)?) => {$(
        #[$doc]
        pub fn $name(mut self, v: $ty) -> Self {
            self.cfg.$name = v;
            self
        }
    )*};
}

impl WorkerConfigBuilder {
    setter! {
        /// Most jobs running at once.
        concurrency: u32,
        /// Lease duration.
        lease: Millis,
        /// Interval between renews.
        renew_interval: Millis,
        /// Declared drift bound ρ in ppm.
        max_drift_ppm: u32,
        /// Margin subtracted from the belief.
        fence_margin: Millis,
        /// Wait between claims when idle.
        poll_interval: Millis,
        /// Tries after which a transient release may be given up, once the lease is no longer kept.
        release_tries: u32,
        /// First delay between release tries.
        release_retry_delay: Millis,
        /// Time a request may take before its outcome counts as unknown.
        request_timeout: Millis,
        /// Time handlers get on shutdown or cancel.
        grace: Millis,
    }

    /// Also claims from `queue`, running at most `limit` of its jobs at once;
    /// for a queue already named (the first one too), sets its limit.
    /// Checked at [`WorkerConfigBuilder::build`]: `1 ≤ limit ≤ concurrency`,
    /// at most [`MAX_QUEUES_PER_WORKER`] queues.
    pub fn queue(mut self, queue: impl Into<String>, limit: u32) -> Self {
        let queue = queue.into();
        match self.limits.iter_mut().find(|(q, _)| *q == queue) {
            Some(entry) => entry.1 = Some(limit),
            None => self.limits.push((queue, Some(limit))),
        }
        self
    }

    /// Runs a deliberately buggy variant (simulator only).
    #[cfg(feature = "buggy-variants")]
    pub fn variant(mut self, v: crate::variants::Variant) -> Self {
        self.cfg.variant = Some(v);
        self
    }

    /// Validates and returns the configuration.
    pub fn build(self) -> Result<WorkerConfig, ConfigError> {
        let mut c = self.cfg;
        #[cfg(feature = "buggy-variants")]
        let skip_renew_check = c.variant == Some(crate::variants::Variant::HeartbeatTooClose);
        #[cfg(not(feature = "buggy-variants"))]
        let skip_renew_check = false;
        if c.worker_id.as_str().is_empty() {
            return Err(ConfigError::new("worker_id", "must not be empty"));
        }
        for (field, v) in [
            ("concurrency", u64::from(c.concurrency)),
            ("lease", c.lease.0),
            ("renew_interval", c.renew_interval.0),
            ("poll_interval", c.poll_interval.0),
            ("release_tries", u64::from(c.release_tries)),
            ("request_timeout", c.request_timeout.0),
        ] {
            if v == 0 {
                return Err(ConfigError::new(field, "must be greater than zero"));
            }
        }
        if self.limits.len() > MAX_QUEUES_PER_WORKER {
            return Err(ConfigError::new(
                "queues",
                format!(
                    "{} queues; at most {MAX_QUEUES_PER_WORKER}",
                    self.limits.len()
                ),
            ));
        }
        c.queues = Vec::with_capacity(self.limits.len());
        for (name, limit) in self.limits {
            if name.is_empty() || name.chars().any(|ch| ch.is_control() || ch.is_whitespace()) {
                return Err(ConfigError::new(
                    "queue",
                    format!("bad queue name {name:?}"),
                ));
            }
            let limit = limit.unwrap_or(c.concurrency);
            if limit == 0 || limit > c.concurrency {
                return Err(ConfigError::new(
                    "queue",
                    format!(
                        "queue {name:?}: limit {limit} must be between 1 and the concurrency {}",
                        c.concurrency
                    ),
                ));
            }
            c.queues.push(QueueSpec { name, limit });
        }
        debug_assert_eq!(c.queues[0].name, c.queue, "the first queue leads");
        if c.renew_interval >= c.lease && !skip_renew_check {
            return Err(ConfigError::new(
                "renew_interval",
                format!(
                    "{} must be shorter than the lease {}",
                    c.renew_interval, c.lease
                ),
            ));
        }
        #[cfg(feature = "buggy-variants")]
        let fence_drift_ppm = if c.variant == Some(crate::variants::Variant::FenceIgnoresDrift) {
            0
        } else {
            c.max_drift_ppm
        };
        #[cfg(not(feature = "buggy-variants"))]
        let fence_drift_ppm = c.max_drift_ppm;
        c.safe_lease = safe_duration(c.lease, fence_drift_ppm, c.fence_margin)?;
        if c.renew_interval >= c.safe_lease && !skip_renew_check {
            return Err(ConfigError::new(
                "renew_interval",
                format!(
                    "{} leaves no time to renew before self-fencing at {} (lease {} under drift {} ppm, margin {})",
                    c.renew_interval, c.safe_lease, c.lease, c.max_drift_ppm, c.fence_margin
                ),
            ));
        }
        Ok(c)
    }
}

/// A validated sweeper configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweeperConfig {
    /// Interval between sweeps.
    pub interval: Millis,
    /// Most reclaims per sweep call.
    pub batch: u32,
    /// Most sweep calls in a row when each returns a full batch.
    pub max_rounds: u32,
    /// Time a sweep may take before its outcome counts as unknown.
    pub request_timeout: Millis,
}

impl SweeperConfig {
    /// Default most back-to-back sweep calls.
    pub const DEFAULT_MAX_ROUNDS: u32 = 10;

    /// A sweeper configuration, validated.
    pub fn new(interval: Millis, batch: u32) -> Result<Self, ConfigError> {
        if interval == Millis::ZERO {
            return Err(ConfigError::new(
                "sweep_interval",
                "must be greater than zero",
            ));
        }
        if batch == 0 {
            return Err(ConfigError::new("sweep_batch", "must be greater than zero"));
        }
        Ok(SweeperConfig {
            interval,
            batch,
            max_rounds: Self::DEFAULT_MAX_ROUNDS,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        })
    }

    /// Sets the request timeout (must be non-zero).
    pub fn with_request_timeout(mut self, timeout: Millis) -> Result<Self, ConfigError> {
        if timeout == Millis::ZERO {
            return Err(ConfigError::new(
                "request_timeout",
                "must be greater than zero",
            ));
        }
        self.request_timeout = timeout;
        Ok(self)
    }
}

impl Default for SweeperConfig {
    fn default() -> Self {
        SweeperConfig {
            interval: DEFAULT_SWEEP_INTERVAL,
            batch: DEFAULT_SWEEP_BATCH,
            max_rounds: Self::DEFAULT_MAX_ROUNDS,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_renew_interval_must_be_shorter_than_the_lease() {
        let with = |renew: u64| {
            WorkerConfig::builder("w", "q")
                .lease(Millis(1_000))
                .renew_interval(Millis(renew))
                .build()
        };
        let e = with(1_000).unwrap_err();
        assert_eq!(e.field, "renew_interval");
        assert!(e.reason.contains("shorter than the lease"), "{e}");
        let e = with(990).unwrap_err();
        assert!(e.reason.contains("no time to renew"), "{e}");
        assert!(with(300).is_ok());
    }

    #[test]
    fn a_worker_may_serve_up_to_the_cap_of_queues() {
        let with = |n: usize| {
            (1..n).fold(WorkerConfig::builder("w", "q0"), |b, i| {
                b.queue(format!("q{i}"), 1)
            })
        };
        let c = with(MAX_QUEUES_PER_WORKER).build().unwrap();
        assert_eq!(c.queues.len(), MAX_QUEUES_PER_WORKER);
        let e = with(MAX_QUEUES_PER_WORKER + 1).build().unwrap_err();
        assert_eq!(e.field, "queues");
    }

    #[test]
    fn a_sweeper_refuses_a_zero_request_timeout_and_keeps_any_other() {
        let base = SweeperConfig::new(Millis(1000), 10).unwrap();
        let e = base.clone().with_request_timeout(Millis::ZERO).unwrap_err();
        assert_eq!(e.field, "request_timeout");
        let c = base.with_request_timeout(Millis(250)).unwrap();
        assert_eq!(c.request_timeout, Millis(250));
    }

    #[test]
    fn defaults_build() {
        let c = WorkerConfig::builder("w", "q").build().unwrap();
        assert!(c.safe_lease > c.renew_interval);
    }

    #[test]
    fn renew_interval_must_fit_inside_the_safe_lease() {
        let e = WorkerConfig::builder("w", "q")
            .lease(Millis(1000))
            .renew_interval(Millis(1000))
            .build()
            .unwrap_err();
        assert_eq!(e.field, "renew_interval");
        let e = WorkerConfig::builder("w", "q")
            .lease(Millis(1000))
            .renew_interval(Millis(950))
            .fence_margin(Millis(100))
            .build()
            .unwrap_err();
        assert_eq!(e.field, "renew_interval");
        assert!(e.reason.contains("self-fencing"), "{e}");
    }

    #[test]
    fn one_queue_keeps_the_single_queue_config() {
        let c = WorkerConfig::builder("w", "q")
            .concurrency(7)
            .build()
            .unwrap();
        assert_eq!(c.queue, "q");
        assert_eq!(
            c.queues,
            vec![QueueSpec {
                name: "q".into(),
                limit: 7
            }]
        );
    }

    #[test]
    fn queues_keep_their_order_and_limits() {
        let c = WorkerConfig::builder("w", "a")
            .concurrency(8)
            .queue("b", 2)
            .queue("a", 5)
            .queue("c", 8)
            .build()
            .unwrap();
        let got: Vec<(&str, u32)> = c
            .queues
            .iter()
            .map(|q| (q.name.as_str(), q.limit))
            .collect();
        assert_eq!(got, [("a", 5), ("b", 2), ("c", 8)]);
    }

    #[test]
    fn bad_queue_limits_are_rejected() {
        for (limit, concurrency) in [(0, 4), (5, 4)] {
            let e = WorkerConfig::builder("w", "a")
                .concurrency(concurrency)
                .queue("b", limit)
                .build()
                .unwrap_err();
            assert_eq!(e.field, "queue", "{e}");
            assert!(e.reason.contains("\"b\""), "{e}");
        }
        let e = WorkerConfig::builder("w", "a")
            .queue("b c", 1)
            .build()
            .unwrap_err();
        assert_eq!(e.field, "queue");
        let mut b = WorkerConfig::builder("w", "q0");
        for i in 1..=MAX_QUEUES_PER_WORKER {
            b = b.queue(format!("q{i}"), 1);
        }
        assert_eq!(b.build().unwrap_err().field, "queues");
    }

    #[test]
    fn zero_values_are_rejected() {
        assert_eq!(
            WorkerConfig::builder("w", "q")
                .concurrency(0)
                .build()
                .unwrap_err()
                .field,
            "concurrency"
        );
        assert_eq!(
            WorkerConfig::builder("w", "q")
                .lease(Millis(0))
                .build()
                .unwrap_err()
                .field,
            "lease"
        );
        assert_eq!(
            WorkerConfig::builder("", "q").build().unwrap_err().field,
            "worker_id"
        );
        assert_eq!(
            WorkerConfig::builder("w", "a b").build().unwrap_err().field,
            "queue"
        );
        assert!(SweeperConfig::new(Millis(0), 1).is_err());
        assert!(SweeperConfig::new(Millis(1), 0).is_err());
    }
}
