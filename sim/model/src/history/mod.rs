//! The history of one run: every request and answer, every store event, every
//! belief change, every handler execution, and the ground truth of faults.
//!
//! Times: `t` is true (simulated) time in milliseconds since the start of
//! the run; `local` is the acting host's monotonic clock; `store_time` is the
//! store host's wall clock, the only clock that decides lease validity.
//!
//! The history is what the checker reads (and all it reads, with the
//! config). Its canonical form is one JSON object per line
//! ([`History::to_jsonl`]); [`History::hash`] is FNV-1a-64 over the same
//! records' fields in a binary encoding (hash format 2, see `hash.rs`), so
//! two runs of the same scenario and seed must give the same hash (I10).

mod blob;
mod execution;
mod hash;
mod observe;
mod record;

pub use blob::Blob;
pub use execution::{Execution, HandlerSink};
pub use hash::{Fnv, HASH_FORMAT};
pub use observe::record_of_event;
pub use record::{
    BeliefWhat, Fate, HandlerPhase, LeaseRef, Op, ReadRow, Record, Reply, ScheduleView,
};

use leasehold_core::Event;
use serde::{Deserialize, Serialize};

/// The full history of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// Records in true-time order (ties in the order they happened).
    pub records: Vec<Record>,
}

impl History {
    /// A run's history from what it recorded: the records without a time
    /// first (in recording order), then the timed ones in time order (a
    /// stable sort: equal times keep their recording order), each store
    /// event as `(t, request, event)` placed at the time of the request that
    /// committed it and numbered in commit order, the final rows, and the
    /// end at `end`.
    pub fn assemble(
        mut records: Vec<Record>,
        events: Vec<(u64, Option<u64>, Event)>,
        rows: Vec<leasehold_core::JobRecord>,
        end: u64,
        quiet: bool,
    ) -> History {
        // One vector, grown once and sorted in place: partitioning into
        // two vectors and joining them moved every record twice more.
        records.reserve_exact(events.len() + rows.len() + 1);
        for (seq, (t, req, event)) in events.into_iter().enumerate() {
            records.push(Record::StoreEvent {
                t,
                seq: seq as u64,
                req,
                event,
            });
        }
        // `None < Some(_)`: the untimed records first in recording order,
        // then the timed ones in time order (the sort is stable).
        records.sort_by_key(Record::time);
        records.extend(rows.into_iter().map(|row| Record::Final { row }));
        records.push(Record::End { t: end, quiet });
        History { records }
    }
}

impl History {
    /// One JSON object per line.
    pub fn to_jsonl(&self) -> String {
        let mut out = Vec::with_capacity(self.records.len() * 128);
        for r in &self.records {
            serde_json::to_writer(&mut out, r).expect("records serialize");
            out.push(b'\n');
        }
        String::from_utf8(out).expect("JSON is UTF-8")
    }

    /// The history hash (I10), format [`HASH_FORMAT`]: FNV-1a-64 over the
    /// record count and then every record's fields, in the encoding
    /// `hash.rs` documents (no JSON is written).
    pub fn hash(&self) -> u64 {
        let mut h = Fnv::default();
        h.u64(self.records.len() as u64);
        for r in &self.records {
            h.value(r);
        }
        h.finish()
    }

    /// Reads a history back from JSONL.
    pub fn from_jsonl(text: &str) -> Result<History, serde_json::Error> {
        let records = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect::<Result<Vec<Record>, _>>()?;
        Ok(History { records })
    }

    /// The store events in commit order.
    pub fn store_events(&self) -> Vec<&Event> {
        let mut v: Vec<(u64, &Event)> = self
            .records
            .iter()
            .filter_map(|r| match r {
                Record::StoreEvent { seq, event, .. } => Some((*seq, event)),
                _ => None,
            })
            .collect();
        v.sort_by_key(|e| e.0);
        v.into_iter().map(|e| e.1).collect()
    }
}

impl History {
    /// Counts of what happened, by kind (`served.answer_lost`,
    /// `event.swept`, `belief.ended.Fenced`, ...), in name order: a compact
    /// summary for snapshots and reports.
    pub fn summary(&self) -> std::collections::BTreeMap<String, u64> {
        let mut m = std::collections::BTreeMap::new();
        let mut add = |k: String| *m.entry(k).or_insert(0u64) += 1;
        for r in &self.records {
            match r {
                Record::Run { .. } | Record::End { .. } => {}
                Record::Fault { fault, .. } => {
                    let s = fault.to_string();
                    add(format!(
                        "fault.{}",
                        s.split_whitespace().next().unwrap_or("?")
                    ))
                }
                Record::HostStarted { .. } => add("host.started".into()),
                Record::HostCrashed { .. } => add("host.crashed".into()),
                Record::Link { .. } => add("link.changed".into()),
                Record::Request { op, .. } => {
                    let v = serde_json::to_value(op).unwrap_or_default();
                    add(format!("request.{}", v["op"].as_str().unwrap_or("?")))
                }
                Record::Sent { .. } => add("batch.sent".into()),
                Record::Served { fate, .. } => add(format!("served.{fate:?}")),
                Record::Answer { reply, .. } => add(if reply.is_known() {
                    "answer.known".into()
                } else {
                    "answer.unavailable".into()
                }),
                Record::Belief { what, .. } => add(match what {
                    BeliefWhat::Claimed { .. } => "belief.claimed".into(),
                    BeliefWhat::Renewed { .. } => "belief.renewed".into(),
                    BeliefWhat::RenewUnavailable => "belief.renew_unavailable".into(),
                    BeliefWhat::Ended { why } => format!("belief.ended.{why}"),
                    BeliefWhat::Released { answer, .. } => {
                        format!("belief.released.{}", answer.as_deref().unwrap_or("unknown"))
                    }
                }),
                Record::CrashReported { .. } => add("crash_reported".into()),
                Record::Handler { phase, .. } => add(match phase {
                    HandlerPhase::Start => "handler.start".into(),
                    HandlerPhase::Done { ok } => format!("handler.done.{ok}"),
                    HandlerPhase::Dropped => "handler.dropped".into(),
                }),
                Record::ClientDone { .. } => add("client.done".into()),
                Record::StoreEvent { event, .. } => {
                    let v = serde_json::to_value(&event.kind).unwrap_or_default();
                    add(format!("event.{}", v["type"].as_str().unwrap_or("?")))
                }
                Record::Final { row } => add(format!("final.{}", row.state)),
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ScriptedFault;
    use crate::duration::Dur;
    use leasehold_core::{JobId, Millis, Token, WorkerId};

    #[test]
    fn jsonl_round_trips_and_hash_is_stable() {
        let h = History {
            records: vec![
                Record::Fault {
                    t: 5,
                    fault: ScriptedFault::Crash {
                        host: "worker-1".into(),
                        at: Dur::ms(5),
                    },
                },
                Record::Request {
                    t: 6,
                    local: 7,
                    host: "worker-1".into(),
                    id: 1,
                    op: Op::Renew {
                        job: JobId(1),
                        token: Token(2),
                        lease: Millis(10),
                    },
                    merged: false,
                },
                Record::Belief {
                    t: 8,
                    local: 9,
                    host: "worker-1".into(),
                    worker: WorkerId::new("worker-1"),
                    job: JobId(1),
                    token: Token(2),
                    what: BeliefWhat::Ended {
                        why: "Fenced".into(),
                    },
                },
            ],
        };
        let text = h.to_jsonl();
        assert!(
            text.contains("\"fault\":\"crash worker-1 at 5ms\""),
            "{text}"
        );
        let back = History::from_jsonl(&text).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.hash(), h.hash());
        let mut other = h.clone();
        other.records.pop();
        assert_ne!(other.hash(), h.hash());
    }

    /// A field left out of the trace when it is zero or false still feeds
    /// the hash where it stands: which of two such fields is set matters.
    #[test]
    fn fields_left_out_of_the_trace_feed_the_hash_by_position() {
        let run = |store_conflict: f64, wake_loss: f64| History {
            records: vec![Record::Run {
                scenario: "s".into(),
                seed: 1,
                variant: None,
                heal_ms: 0,
                duration_ms: 0,
                tick_ms: 1,
                message_loss: 0.0,
                answer_loss: 0.0,
                store_conflict,
                wake_loss,
                store_cancel: 0.0,
                timing_assumption_broken: false,
            }],
        };
        assert_ne!(run(0.5, 0.0).hash(), run(0.0, 0.5).hash());
        assert_ne!(run(0.0, 0.0).hash(), run(0.0, 0.5).hash());
        assert_eq!(run(0.0, 0.5).hash(), run(0.0, 0.5).hash());
    }
}
