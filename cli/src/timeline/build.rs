//! Builds a [`Timeline`] from a run's [`History`].

use super::page::{Arrow, ClockLane, FaultSpan, JobLane, LeaseBar, Mark, Timeline};
use leasehold_core::{EventKind, JobId};
use leasehold_model::clock::{ClockModel, EPOCH_MS};
use leasehold_model::config::ScriptedFault;
use leasehold_model::history::{BeliefWhat, Fate, History, Record};
use std::collections::BTreeMap;

/// Samples per clock lane (plus three around each fault).
const CLOCK_SAMPLES: u64 = 300;
/// A message that took this long (true ms) or longer is drawn as an arrow.
pub const LATE_MS: u64 = 250;
/// The store host's name in a simulator history.
const STORE: &str = "store";

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
    let mut hosts: Vec<String> = Vec::new();
    let mut workers: BTreeMap<String, String> = BTreeMap::new();
    let mut sent: BTreeMap<u64, (u64, String, String)> = BTreeMap::new();
    let mut served: BTreeMap<u64, u64> = BTreeMap::new();
    let mut late: Vec<(u64, u64, String, String, String)> = Vec::new();
    let mut schedule: Vec<ScriptedFault> = Vec::new();
    let mut faults = Vec::new();
    let mut crashed_at: BTreeMap<String, u64> = BTreeMap::new();
    let mut last_t = 0;
    let mut ended = None;
    for r in &history.records {
        if let Some(t) = r.time() {
            last_t = last_t.max(t);
        }
        match r {
            Record::End { t, .. } => ended = Some(*t),
            Record::Fault { t, fault } => {
                faults.push(span_of(*t, fault));
                schedule.push(fault.clone());
            }
            Record::HostCrashed { t, host } => {
                crashed_at.insert(host.clone(), *t);
            }
            Record::HostStarted {
                t, host, worker, ..
            } => {
                if !hosts.contains(host) {
                    hosts.push(host.clone());
                }
                if let Some(w) = worker {
                    workers.insert(host.clone(), w.as_str().to_string());
                }
                if let Some(from) = crashed_at.remove(host) {
                    faults.push(FaultSpan {
                        label: format!("{host} down"),
                        from_ms: from,
                        to_ms: *t,
                        hosts: vec![host.clone()],
                    });
                }
            }
            Record::Request {
                t, host, id, op, ..
            } => {
                let what = serde_json::to_value(op)
                    .ok()
                    .and_then(|v| v["op"].as_str().map(str::to_string))
                    .unwrap_or_default();
                sent.insert(*id, (*t, host.clone(), what));
            }
            Record::Served { t, id, fate, .. } => {
                served.insert(*id, *t);
                if let Some((t0, host, what)) = sent.get(id) {
                    if *fate != Fate::RequestLost && t.saturating_sub(*t0) >= LATE_MS {
                        late.push((*t0, *t, host.clone(), STORE.into(), format!("{what} #{id}")));
                    }
                }
            }
            Record::Answer {
                t, id, host, reply, ..
            } => {
                let (Some(t0), true) = (served.get(id), reply.is_known()) else {
                    continue;
                };
                if t.saturating_sub(*t0) >= LATE_MS {
                    let what = sent.get(id).map_or("", |s| s.2.as_str());
                    late.push((
                        *t0,
                        *t,
                        STORE.into(),
                        host.clone(),
                        format!("answer to {what} #{id}"),
                    ));
                }
            }
            Record::StoreEvent { t, event, .. } => {
                let l = lane(&mut jobs, event.job);
                let key = (event.job, event.token.0);
                match &event.kind {
                    EventKind::Enqueued { queue, .. } => {
                        l.ticks.push((*t, format!("enqueued on {queue}")));
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
                        close(l, &mut open, key, *t, outcome.kind().to_string());
                        l.ticks
                            .push((*t, format!("released {} -> {}", outcome.kind(), event.to)));
                    }
                    EventKind::Swept { .. } => {
                        close(l, &mut open, key, *t, "swept (crash report)".into());
                        l.ticks.push((*t, format!("swept -> {}", event.to)));
                    }
                    EventKind::CancelRequested => l.ticks.push((*t, "cancel requested".into())),
                    EventKind::Cancelled => l.ticks.push((*t, "cancelled while pending".into())),
                    EventKind::Retried { .. } => {
                        l.ticks.push((*t, "retried by an operator".into()))
                    }
                }
            }
            Record::Belief {
                t,
                job,
                token,
                what,
                ..
            } => {
                let l = lane(&mut jobs, *job);
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
    let end_ms = ended.unwrap_or(last_t).max(1);
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
        clocks: hosts
            .iter()
            .map(|h| {
                let mut lane = clock_lane(h, &schedule, end_ms);
                lane.worker = workers.get(h).cloned();
                lane
            })
            .collect(),
        arrows: late
            .into_iter()
            .map(|(from_ms, to_ms, from, to, label)| Arrow {
                held: held(&schedule, &from, &to, from_ms),
                from,
                to,
                sent_ms: from_ms,
                delivered_ms: to_ms.min(end_ms),
                label,
            })
            .collect(),
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

fn lane(jobs: &mut BTreeMap<JobId, JobLane>, job: JobId) -> &mut JobLane {
    jobs.entry(job).or_insert_with(|| JobLane {
        label: format!("job {}", job.0),
        ..JobLane::default()
    })
}

/// Samples of `host`'s wall clock minus true time, from the clock model
/// the run used (offset, drift and steps of the schedule), with extra
/// samples around every fault so steps show as steps.
fn clock_lane(host: &str, schedule: &[ScriptedFault], end_ms: u64) -> ClockLane {
    let model = ClockModel::of_host(host, schedule);
    let mut at: Vec<u64> = (0..=CLOCK_SAMPLES)
        .map(|i| end_ms * i / CLOCK_SAMPLES)
        .collect();
    for f in schedule {
        let s = f.start().as_ms();
        at.extend([s.saturating_sub(1), s, s + 1]);
    }
    at.retain(|&t| t <= end_ms);
    at.sort_unstable();
    at.dedup();
    ClockLane {
        host: host.to_string(),
        worker: None,
        offsets: at
            .into_iter()
            .map(|t| (t, model.wall(t).0 - EPOCH_MS - t as i64))
            .collect(),
    }
}

/// Whether a hold between `a` and `b` was on at true time `t`.
fn held(schedule: &[ScriptedFault], a: &str, b: &str, t: u64) -> bool {
    schedule.iter().any(|f| match f {
        ScriptedFault::Hold {
            a: x,
            b: y,
            from,
            to,
            ..
        } => {
            let pair = (x == a && y == b) || (x == b && y == a);
            pair && from.as_ms() <= t && t < to.as_ms()
        }
        _ => false,
    })
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
