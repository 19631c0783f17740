//! Builds a [`Timeline`] from a run's [`History`].

use super::{ClockLane, FaultSpan, JobLane, LeaseBar, Mark, Timeline};
use crate::config::ScriptedFault;
use crate::history::{BeliefWhat, History, Record};
use leasehold_core::{EventKind, JobId, Outcome};
use std::collections::BTreeMap;

/// A violation to mark: true time, text, job.
pub struct MarkAt {
    /// True ms.
    pub at_ms: u64,
    /// Text.
    pub label: String,
    /// Job, if any.
    pub job: Option<JobId>,
}

/// The timeline of `history`, with `marks` drawn as violations.
pub fn from_history(
    history: &History,
    title: &str,
    notes: Vec<String>,
    marks: Vec<MarkAt>,
) -> Timeline {
    let mut jobs: BTreeMap<JobId, JobLane> = BTreeMap::new();
    let mut open: BTreeMap<(JobId, u64), usize> = BTreeMap::new();
    let mut clocks: BTreeMap<String, ClockLane> = BTreeMap::new();
    let mut first_local: BTreeMap<String, i64> = BTreeMap::new();
    let mut faults = Vec::new();
    let mut crashed_at: BTreeMap<String, u64> = BTreeMap::new();
    let mut end_ms = 0;
    for r in &history.records {
        if let Some(t) = r.time() {
            end_ms = end_ms.max(t);
        }
        match r {
            Record::Run { duration_ms, .. } => end_ms = end_ms.max(*duration_ms),
            Record::Fault { t, fault } => faults.push(span_of(*t, fault)),
            Record::HostCrashed { t, host } => {
                crashed_at.insert(host.clone(), *t);
            }
            Record::HostStarted { t, host, .. } => {
                if let Some(from) = crashed_at.remove(host) {
                    faults.push(FaultSpan {
                        label: format!("{host} down"),
                        from_ms: from,
                        to_ms: *t,
                        hosts: vec![host.clone()],
                    });
                }
            }
            Record::Served { t, store_time, .. } => {
                sample(
                    &mut clocks,
                    "store wall clock",
                    *t,
                    store_time.0 - *t as i64,
                );
            }
            Record::Request { t, local, host, .. } | Record::Answer { t, local, host, .. } => {
                let offset = *local as i64 - *t as i64;
                let base = *first_local.entry(host.clone()).or_insert(offset);
                sample(
                    &mut clocks,
                    &format!("{host} monotonic drift"),
                    *t,
                    offset - base,
                );
            }
            Record::StoreEvent { t, event, .. } => {
                let l = jobs.entry(event.job).or_insert_with(|| JobLane {
                    label: format!("job {}", event.job.0),
                    ..JobLane::default()
                });
                let key = (event.job, event.token.0);
                match &event.kind {
                    EventKind::Enqueued { queue, .. } => {
                        l.ticks.push((*t, format!("enqueued on {queue}")))
                    }
                    EventKind::Claimed { attempt, .. } => {
                        l.leases.push(LeaseBar {
                            worker: event
                                .worker
                                .as_ref()
                                .map_or("?".into(), |w| w.as_str().to_string()),
                            token: event.token.0,
                            from_ms: *t,
                            to_ms: u64::MAX,
                            end: format!("attempt {attempt}, still held at the end"),
                            believed_until_ms: None,
                        });
                        open.insert(key, l.leases.len() - 1);
                    }
                    EventKind::Renewed { .. } => {}
                    EventKind::Released { outcome, .. } => {
                        close(l, &mut open, key, *t, outcome_name(outcome));
                        l.ticks.push((
                            *t,
                            format!("released {} -> {:?}", outcome_name(outcome), event.to),
                        ));
                    }
                    EventKind::Swept { .. } => {
                        close(l, &mut open, key, *t, "swept (crash report)".into());
                        l.ticks.push((*t, format!("swept -> {:?}", event.to)));
                    }
                    EventKind::CancelRequested => l.ticks.push((*t, "cancel requested".into())),
                    EventKind::Cancelled => l.ticks.push((*t, "cancelled while pending".into())),
                }
            }
            Record::Belief {
                t,
                job,
                token,
                what,
                ..
            } => {
                let l = jobs.entry(*job).or_default();
                let Some(bar) = l.leases.iter_mut().rev().find(|b| b.token == token.0) else {
                    continue;
                };
                match what {
                    BeliefWhat::Claimed { until_true, .. }
                    | BeliefWhat::Renewed { until_true, .. } => {
                        bar.believed_until_ms = Some(until_true.unwrap_or(u64::MAX));
                    }
                    BeliefWhat::Ended { .. } => {
                        bar.believed_until_ms =
                            Some(bar.believed_until_ms.map_or(*t, |u| u.min(*t)));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    for l in jobs.values_mut() {
        for b in &mut l.leases {
            b.to_ms = b.to_ms.min(end_ms);
            b.believed_until_ms = b.believed_until_ms.map(|u| u.min(end_ms));
        }
    }
    for f in &mut faults {
        f.to_ms = f.to_ms.min(end_ms);
    }
    Timeline {
        title: title.to_string(),
        notes,
        end_ms,
        jobs: jobs.into_values().collect(),
        clocks: clocks.into_values().collect(),
        faults,
        marks: marks
            .into_iter()
            .map(|m| Mark {
                at_ms: m.at_ms,
                label: m.label,
                job: m.job.map(|j| format!("job {}", j.0)),
            })
            .collect(),
    }
}

fn sample(clocks: &mut BTreeMap<String, ClockLane>, name: &str, t: u64, offset: i64) {
    let lane = clocks.entry(name.to_string()).or_insert_with(|| ClockLane {
        host: name.to_string(),
        offsets: Vec::new(),
    });
    if lane
        .offsets
        .last()
        .is_none_or(|&(lt, lo)| lo != offset || t >= lt + 1_000)
    {
        lane.offsets.push((t, offset));
    }
}

fn close(
    l: &mut JobLane,
    open: &mut BTreeMap<(JobId, u64), usize>,
    key: (JobId, u64),
    t: u64,
    end: String,
) {
    if let Some(i) = open.remove(&key) {
        l.leases[i].to_ms = t;
        l.leases[i].end = end;
    }
}

fn outcome_name(o: &Outcome) -> String {
    o.kind().to_string()
}

fn span_of(t: u64, f: &ScriptedFault) -> FaultSpan {
    let hosts = f.hosts().into_iter().map(str::to_string).collect();
    let (from, to) = match f {
        ScriptedFault::Partition { from, to, .. } | ScriptedFault::Hold { from, to, .. } => {
            (from.as_ms(), to.as_ms())
        }
        ScriptedFault::Pause { at, len, .. } => (at.as_ms(), at.as_ms() + len.as_ms()),
        _ => (t, t),
    };
    FaultSpan {
        label: f.to_string(),
        from_ms: from,
        to_ms: to,
        hosts,
    }
}
