//! # leasehold-core
//!
//! A storage-agnostic job lease state machine, the [`Store`] trait adapters
//! implement, and a worker runtime. The contract is `PROTOCOL.md`; this crate
//! is its single implementation.
//!
//! ## The protocol in brief
//! - A job is leased as `(job, token, holder, expires_at)`. Every operation
//!   on a lease names the job **and** the token; the worker id alone never
//!   authorizes anything. Tokens strictly increase per job (fencing).
//! - The store's clock is the only clock that decides validity. Workers send
//!   durations, never timestamps of their own clocks.
//! - A worker believes it holds a lease only until
//!   `t_send + L·(1−ρ)/(1+ρ) − margin` on its own monotonic clock
//!   ([`worker::fence`]), and stops its handler past that.
//! - Every transition ([`transition`]) is pure: it takes the row and the
//!   store's `now` and returns the new row and a history [`Event`], an answer
//!   that changes nothing, or a typed error. Adapters persist the new row
//!   only if the row's `version` is unchanged since they loaded it.
//!
//! ## Invariants upheld here
//! - I1: a claim bumps the token by one; only a `pending` row can be claimed.
//! - I2: only `running` rows with the matching token accept a release; a
//!   terminal row never changes.
//! - I4: a result is written in the same transition as `succeeded`.
//! - I7: cancel never touches a terminal row; a cancelled job is never retried.
//! - I8: `attempt ≤ max_attempts`; `dead` only when spent or not retryable.
//! - I12: a schedule's plan time is fired under a key unique per (schedule,
//!   plan time) ([`schedule::job_key`]), judged on the store's clock only,
//!   so a plan time never gets two jobs however many schedulers fire it.
//!
//! These are asserted in debug builds by [`JobRecord::check_invariants`] and
//! the transition postconditions.
//!
//! ## Depends on
//! serde, thiserror, tracing, tokio (sync, time; madsim's tokio under
//! `--cfg madsim`), croner/jiff for cron plan times and the `metrics`
//! facade. It must never depend on a database driver, an adapter, the
//! conformance suite or anything of the simulator: every other crate builds
//! on it, and time and randomness come in as arguments.

#![warn(missing_docs)]

pub mod batch_merge;
pub mod clock;
mod error;
mod forward_store;
mod history;
mod ids;
mod job;
pub mod job_counts;
pub mod join;
mod patience;
mod policy;
pub mod schedule;
#[doc(hidden)]
pub mod statement_gate;
mod store;
mod time;
pub mod transition;
#[doc(hidden)]
pub mod tx_faults;
pub mod worker;

#[cfg(feature = "buggy-variants")]
pub mod variants;

pub use batch_merge::{BatchMerger, DEFAULT_MERGE_FLUSHERS};
pub use clock::{BoxFuture, ManualStoreClock, Runtime, StoreClock, SystemStoreClock, TokioRuntime};
pub use error::{ConfigError, InputError, Refusal, StoreError};
pub use history::{CrashReport, Event, EventKind};
pub use ids::{JobId, Token, WorkerId};
pub use job::{
    CancelOutcome, JobRecord, JobState, Lease, NewJob, Outcome, Release, ReleaseMark, Renewal,
    RetryOutcome,
};
pub use job_counts::{JobCounts, QueueCounts, StateCounts};
pub use patience::Patience;
pub use policy::{
    Backoff, Limits, Policy, PolicyBuilder, DEFAULT_BACKOFF_BASE, DEFAULT_BACKOFF_CAP,
    DEFAULT_JITTER_PERMILLE, DEFAULT_MAX_ATTEMPTS_CAP, DEFAULT_MAX_CLAIM_BATCH,
    DEFAULT_MAX_ERROR_BYTES, DEFAULT_MAX_KEY_LEN, DEFAULT_MAX_LEASE, DEFAULT_MAX_PAYLOAD_BYTES,
    DEFAULT_MAX_QUEUE_LEN, DEFAULT_MAX_RESULT_BYTES, MAX_KEY_LEN_CAP,
};
pub use schedule::{
    CatchUp, FireRequest, ListSchedulesRequest, Rule, Schedule, ScheduleRecord, MAX_CATCH_UP,
};
pub use store::{
    batch_by_parts, count_by_listing, get_one_by_one, in_asked_order, list_all, list_all_schedules,
    BatchAnswer, BatchRequest, ClaimRequest, ListRequest, ReleaseRequest, RenewRequest, Store,
    SweepRequest, LIST_ALL_MAX_ROWS, MAX_BATCH_REQUESTS,
};
pub use time::{Millis, StoreTime};
pub use transition::{PruneRequest, AUDIT_EVENTS_PER_JOB, MAX_PRUNE_LIMIT, MIN_RETENTION};
pub use worker::{
    shutdown_channel, Handler, HandlerError, PruneFailure, Pruner, PrunerConfig, Scheduler,
    SchedulerConfig, Shutdown, ShutdownHandle, StopReason, StopSignal, Sweeper, SweeperConfig,
    Worker, WorkerConfig,
};
pub use worker::{wakes_workers, WorkSignal};
