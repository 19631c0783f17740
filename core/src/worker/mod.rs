//! The worker runtime: claims, heartbeats, self-fencing, releases, sweeping.
//!
//! Protocol, as run by a worker (spec §2, §3):
//! 1. `claim` up to the free slots; each lease runs in its own task.
//! 2. Every `renew_interval` the task renews; a successful renew sent at
//!    local time `t` extends the belief to `t + safe_lease`.
//! 3. If no renew succeeds before the belief deadline, the task stops the
//!    handler (self-fencing); if a renew answers `Lost`, likewise.
//! 4. A cancel request seen on a renew asks the handler to stop; graceful
//!    shutdown does the same and returns unfinished leases (`Returned`).
//! 5. The handler's result is released with the lease's token; a release
//!    whose outcome is unknown is retried with the same outcome.
//!
//! All time, sleeping and spawning go through [`crate::Runtime`]. Every
//! decision about one lease is a pure machine ([`lease_machine`],
//! [`release_retries`]) that the runtime drives and the exhaustive checker
//! runs over every interleaving of a small world.

pub mod config;
pub mod fence;
pub mod handler;
pub mod lease_machine;
mod lease_task;
pub mod metrics;
pub mod observer;
mod pruner;
pub mod pruner_config;
mod pruner_failure;
mod quirks;
mod release_queue;
pub mod release_retries;
mod runner;
mod scheduler;
pub mod scheduler_config;
pub mod shutdown;
pub mod slots;
mod sweeper;
mod tick_report;
mod timeout;
pub mod wake;

pub use config::{
    QueueSpec, SweeperConfig, WorkerConfig, WorkerConfigBuilder, MAX_QUEUES_PER_WORKER,
};
pub use fence::{safe_duration, Fence};
pub use handler::{Handler, HandlerError, StopReason, StopSignal};
pub use observer::{BeliefEnd, NoObserver, Observer, RuntimeEvent};
pub use pruner::Pruner;
pub use pruner_config::{PrunerConfig, PrunerConfigBuilder};
pub use pruner_failure::PruneFailure;
pub use runner::{Worker, WorkerStats};
pub use scheduler::Scheduler;
pub use scheduler_config::{SchedulerConfig, SchedulerConfigBuilder};
pub use shutdown::{shutdown_channel, Shutdown, ShutdownHandle};
pub use sweeper::Sweeper;
pub use tick_report::TickReport;
pub use timeout::with_timeout;
pub use wake::{wakes_workers, WorkSignal, WAKE_SLOTS};
