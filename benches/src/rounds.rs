//! `--rounds N`: the same measurement N times on one store, and the range
//! of each figure over the rounds.
//!
//! A single run hides how much a figure moves from run to run, and on a
//! fresh PostgreSQL cluster the first rounds also pay for growing `pg_wal`
//! (`wal.rs`): the rounds show both. Each round enqueues and drains its own
//! `--jobs`, so rounds differ only in what the store already holds (the
//! drained rows and audit events of earlier rounds).

use crate::args::{Mode, Settings};
use crate::figures::Figures;
use serde_json::{json, Value};

/// The smallest and largest of a figure over the rounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Range {
    fn of(values: impl IntoIterator<Item = f64>) -> Option<Range> {
        values.into_iter().fold(None, |r, v| {
            Some(match r {
                None => Range { min: v, max: v },
                Some(Range { min, max }) => Range {
                    min: min.min(v),
                    max: max.max(v),
                },
            })
        })
    }

    fn json(r: Option<Range>) -> Value {
        r.map_or(Value::Null, |r| json!({ "min": r.min, "max": r.max }))
    }
}

/// The ranges of one store's rounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// Rounds measured.
    pub rounds: usize,
    /// Drain throughput, jobs/s.
    pub drain: Option<Range>,
    /// Worker mode: the batched ceiling, jobs/s.
    pub ceiling: Option<Range>,
    /// Worker mode: drain / ceiling.
    pub ratio: Option<Range>,
}

/// The ranges over `rounds` (in the order they ran).
pub fn summarize(s: &Settings, rounds: &[Figures]) -> Summary {
    let rate = |f: &Figures| f.rate(s.jobs);
    Summary {
        rounds: rounds.len(),
        drain: Range::of(rounds.iter().map(rate)),
        ceiling: Range::of(rounds.iter().filter_map(|f| f.ceiling)),
        ratio: Range::of(
            rounds
                .iter()
                .filter_map(|f| f.ceiling.map(|c| rate(f) / c.max(1e-9))),
        ),
    }
}

/// The human line and the JSON object of a summary.
pub fn report(backend: &str, s: &Settings, sum: &Summary) -> (String, Value) {
    let k = |r: Range| format!("{:.1}k–{:.1}k jobs/s", r.min / 1e3, r.max / 1e3);
    let what = match s.mode {
        Mode::Worker => "Worker",
        _ => "drain",
    };
    let mut text = format!("== {backend}: over {} rounds", sum.rounds);
    if let Some(d) = sum.drain {
        text += &format!(": {what} {}", k(d));
    }
    if let Some(c) = sum.ceiling {
        text += &format!("; batched ceiling {}", k(c));
    }
    if let Some(r) = sum.ratio {
        text += &format!(
            "; Worker/ceiling {:.0}–{:.0}%",
            100.0 * r.min,
            100.0 * r.max
        );
    }
    let value = json!({
        "backend": backend, "summary": true, "rounds": sum.rounds,
        "drain_jobs_per_s": Range::json(sum.drain),
        "ceiling_jobs_per_s": Range::json(sum.ceiling),
        "ratio_to_ceiling": Range::json(sum.ratio),
    });
    (text, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::time::Duration;

    fn figures(drain_s: f64, ceiling: Option<f64>) -> Figures {
        Figures {
            enqueue: Duration::from_secs(1),
            drain: Duration::from_secs_f64(drain_s),
            latencies_us: Vec::new(),
            claims: 0,
            ceiling,
            config: None,
            cpu: None,
            wal: None,
        }
    }

    #[test]
    fn the_summary_spans_every_round() {
        let s = Settings::parse_from(["x", "--jobs", "1000", "--mode", "worker", "--rounds", "3"]);
        assert_eq!(s.rounds, 3);
        // 1000, 500 and 2000 jobs/s against ceilings 2000, 1000, 2500.
        let rounds = [
            figures(1.0, Some(2000.0)),
            figures(2.0, Some(1000.0)),
            figures(0.5, Some(2500.0)),
        ];
        let sum = summarize(&s, &rounds);
        assert_eq!(sum.rounds, 3);
        assert_eq!(
            sum.drain,
            Some(Range {
                min: 500.0,
                max: 2000.0
            })
        );
        assert_eq!(
            sum.ceiling,
            Some(Range {
                min: 1000.0,
                max: 2500.0
            })
        );
        assert_eq!(sum.ratio, Some(Range { min: 0.5, max: 0.8 }));
        let (text, v) = report("postgres", &s, &sum);
        assert!(
            text.contains("over 3 rounds: Worker 0.5k–2.0k jobs/s"),
            "{text}"
        );
        assert!(text.contains("Worker/ceiling 50–80%"), "{text}");
        assert_eq!(v["drain_jobs_per_s"]["max"], 2000.0);
        assert_eq!(v["summary"], true);
    }

    #[test]
    fn batch_mode_has_no_ceiling() {
        let s = Settings::parse_from(["x", "--jobs", "10"]);
        assert_eq!(s.rounds, 1);
        let sum = summarize(&s, &[figures(1.0, None)]);
        assert_eq!(sum.ceiling, None);
        assert_eq!(sum.ratio, None);
        let (text, v) = report("sqlite", &s, &sum);
        assert_eq!(text, "== sqlite: over 1 rounds: drain 0.0k–0.0k jobs/s");
        assert!(v["ceiling_jobs_per_s"].is_null());
        assert!(Settings::try_parse_from(["x", "--rounds", "0"]).is_err());
    }
}
