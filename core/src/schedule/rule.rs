//! A schedule's rule: which store instants are its plan times.
//!
//! Two kinds of rule:
//! - [`Rule::Every`]: every `interval` milliseconds, aligned to the Unix
//!   epoch: the plan times are exactly the multiples of the interval. Every
//!   host and every store agrees on them without knowing when the schedule
//!   was made.
//! - [`Rule::Cron`]: a cron expression (5 fields, or 6 with seconds first)
//!   evaluated on the wall clock of an IANA time zone by the `croner` crate
//!   on `jiff`, with the time zone database bundled into the binary so a
//!   plan time never depends on the host's zoneinfo files. Plan times are
//!   whole seconds. Daylight saving follows croner's OCPS rules: a fixed
//!   time that falls into a spring-forward gap runs at the first instant
//!   after the gap, once; a fixed time repeated by a fall-back runs once, on
//!   its first occurrence; interval patterns (`*/15 * * * *`) run on both
//!   halves of a repeated hour.
//!
//! Invariant: [`CompiledRule::is_plan_time`] holds exactly for the instants
//! that [`CompiledRule::previous`] and [`CompiledRule::next_after`]
//! enumerate (the unit tests check it across DST changes).

use crate::error::InputError;
use crate::time::{Millis, StoreTime};
use croner::parser::{CronParser, Seconds};
use croner::Cron;
use jiff::tz::{TimeZone, TimeZoneDatabase};
use jiff::{Timestamp, Zoned};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// Longest cron expression accepted, in bytes.
pub const MAX_CRON_LEN: usize = 256;
/// The time zone of a cron rule that names none.
pub const DEFAULT_TIME_ZONE: &str = "UTC";

/// When a schedule's plan times fall.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// A cron expression on the wall clock of `time_zone` (an IANA name such
    /// as `Europe/Berlin`, or `UTC`).
    Cron {
        /// The expression: `min hour dom month dow`, or with seconds first.
        expr: String,
        /// The IANA time zone its wall clock reads.
        time_zone: String,
    },
    /// Every `interval`, at the multiples of it since the Unix epoch.
    Every {
        /// The period; greater than zero.
        interval: Millis,
    },
}

impl Rule {
    /// A cron rule in UTC.
    pub fn cron(expr: impl Into<String>) -> Rule {
        Rule::Cron {
            expr: expr.into(),
            time_zone: DEFAULT_TIME_ZONE.to_string(),
        }
    }

    /// A cron rule on the wall clock of `time_zone`.
    pub fn cron_in(expr: impl Into<String>, time_zone: impl Into<String>) -> Rule {
        Rule::Cron {
            expr: expr.into(),
            time_zone: time_zone.into(),
        }
    }

    /// A fixed-interval rule.
    pub fn every(interval: Millis) -> Rule {
        Rule::Every { interval }
    }

    /// Checks the rule and prepares it for evaluation. A bad rule is an
    /// [`InputError::BadSchedule`] naming the field (`rule.cron`,
    /// `rule.time_zone`, `rule.interval`).
    pub fn compile(&self) -> Result<CompiledRule, InputError> {
        match self {
            Rule::Every { interval } => {
                if interval.0 == 0 {
                    return Err(bad("rule.interval", "must be greater than zero"));
                }
                if interval.0 > i64::MAX as u64 {
                    return Err(bad("rule.interval", "is too long"));
                }
                Ok(CompiledRule::Every(interval.0 as i64))
            }
            Rule::Cron { expr, time_zone } => {
                if expr.len() > MAX_CRON_LEN {
                    return Err(bad(
                        "rule.cron",
                        format!("is longer than {MAX_CRON_LEN} bytes"),
                    ));
                }
                let cron = CronParser::builder()
                    .seconds(Seconds::Optional)
                    .build()
                    .parse(expr)
                    .map_err(|e| {
                        bad(
                            "rule.cron",
                            format!("{expr:?} is not a cron expression: {e}"),
                        )
                    })?;
                let tz = tz_db().get(time_zone).map_err(|_| {
                    bad(
                        "rule.time_zone",
                        format!("{time_zone:?} is not a known IANA time zone"),
                    )
                })?;
                let rule = CompiledRule::Cron(Box::new((cron, tz)));
                // A pattern that never matches (`0 0 30 2 *`) is refused now
                // rather than searched for on every tick.
                if rule.next_after(StoreTime(0)).is_none() {
                    return Err(bad("rule.cron", format!("{expr:?} never matches")));
                }
                Ok(rule)
            }
        }
    }
}

fn bad(field: &'static str, reason: impl Into<String>) -> InputError {
    InputError::BadSchedule {
        field,
        reason: reason.into(),
    }
}

/// The bundled time zone database (never the host's files: every host must
/// agree on plan times).
fn tz_db() -> &'static TimeZoneDatabase {
    static DB: OnceLock<TimeZoneDatabase> = OnceLock::new();
    DB.get_or_init(TimeZoneDatabase::bundled)
}

/// A rule ready for evaluation.
#[derive(Clone, Debug)]
pub enum CompiledRule {
    /// Every so many milliseconds.
    Every(i64),
    /// A parsed cron pattern and its time zone.
    Cron(Box<(Cron, TimeZone)>),
}

const SECOND: i64 = 1000;

impl CompiledRule {
    /// What `find` finds searching cron rule `c` from `t`. Plan times are
    /// whole seconds and croner searches from a whole second (a search
    /// for the next one starts at the next whole second), so the search
    /// starts from the last whole second at or before `t`.
    fn search_cron(
        c: &(Cron, TimeZone),
        t: StoreTime,
        find: impl FnOnce(&Cron, &Zoned) -> Option<Zoned>,
    ) -> Option<StoreTime> {
        let (cron, tz) = c;
        let floor = t.0.div_euclid(SECOND) * SECOND;
        let from = Timestamp::from_millisecond(floor)
            .ok()?
            .to_zoned(tz.clone());
        let found = find(cron, &from)?;
        Some(StoreTime(found.timestamp().as_millisecond()))
    }

    /// Whether `t` is a plan time of the rule.
    pub fn is_plan_time(&self, t: StoreTime) -> bool {
        match self {
            CompiledRule::Every(i) => t.0.rem_euclid(*i) == 0,
            CompiledRule::Cron(_) => {
                t.0.rem_euclid(SECOND) == 0 && self.next_after(StoreTime(t.0 - 1)) == Some(t)
            }
        }
    }

    /// The first plan time strictly after `t`.
    pub fn next_after(&self, t: StoreTime) -> Option<StoreTime> {
        match self {
            CompiledRule::Every(i) => {
                let k = t.0.div_euclid(*i).checked_add(1)?;
                k.checked_mul(*i).map(StoreTime)
            }
            CompiledRule::Cron(c) => Self::search_cron(c, t, |cron, from| {
                cron.find_next_occurrence(from, false).ok()
            }),
        }
    }

    /// The last plan time at or before `t`.
    pub fn previous(&self, t: StoreTime) -> Option<StoreTime> {
        match self {
            CompiledRule::Every(i) => t.0.div_euclid(*i).checked_mul(*i).map(StoreTime),
            CompiledRule::Cron(c) => Self::search_cron(c, t, |cron, from| {
                cron.find_previous_occurrence(from, true).ok()
            }),
        }
    }

    /// The last plan time strictly before `t`.
    pub fn previous_before(&self, t: StoreTime) -> Option<StoreTime> {
        self.previous(StoreTime(t.0.checked_sub(1)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> StoreTime {
        StoreTime(s.parse::<Timestamp>().unwrap().as_millisecond())
    }

    #[test]
    fn interval_plan_times_are_the_multiples_of_the_interval() {
        let r = Rule::every(Millis(10_000)).compile().unwrap();
        assert!(r.is_plan_time(StoreTime(20_000)));
        assert!(!r.is_plan_time(StoreTime(20_001)));
        assert_eq!(r.next_after(StoreTime(20_000)), Some(StoreTime(30_000)));
        assert_eq!(r.next_after(StoreTime(19_999)), Some(StoreTime(20_000)));
        assert_eq!(r.previous(StoreTime(29_999)), Some(StoreTime(20_000)));
        assert_eq!(
            r.previous_before(StoreTime(20_000)),
            Some(StoreTime(10_000))
        );
        assert_eq!(r.previous(StoreTime(-1)), Some(StoreTime(-10_000)));
    }

    #[test]
    fn cron_plan_times_follow_the_expression() {
        let r = Rule::cron("*/15 * * * *").compile().unwrap();
        let t = ms("2024-01-01T00:15:00Z");
        assert!(r.is_plan_time(t));
        assert!(!r.is_plan_time(StoreTime(t.0 + 1000)));
        assert!(!r.is_plan_time(StoreTime(t.0 + 1)));
        assert_eq!(r.next_after(t), Some(ms("2024-01-01T00:30:00Z")));
        assert_eq!(r.next_after(StoreTime(t.0 - 1)), Some(t));
        assert_eq!(r.previous(StoreTime(t.0 + 999)), Some(t));
        assert_eq!(r.previous_before(t), Some(ms("2024-01-01T00:00:00Z")));
        let s = Rule::cron("30 * * * * *").compile().unwrap();
        assert!(s.is_plan_time(ms("2024-01-01T00:00:30Z")));
    }

    /// Enumerates forwards and backwards across `[from, to]` and checks that
    /// both walks and `is_plan_time` agree.
    fn walks_agree(r: &CompiledRule, from: StoreTime, to: StoreTime) -> Vec<StoreTime> {
        let mut fwd = Vec::new();
        let mut t = StoreTime(from.0 - 1);
        for _ in 0..10_000 {
            match r.next_after(t) {
                Some(n) if n <= to => {
                    assert!(r.is_plan_time(n), "{n} enumerated but not a plan time");
                    fwd.push(n);
                    t = n;
                }
                _ => break,
            }
        }
        let mut back = Vec::new();
        let mut t = StoreTime(to.0 + 1);
        for _ in 0..10_000 {
            match r.previous_before(t) {
                Some(p) if p >= from => {
                    back.push(p);
                    t = p;
                }
                _ => break,
            }
        }
        back.reverse();
        assert_eq!(fwd, back, "forward and backward walks differ");
        fwd
    }

    /// The plan times of cron `expr` in Europe/Berlin within `[from, to]`
    /// ([`walks_agree`]).
    fn in_berlin(expr: &str, from: StoreTime, to: StoreTime) -> Vec<StoreTime> {
        let r = Rule::cron_in(expr, "Europe/Berlin").compile().unwrap();
        walks_agree(&r, from, to)
    }

    #[test]
    fn a_fixed_time_in_the_spring_gap_runs_once_right_after_it() {
        // Europe/Berlin skips 02:00-03:00 on 2024-03-31.
        let got = in_berlin(
            "30 2 * * *",
            ms("2024-03-30T00:00:00Z"),
            ms("2024-04-01T12:00:00Z"),
        );
        assert_eq!(
            got,
            vec![
                ms("2024-03-30T01:30:00Z"), // 02:30 CET
                ms("2024-03-31T01:00:00Z"), // the gap: 03:00 CEST
                ms("2024-04-01T00:30:00Z"), // 02:30 CEST
            ]
        );
    }

    #[test]
    fn a_fixed_time_repeated_in_the_fall_runs_once() {
        // Europe/Berlin repeats 02:00-03:00 on 2024-10-27.
        let got = in_berlin(
            "30 2 * * *",
            ms("2024-10-26T12:00:00Z"),
            ms("2024-10-27T12:00:00Z"),
        );
        assert_eq!(got, vec![ms("2024-10-27T00:30:00Z")]);
    }

    #[test]
    fn an_interval_pattern_runs_on_both_halves_of_a_repeated_hour() {
        let got = in_berlin(
            "0 * * * *",
            ms("2024-10-26T23:30:00Z"),
            ms("2024-10-27T02:30:00Z"),
        );
        assert_eq!(
            got,
            vec![
                ms("2024-10-27T00:00:00Z"), // 02:00 CEST
                ms("2024-10-27T01:00:00Z"), // 02:00 CET
                ms("2024-10-27T02:00:00Z"), // 03:00 CET
            ]
        );
    }

    /// An expression of exactly `MAX_CRON_LEN` bytes is parsed (and here
    /// refused as cron, not for its length); one byte more is too long.
    #[test]
    fn a_cron_expression_may_be_max_cron_len_bytes_long() {
        let message = |expr: String| match Rule::cron(expr).compile() {
            Err(InputError::BadSchedule { reason, .. }) => reason,
            other => panic!("expected a bad schedule, got {other:?}"),
        };
        let too_long = format!("is longer than {MAX_CRON_LEN} bytes");
        assert_ne!(message("x".repeat(MAX_CRON_LEN)), too_long);
        assert_eq!(message("x".repeat(MAX_CRON_LEN + 1)), too_long);
    }

    #[test]
    fn bad_rules_name_their_field() {
        let field = |r: Rule| match r.compile() {
            Err(InputError::BadSchedule { field, .. }) => field,
            other => panic!("expected a bad schedule, got {other:?}"),
        };
        assert_eq!(field(Rule::every(Millis(0))), "rule.interval");
        assert_eq!(
            field(Rule::every(Millis(i64::MAX as u64 + 1))),
            "rule.interval"
        );
        assert!(Rule::every(Millis(i64::MAX as u64)).compile().is_ok());
        assert_eq!(field(Rule::cron("61 * * * *")), "rule.cron");
        assert_eq!(field(Rule::cron("not cron")), "rule.cron");
        assert_eq!(field(Rule::cron("")), "rule.cron");
        assert_eq!(field(Rule::cron("0 0 30 2 *")), "rule.cron");
        assert_eq!(
            field(Rule::cron_in("* * * * *", "Mars/Olympus")),
            "rule.time_zone"
        );
    }
}
