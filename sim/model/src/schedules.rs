//! Schedules in a scenario: the `[[schedules]]` tables, checked at load.
//!
//! ```toml
//! [topology]
//! schedulers = 2          # scheduler-1, scheduler-2
//!
//! [[schedules]]
//! name = "heartbeat"
//! every = "5s"            # or: cron = "*/10 * * * * *", time_zone = "UTC"
//! queue = "default"       # default: the first workload queue
//! catch_up_max = 20       # fire each missed plan time, at most 20 (unset: the latest only)
//! jitter = "500ms"
//! remove_at = "40s"       # the operator removes it at this true time (unset: never)
//! ```
//!
//! Every scheduler host puts every schedule when it starts (an identical
//! put changes nothing), then fires their plan times.
//!
//! `remove_at` is an operator's `remove_schedule(name)` while the
//! schedulers run: the client host (the operator's seat, not a scheduler,
//! so that the removal does not depend on any one scheduler being up) asks
//! the store at that true time and retries an unknown outcome, within a
//! bound. An operator removing a schedule also takes it out of the
//! schedulers' configuration, so a scheduler process started at or after
//! `remove_at` no longer puts it; a process started before still has it in
//! its configuration and may put it back if its own put had not yet gone
//! through (the checker judges by what the store committed, re-puts
//! included). It must fall inside the run: after `0s`, before `duration`.
//!
//! The types and bounds are here; [`SimConfig::validate`] checks them
//! (naming the field, `schedules[1].cron`) and [`crate::protocol`] turns a
//! spec into the core's [`Schedule`](leasehold_core::Schedule).
//!
//! [`SimConfig::validate`]: crate::config::SimConfig::validate

use crate::duration::Dur;
use serde::{Deserialize, Serialize};

/// Default scheduler tick in a scenario.
pub const DEFAULT_SCHEDULER_TICK: Dur = Dur::secs(1);
/// Default misfire grace in a scenario.
pub const DEFAULT_MISFIRE_GRACE: Dur = Dur::secs(5);
/// Most schedules in a scenario.
pub const MAX_SCHEDULES: usize = 100;
/// Most scheduler hosts in a scenario.
pub const MAX_SCHEDULERS: u32 = 100;
/// Shortest interval a scenario may use (one plan time per tick of the
/// default 10 ms simulation step would flood the history).
pub const MIN_INTERVAL: Dur = Dur::ms(100);

/// One schedule of a scenario.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleSpec {
    /// Unique name.
    pub name: String,
    /// Fixed interval (exclusive with `cron`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<Dur>,
    /// Cron expression (exclusive with `every`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// Time zone of the cron expression (default UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// Queue of its jobs (default: the first workload queue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// Fire each missed plan time, at most this many (unset: the latest only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up_max: Option<u32>,
    /// Jitter bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<Dur>,
    /// True time at which the operator removes the schedule (unset: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_at: Option<Dur>,
}

/// The payload of a schedule's jobs: `sched:<name>` (the simulated handler
/// runs it briefly and succeeds).
pub fn payload_of(name: &str) -> Vec<u8> {
    format!("{PAYLOAD_PREFIX}{name}").into_bytes()
}

/// Payloads of schedule jobs start with this.
pub const PAYLOAD_PREFIX: &str = "sched:";
