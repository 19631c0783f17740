//! Scheduler configuration: named defaults, validated at build.
//!
//! Build-time checks: a non-zero tick and request timeout; a misfire grace
//! of at least two ticks (so a healthy scheduler always sees a plan time
//! while it is still on time, and the catch-up policy only ever applies to
//! plan times missed while it was away); at least one fire per schedule and
//! tick; the schedules to ensure are valid and their names unique.

use crate::error::ConfigError;
use crate::policy::Policy;
use crate::schedule::Schedule;
use crate::time::Millis;
use std::collections::BTreeSet;

/// Default interval between two looks at the schedules (on the scheduler's
/// own clock: it only decides when to ask, never what is due).
pub const DEFAULT_SCHEDULER_TICK: Millis = Millis(1_000);
/// Default age (in store time) past which a plan time counts as missed and
/// falls under its schedule's catch-up policy.
pub const DEFAULT_MISFIRE_GRACE: Millis = Millis(30_000);
/// Default most on-time fires of one schedule per tick.
pub const DEFAULT_MAX_FIRES_PER_TICK: u32 = 100;
/// Most fires of one schedule per tick a configuration may ask for.
pub const MAX_FIRES_PER_TICK_CAP: u32 = 10_000;
/// Most schedules a scheduler may be asked to ensure.
pub const MAX_ENSURED_SCHEDULES: usize = 10_000;

const _: () = assert!(DEFAULT_MISFIRE_GRACE.0 >= 2 * DEFAULT_SCHEDULER_TICK.0);
const _: () = assert!(DEFAULT_MAX_FIRES_PER_TICK <= MAX_FIRES_PER_TICK_CAP);

/// A validated scheduler configuration. Build it with
/// [`SchedulerConfig::builder`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// This scheduler's name, for logs.
    pub scheduler_id: String,
    /// Interval between ticks, on the scheduler's own clock.
    pub tick: Millis,
    /// Plan times older than this (store time) are late.
    pub misfire_grace: Millis,
    /// Most on-time fires of one schedule per tick.
    pub max_fires_per_tick: u32,
    /// Time a request may take before its outcome counts as unknown.
    pub request_timeout: Millis,
    /// Schedules put into the store when the scheduler starts (an
    /// identical put changes nothing).
    pub ensure: Vec<Schedule>,
    /// A deliberately buggy behaviour from the catalogue (simulator only).
    #[cfg(feature = "buggy-variants")]
    pub variant: Option<crate::variants::Variant>,
}

impl SchedulerConfig {
    /// A builder for scheduler `id`, with the defaults.
    pub fn builder(id: impl Into<String>) -> SchedulerConfigBuilder {
        SchedulerConfigBuilder {
            cfg: SchedulerConfig {
                scheduler_id: id.into(),
                tick: DEFAULT_SCHEDULER_TICK,
                misfire_grace: DEFAULT_MISFIRE_GRACE,
                max_fires_per_tick: DEFAULT_MAX_FIRES_PER_TICK,
                request_timeout: super::config::DEFAULT_REQUEST_TIMEOUT,
                ensure: Vec::new(),
                #[cfg(feature = "buggy-variants")]
                variant: None,
            },
            policy: Policy::default(),
        }
    }

    /// Whether this scheduler reads its own wall clock for plan times (the
    /// catalogue's `scheduler-own-clock`; never in shipped builds).
    pub(crate) fn uses_own_clock(&self) -> bool {
        #[cfg(feature = "buggy-variants")]
        {
            self.variant == Some(crate::variants::Variant::SchedulerOwnClock)
        }
        #[cfg(not(feature = "buggy-variants"))]
        false
    }
}

/// Builds a [`SchedulerConfig`].
#[derive(Clone, Debug)]
pub struct SchedulerConfigBuilder {
    cfg: SchedulerConfig,
    policy: Policy,
}

impl SchedulerConfigBuilder {
    /// Interval between ticks.
    pub fn tick(mut self, v: Millis) -> Self {
        self.cfg.tick = v;
        self
    }

    /// Age past which a plan time is late.
    pub fn misfire_grace(mut self, v: Millis) -> Self {
        self.cfg.misfire_grace = v;
        self
    }

    /// Most on-time fires of one schedule per tick.
    pub fn max_fires_per_tick(mut self, v: u32) -> Self {
        self.cfg.max_fires_per_tick = v;
        self
    }

    /// Time a request may take.
    pub fn request_timeout(mut self, v: Millis) -> Self {
        self.cfg.request_timeout = v;
        self
    }

    /// Puts `schedule` into the store when the scheduler starts.
    pub fn ensure(mut self, schedule: Schedule) -> Self {
        self.cfg.ensure.push(schedule);
        self
    }

    /// The store policy the ensured schedules are checked against at build
    /// (default: [`Policy::default`]; the store checks again).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Runs a deliberately buggy variant (simulator only).
    #[cfg(feature = "buggy-variants")]
    pub fn variant(mut self, v: crate::variants::Variant) -> Self {
        self.cfg.variant = Some(v);
        self
    }

    /// Validates and returns the configuration.
    pub fn build(self) -> Result<SchedulerConfig, ConfigError> {
        let c = self.cfg;
        if c.scheduler_id.is_empty() {
            return Err(ConfigError::new("scheduler_id", "must not be empty"));
        }
        for (field, v) in [
            ("tick", c.tick.0),
            ("request_timeout", c.request_timeout.0),
            ("max_fires_per_tick", u64::from(c.max_fires_per_tick)),
        ] {
            if v == 0 {
                return Err(ConfigError::new(field, "must be greater than zero"));
            }
        }
        if c.max_fires_per_tick > MAX_FIRES_PER_TICK_CAP {
            return Err(ConfigError::new(
                "max_fires_per_tick",
                format!("must be at most {MAX_FIRES_PER_TICK_CAP}"),
            ));
        }
        if c.misfire_grace.0 < c.tick.0.saturating_mul(2) {
            return Err(ConfigError::new(
                "misfire_grace",
                format!(
                    "{} must be at least two ticks ({}): a healthy scheduler must see every \
                     plan time while it is on time",
                    c.misfire_grace, c.tick
                ),
            ));
        }
        if c.ensure.len() > MAX_ENSURED_SCHEDULES {
            return Err(ConfigError::new(
                "schedules",
                format!("at most {MAX_ENSURED_SCHEDULES}"),
            ));
        }
        check_schedules(&c.ensure, &self.policy)?;
        Ok(c)
    }
}

/// Checks a list of schedules: each valid under `policy`, names unique.
/// A problem names the field as `schedules[i].field`.
pub fn check_schedules(schedules: &[Schedule], policy: &Policy) -> Result<(), ConfigError> {
    let mut names = BTreeSet::new();
    for (i, s) in schedules.iter().enumerate() {
        if let Err(e) = s.validate(policy) {
            use crate::error::InputError as E;
            let field: &str = match &e {
                E::BadSchedule { field, .. } => field,
                E::BadQueueName { .. } => "queue",
                E::PayloadTooLarge { .. } => "payload",
                E::BadMaxAttempts { .. } => "max_attempts",
                _ => "schedule",
            };
            return Err(ConfigError {
                field: "schedules",
                reason: format!("schedules[{i}].{field}: {e}"),
            });
        }
        if !names.insert(s.name.as_str()) {
            return Err(ConfigError {
                field: "schedules",
                reason: format!("schedules[{i}].name: duplicate schedule name {:?}", s.name),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{CatchUp, Rule};

    fn s(name: &str) -> Schedule {
        Schedule::new(name, "q", "p", Rule::every(Millis(1000)))
    }

    #[test]
    fn at_most_the_cap_of_schedules_may_be_ensured() {
        let many = |n: usize| {
            (0..n).fold(SchedulerConfig::builder("s"), |b, i| {
                b.ensure(s(&format!("s{i}")))
            })
        };
        let c = many(MAX_ENSURED_SCHEDULES).build().unwrap();
        assert_eq!(c.ensure.len(), MAX_ENSURED_SCHEDULES);
        let e = many(MAX_ENSURED_SCHEDULES + 1).build().unwrap_err();
        assert_eq!(e.field, "schedules");
        assert!(e.reason.contains("at most"), "{e:?}");
    }

    #[test]
    fn max_fires_per_tick_may_be_its_cap() {
        let at = |n| SchedulerConfig::builder("s").max_fires_per_tick(n).build();
        assert!(at(MAX_FIRES_PER_TICK_CAP).is_ok());
        assert_eq!(
            at(MAX_FIRES_PER_TICK_CAP + 1).unwrap_err().field,
            "max_fires_per_tick"
        );
    }

    #[test]
    fn defaults_build() {
        let c = SchedulerConfig::builder("s1").build().unwrap();
        assert!(c.misfire_grace.0 >= 2 * c.tick.0);
    }

    #[test]
    fn nonsense_is_refused_naming_the_field() {
        let f = |b: SchedulerConfigBuilder| b.build().unwrap_err();
        assert_eq!(f(SchedulerConfig::builder("")).field, "scheduler_id");
        assert_eq!(
            f(SchedulerConfig::builder("s").tick(Millis(0))).field,
            "tick"
        );
        assert_eq!(
            f(SchedulerConfig::builder("s").misfire_grace(Millis(1999))).field,
            "misfire_grace"
        );
        assert_eq!(
            f(SchedulerConfig::builder("s").max_fires_per_tick(0)).field,
            "max_fires_per_tick"
        );
        let e = f(SchedulerConfig::builder("s").ensure(s("a")).ensure(s("a")));
        assert!(
            e.reason.contains("schedules[1].name") && e.reason.contains("duplicate"),
            "{e}"
        );
        let e = f(SchedulerConfig::builder("s").ensure(s("a").catch_up(CatchUp::Each { max: 0 })));
        assert!(e.reason.contains("schedules[0].catch_up.max"), "{e}");
        let bad_cron = Schedule::new("c", "q", "p", Rule::cron("nope"));
        let e = f(SchedulerConfig::builder("s").ensure(bad_cron));
        assert!(e.reason.contains("schedules[0].rule.cron"), "{e}");
        let bad_tz = Schedule::new("c", "q", "p", Rule::cron_in("* * * * *", "Nowhere/Land"));
        let e = f(SchedulerConfig::builder("s").ensure(bad_tz));
        assert!(e.reason.contains("schedules[0].rule.time_zone"), "{e}");
        let zero = Schedule::new("c", "q", "p", Rule::every(Millis(0)));
        let e = f(SchedulerConfig::builder("s").ensure(zero));
        assert!(e.reason.contains("schedules[0].rule.interval"), "{e}");
        let bad_queue = Schedule::new("c", "a queue", "p", Rule::every(Millis(1000)));
        let e = f(SchedulerConfig::builder("s").ensure(bad_queue));
        assert!(e.reason.contains("schedules[0].queue"), "{e}");
        let big = vec![0u8; Policy::default().limits.max_payload_bytes + 1];
        let big = Schedule::new("c", "q", big, Rule::every(Millis(1000)));
        let e = f(SchedulerConfig::builder("s").ensure(big));
        assert!(e.reason.contains("schedules[0].payload"), "{e}");
        let no_tries = Schedule::new("c", "q", "p", Rule::every(Millis(1000))).max_attempts(0);
        let e = f(SchedulerConfig::builder("s").ensure(no_tries));
        assert!(e.reason.contains("schedules[0].max_attempts"), "{e}");
    }
}
