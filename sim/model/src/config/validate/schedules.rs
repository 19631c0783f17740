//! The check of the scenario's `[[schedules]]` and its schedulers.
//!
//! A problem is reported under the field's path (`schedules[1].cron`),
//! which the scenario loader turns into `FILE:LINE:COL`. The checks are the
//! core's own (a schedule the store would refuse is refused here, naming
//! the field), plus what the simulator needs: a unique name, one rule, a
//! queue some worker serves, a removal inside the run.

use super::Bad;
use crate::config::SimConfig;
use crate::schedules::{MAX_SCHEDULERS, MAX_SCHEDULES, MIN_INTERVAL};
use leasehold_core::{InputError, Policy};
use std::collections::BTreeSet;

/// Every problem with the scenario's schedules and schedulers.
pub(super) fn schedules(cfg: &SimConfig, bad: &mut Bad) {
    if cfg.topology.schedulers > MAX_SCHEDULERS {
        bad(
            "topology.schedulers",
            format!("at most {MAX_SCHEDULERS} schedulers"),
        );
    }
    if cfg.schedules.len() > MAX_SCHEDULES {
        bad("schedules", format!("at most {MAX_SCHEDULES} schedules"));
        return;
    }
    let p = &cfg.protocol;
    if p.scheduler_tick.as_ms() == 0 {
        bad(
            "protocol.scheduler_tick",
            "must be greater than zero".into(),
        );
    }
    if p.misfire_grace.as_ms() < 2 * p.scheduler_tick.as_ms() {
        bad(
            "protocol.misfire_grace",
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
                &at("name"),
                format!("duplicate schedule name {:?}", spec.name),
            );
        }
        match (&spec.every, &spec.cron) {
            (Some(_), Some(_)) => bad(
                &at("cron"),
                "give either `every` or `cron`, not both".into(),
            ),
            (None, None) => bad(&at("every"), "give `every` or `cron`".into()),
            (Some(d), None) if d.as_ms() > 0 && *d < MIN_INTERVAL => bad(
                &at("every"),
                format!("{d} is below the simulator's shortest interval {MIN_INTERVAL}"),
            ),
            _ => {}
        }
        if spec.time_zone.is_some() && spec.cron.is_none() {
            bad(
                &at("time_zone"),
                "only a `cron` rule has a time zone".into(),
            );
        }
        if let Some(r) = spec.remove_at {
            if r.as_ms() == 0 || r >= cfg.duration {
                bad(
                    &at("remove_at"),
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
                    &at("queue"),
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
            bad(&at(field), e.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg_with(toml: &str) -> Vec<String> {
        let cfg: SimConfig = toml::from_str(toml).expect("parses");
        let mut out = Vec::new();
        schedules(&cfg, &mut |path: &str, message: String| {
            out.push(format!("{path}: {message}"))
        });
        out
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
