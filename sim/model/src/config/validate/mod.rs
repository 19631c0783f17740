//! [`SimConfig::validate`]: every check of a scenario, one function per
//! section, in a fixed order.
//!
//! The order is part of the output: the loader reports the problems in the
//! order found (the CLI's tests and snapshot files compare them), so the
//! sections run as they always have: the bounds ([`crate::bounds`]) alone
//! and first, then topology, run, protocol, workload, wire frames,
//! network, swarm faults, scripted events, schedules, pruners and coverage declarations, and last, only
//! when all of those passed, what the correct core cannot work under
//! ([`crate::feasible`]).

mod coverage;
mod faults;
mod pruner;
mod schedules;
mod settings;
mod wire;

use super::{ConfigProblem, Range, SimConfig, ValidConfig};
use std::fmt;

/// Where a section reports a problem: the field's dotted path and what is
/// wrong with it.
pub(super) type Bad<'a> = dyn FnMut(&str, String) + 'a;

impl SimConfig {
    /// Checks the settings; answers every problem found.
    pub fn validate(&self) -> Result<(), Vec<ConfigProblem>> {
        // Bounds first: the checks below allocate per host, job and event.
        let beyond = crate::bounds::problems(self);
        if !beyond.is_empty() {
            return Err(beyond);
        }
        let mut out = Vec::new();
        let mut bad = |path: &str, message: String| {
            out.push(ConfigProblem {
                path: path.to_string(),
                message,
            })
        };
        settings::topology(self, &mut bad);
        settings::run(self, &mut bad);
        settings::protocol(self, &mut bad);
        settings::workload(self, &mut bad);
        wire::frames(self, &mut bad);
        settings::network(self, &mut bad);
        faults::swarm(self, &mut bad);
        faults::events(self, &mut bad);
        schedules::schedules(self, &mut bad);
        pruner::pruner(self, &mut bad);
        coverage::coverage(self, &mut bad);
        // Settings the correct core cannot work under are judged once each
        // setting is valid on its own, so one mistake is reported once.
        if out.is_empty() {
            out.extend(crate::feasible::problems(self));
        }
        if out.is_empty() {
            Ok(())
        } else {
            Err(out)
        }
    }

    /// Validates and keeps the proof: the [`ValidConfig`] that a caller
    /// running many seeds holds instead of validating for each.
    pub fn into_valid(self) -> Result<ValidConfig, Vec<ConfigProblem>> {
        self.validate()?;
        Ok(ValidConfig(self))
    }
}

impl TryFrom<SimConfig> for ValidConfig {
    type Error = Vec<ConfigProblem>;
    fn try_from(cfg: SimConfig) -> Result<Self, Self::Error> {
        cfg.into_valid()
    }
}

/// A range whose minimum lies above its maximum.
fn check_range<T: PartialOrd + fmt::Display>(bad: &mut Bad, path: &str, r: &Range<T>) {
    if r.lo > r.hi {
        bad(path, format!("min {} is greater than max {}", r.lo, r.hi));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::duration::Dur;

    #[test]
    fn a_valid_config_is_the_one_that_validated() {
        let cfg = SimConfig::default();
        let valid = cfg.clone().into_valid().expect("the defaults are valid");
        assert_eq!(valid.config(), &cfg);
        assert_eq!(valid.seeds, cfg.seeds, "reads as the config it holds");
        assert_eq!(valid.into_inner(), cfg);
    }

    #[test]
    fn an_invalid_config_gives_its_problems_and_no_valid_config() {
        let mut cfg = SimConfig {
            seeds: 0,
            ..SimConfig::default()
        };
        cfg.protocol.renew_interval = cfg.protocol.lease;
        let want = cfg.validate().expect_err("two problems");
        let got = ValidConfig::try_from(cfg).expect_err("refused");
        assert_eq!(got, want);
        let paths: Vec<&str> = got.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["seeds", "protocol.renew_interval"]);
    }

    #[test]
    fn the_store_paths_are_checked_where_they_are_written() {
        let mut cfg = SimConfig::default();
        cfg.faults.conflict_on = crate::config::ConflictOn::EveryWrite;
        let paths: Vec<String> = cfg
            .validate()
            .expect_err("conflicts reach nothing")
            .into_iter()
            .map(|p| p.path)
            .collect();
        assert_eq!(paths, ["faults.conflict_on"]);
        cfg.faults.store_conflict = Range::new(0.0, 0.1);
        cfg.faults.batch_parts = crate::config::BatchParts::Drawn;
        assert!(cfg.validate().is_ok());
        cfg.faults.single_cancel = Range::new(0.0, 1.5);
        let paths: Vec<String> = cfg
            .validate()
            .expect_err("not a probability")
            .into_iter()
            .map(|p| p.path)
            .collect();
        assert_eq!(paths, ["faults.single_cancel"]);
        // A value that is not one of the orders is refused where it is read.
        let bad: Result<SimConfig, _> = toml::from_str("[faults]\nbatch_parts = \"random\"\n");
        assert!(bad.is_err());
    }

    #[test]
    fn sections_report_in_their_fixed_order() {
        // One problem from each of topology, run, protocol, workload (with
        // faults.oneway_share among its probabilities), network, swarm
        // faults, events and schedules: the order the loader prints them in.
        let mut cfg = SimConfig {
            tick: Dur::ms(0),
            events: vec!["crash nobody at 1s".parse().expect("a sentence")],
            ..SimConfig::default()
        };
        cfg.topology.workers_per_process = 0;
        cfg.protocol.max_attempts = 0;
        cfg.protocol.misfire_grace = Dur::ms(0);
        cfg.faults.oneway_share = 2.0;
        cfg.workload.run_time = Range::new(Dur::secs(2), Dur::secs(1));
        cfg.network.latency = Range::new(Dur::ms(9), Dur::ms(1));
        cfg.faults.pause_rate = Range::new(0.0, 61.0);
        let paths: Vec<String> = cfg
            .validate()
            .expect_err("problems")
            .into_iter()
            .map(|p| p.path)
            .collect();
        assert_eq!(
            paths,
            [
                "topology.workers_per_process",
                "tick",
                "protocol.max_attempts",
                "faults.oneway_share",
                "workload.run_time",
                "network.latency",
                "faults.pause_rate",
                "events[0]",
                "protocol.misfire_grace",
            ]
        );
    }
}
