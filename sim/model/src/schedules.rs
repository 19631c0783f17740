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
//! included). It must fall inside the run: after `0s`, before `duration`. A problem is reported
//! under the field's path (`schedules[1].cron`), which the scenario loader
//! turns into `FILE:LINE:COL`. The checks are the core's own (a schedule
//! the store would refuse is refused here, naming the field), plus what the
//! simulator needs: a unique name, one rule, a queue some worker serves.

use crate::config::{ConfigProblem, SimConfig};
use crate::duration::Dur;
use leasehold_core::{CatchUp, InputError, Policy, Rule, Schedule};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

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

impl ScheduleSpec {
    /// The core's schedule for this spec in `cfg`.
    pub fn to_core(&self, cfg: &SimConfig) -> Schedule {
        let rule = match (&self.every, &self.cron) {
            (Some(d), _) => Rule::every(d.0),
            (None, Some(c)) => Rule::cron_in(
                c.clone(),
                self.time_zone.clone().unwrap_or_else(|| "UTC".into()),
            ),
            (None, None) => Rule::every(leasehold_core::Millis(0)),
        };
        let queue = self
            .queue
            .clone()
            .or_else(|| cfg.workload.queues.first().cloned())
            .unwrap_or_default();
        let mut s = Schedule::new(self.name.clone(), queue, payload_of(&self.name), rule)
            .max_attempts(cfg.protocol.max_attempts);
        if let Some(max) = self.catch_up_max {
            s = s.catch_up(CatchUp::Each { max });
        }
        if let Some(j) = self.jitter {
            s = s.jitter(j.0);
        }
        s
    }
}

/// The payload of a schedule's jobs: `sched:<name>` (the simulated handler
/// runs it briefly and succeeds).
pub fn payload_of(name: &str) -> Vec<u8> {
    format!("{PAYLOAD_PREFIX}{name}").into_bytes()
}

/// Payloads of schedule jobs start with this.
pub const PAYLOAD_PREFIX: &str = "sched:";

/// Every problem with the scenario's schedules and schedulers.
pub fn problems(cfg: &SimConfig) -> Vec<ConfigProblem> {
    let mut out = Vec::new();
    let mut bad = |path: String, message: String| out.push(ConfigProblem { path, message });
    if cfg.topology.schedulers > MAX_SCHEDULERS {
        bad(
            "topology.schedulers".into(),
            format!("at most {MAX_SCHEDULERS} schedulers"),
        );
    }
    if cfg.schedules.len() > MAX_SCHEDULES {
        bad(
            "schedules".into(),
            format!("at most {MAX_SCHEDULES} schedules"),
        );
        return out;
    }
    let p = &cfg.protocol;
    if p.scheduler_tick.as_ms() == 0 {
        bad(
            "protocol.scheduler_tick".into(),
            "must be greater than zero".into(),
        );
    }
    if p.misfire_grace.as_ms() < 2 * p.scheduler_tick.as_ms() {
        bad(
            "protocol.misfire_grace".into(),
            format!(
                "{} must be at least two scheduler ticks ({})",
                p.misfire_grace, p.scheduler_tick
            ),
        );
    }
    let policy = Policy::default();
    let mut names = BTreeSet::new();
    for (i, spec) in cfg.schedules.iter().enumerate() {
        let at = |field: &str| format!("schedules[{i}].{field}");
        if !names.insert(spec.name.as_str()) {
            bad(
                at("name"),
                format!("duplicate schedule name {:?}", spec.name),
            );
        }
        match (&spec.every, &spec.cron) {
            (Some(_), Some(_)) => bad(at("cron"), "give either `every` or `cron`, not both".into()),
            (None, None) => bad(at("every"), "give `every` or `cron`".into()),
            (Some(d), None) if d.as_ms() > 0 && *d < MIN_INTERVAL => bad(
                at("every"),
                format!("{d} is below the simulator's shortest interval {MIN_INTERVAL}"),
            ),
            _ => {}
        }
        if spec.time_zone.is_some() && spec.cron.is_none() {
            bad(at("time_zone"), "only a `cron` rule has a time zone".into());
        }
        if let Some(r) = spec.remove_at {
            if r.as_ms() == 0 || r >= cfg.duration {
                bad(
                    at("remove_at"),
                    format!(
                        "{r} must fall inside the run: after 0s and before its duration {}",
                        cfg.duration
                    ),
                );
            }
        }
        if let Some(q) = &spec.queue {
            if !cfg.workload.queues.contains(q) {
                bad(
                    at("queue"),
                    format!(
                        "{q:?} is not one of workload.queues {:?}: no worker would run its jobs",
                        cfg.workload.queues
                    ),
                );
                continue;
            }
        }
        if let Err(e) = spec.to_core(cfg).validate(&policy) {
            let field = match &e {
                InputError::BadSchedule { field, .. } => match *field {
                    "rule.cron" => "cron",
                    "rule.time_zone" => "time_zone",
                    "rule.interval" => "every",
                    "catch_up.max" => "catch_up_max",
                    other => other,
                },
                InputError::BadQueueName { .. } => "queue",
                _ => "name",
            };
            bad(at(field), e.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg_with(toml: &str) -> Vec<String> {
        let cfg: SimConfig = toml::from_str(toml).expect("parses");
        problems(&cfg).into_iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn bad_schedules_name_their_field() {
        let p = cfg_with(
            r#"
[[schedules]]
name = "a"
every = "0s"
[[schedules]]
name = "a"
cron = "not cron"
[[schedules]]
name = "b"
cron = "* * * * *"
time_zone = "Moon/Base"
[[schedules]]
name = "c"
every = "1s"
catch_up_max = 0
[[schedules]]
name = "d"
every = "1s"
catch_up_max = 1001
[[schedules]]
name = "e"
every = "1s"
remove_at = "0s"
[[schedules]]
name = "f"
every = "1s"
remove_at = "1h"
[[schedules]]
name = "g"
every = "1s"
remove_at = "10s"
"#,
        );
        let want = [
            "schedules[0].every",
            "schedules[1].name: duplicate",
            "schedules[1].cron",
            "schedules[2].time_zone",
            "schedules[3].catch_up_max",
            "schedules[4].catch_up_max",
            "schedules[5].remove_at",
            "schedules[6].remove_at",
        ];
        for w in want {
            assert!(
                p.iter().any(|x| x.starts_with(w)),
                "{w} missing from {p:#?}"
            );
        }
        assert!(
            !p.iter().any(|x| x.starts_with("schedules[7]")),
            "a removal inside the run is fine: {p:#?}"
        );
    }
}
