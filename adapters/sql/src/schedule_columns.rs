//! How a [`ScheduleRecord`] is stored in SQL columns (table
//! `leasehold_schedules`).
//!
//! The rule is spread over typed columns (`rule_kind` is `cron` or `every`,
//! with `cron_expr` and `time_zone`, or `interval_ms`), and the catch-up
//! policy is `catch_up_max` (NULL for "latest only"). A decoded row must be
//! a schedule the store would accept; one that is not is
//! [`StoreError::Corrupt`], never used.

use crate::column::SqlRow;
use leasehold_core::{CatchUp, Millis, Rule, Schedule, ScheduleRecord, StoreError, StoreTime};

/// The schedule columns, in the order of [`ScheduleColumns`]' fields.
pub const SCHEDULE_COLUMNS: &str = "name, queue, payload, rule_kind, cron_expr, time_zone, \
     interval_ms, catch_up_max, jitter_ms, max_attempts, version, created_at, updated_at";

/// One schedule row's columns as read from or written to SQL.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // one field per column of [`SCHEDULE_COLUMNS`], same names
pub struct ScheduleColumns {
    pub name: String,
    pub queue: String,
    pub payload: Vec<u8>,
    pub rule_kind: String,
    pub cron_expr: Option<String>,
    pub time_zone: Option<String>,
    pub interval_ms: Option<i64>,
    pub catch_up_max: Option<i64>,
    pub jitter_ms: i64,
    pub max_attempts: i64,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

/// Decodes the [`SCHEDULE_COLUMNS`] of `row`, starting at column 0, into
/// a schedule the store would accept ([`ScheduleColumns::into_record`]).
pub fn decode_schedule<R: SqlRow>(row: &R) -> Result<ScheduleRecord, StoreError> {
    ScheduleColumns {
        name: row.column(0)?,
        queue: row.column(1)?,
        payload: row.column(2)?,
        rule_kind: row.column(3)?,
        cron_expr: row.column(4)?,
        time_zone: row.column(5)?,
        interval_ms: row.column(6)?,
        catch_up_max: row.column(7)?,
        jitter_ms: row.column(8)?,
        max_attempts: row.column(9)?,
        version: row.column(10)?,
        created_at: row.column(11)?,
        updated_at: row.column(12)?,
    }
    .into_record()
}

fn corrupt(name: &str, what: &str) -> StoreError {
    StoreError::Corrupt(format!("schedule {name:?}: {what}"))
}

fn non_negative(v: i64, name: &str, what: &str) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| corrupt(name, &format!("negative {what}")))
}

impl ScheduleColumns {
    /// The columns of `r`.
    pub fn of(r: &ScheduleRecord) -> Result<Self, StoreError> {
        let s = &r.schedule;
        let big = |v: u64| i64::try_from(v).map_err(|_| corrupt(&s.name, "value too large"));
        let (rule_kind, cron_expr, time_zone, interval_ms) = match &s.rule {
            Rule::Cron { expr, time_zone } => {
                ("cron", Some(expr.clone()), Some(time_zone.clone()), None)
            }
            Rule::Every { interval } => ("every", None, None, Some(big(interval.0)?)),
        };
        Ok(ScheduleColumns {
            name: s.name.clone(),
            queue: s.queue.clone(),
            payload: s.payload.clone(),
            rule_kind: rule_kind.into(),
            cron_expr,
            time_zone,
            interval_ms,
            catch_up_max: match s.catch_up {
                CatchUp::Latest => None,
                CatchUp::Each { max } => Some(i64::from(max)),
            },
            jitter_ms: big(s.jitter.0)?,
            max_attempts: i64::from(s.max_attempts),
            version: big(r.version)?,
            created_at: r.created_at.0,
            updated_at: r.updated_at.0,
        })
    }

    /// The record these columns hold.
    pub fn into_record(self) -> Result<ScheduleRecord, StoreError> {
        let n = self.name.clone();
        let rule = match (
            self.rule_kind.as_str(),
            self.cron_expr,
            self.time_zone,
            self.interval_ms,
        ) {
            ("cron", Some(expr), Some(time_zone), None) => Rule::Cron { expr, time_zone },
            ("every", None, None, Some(i)) => Rule::Every {
                interval: Millis(non_negative(i, &n, "interval")?),
            },
            (kind, ..) => return Err(corrupt(&n, &format!("bad rule columns ({kind})"))),
        };
        let catch_up = match self.catch_up_max {
            None => CatchUp::Latest,
            Some(m) => CatchUp::Each {
                max: u32::try_from(m).map_err(|_| corrupt(&n, "bad catch_up_max"))?,
            },
        };
        let schedule = Schedule {
            name: self.name,
            queue: self.queue,
            payload: self.payload,
            rule,
            catch_up,
            jitter: Millis(non_negative(self.jitter_ms, &n, "jitter")?),
            max_attempts: u32::try_from(self.max_attempts)
                .map_err(|_| corrupt(&n, "bad max_attempts"))?,
        };
        if let Err(e) = schedule.rule.compile() {
            return Err(corrupt(&n, &e.to_string()));
        }
        Ok(ScheduleRecord {
            schedule,
            version: non_negative(self.version, &n, "version")?,
            created_at: StoreTime(self.created_at),
            updated_at: StoreTime(self.updated_at),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_columns() {
        for s in [
            Schedule::new("a", "q", vec![0, 255], Rule::every(Millis(1500))),
            Schedule::new("b", "q", "x", Rule::cron_in("0 3 * * *", "Europe/Berlin"))
                .catch_up(CatchUp::Each { max: 7 })
                .jitter(Millis(250))
                .max_attempts(9),
        ] {
            let r = ScheduleRecord {
                schedule: s,
                version: 3,
                created_at: StoreTime(10),
                updated_at: StoreTime(20),
            };
            let back = ScheduleColumns::of(&r).unwrap().into_record().unwrap();
            assert_eq!(back, r);
        }
    }
}
