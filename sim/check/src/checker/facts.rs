//! The history, indexed for the checks: requests with their fate and
//! answer, beliefs, handler executions, and fault intervals per host.

use leasehold_core::{Event, JobId, JobRecord, Millis, StoreTime, Token, WorkerId};
use leasehold_model::config::{ScriptedFault, SimConfig};
use leasehold_model::history::{BeliefWhat, Fate, HandlerPhase, History, Op, Record, Reply};
use std::collections::BTreeMap;

/// One request and what became of it, borrowed from the history.
#[derive(Clone, Debug)]
pub struct ReqInfo<'h> {
    /// True time sent.
    pub t: u64,
    /// Sender.
    pub host: &'h str,
    /// The request.
    pub op: &'h Op,
    /// The store's handling: fate and true time.
    pub served: Option<(u64, Fate, Option<&'h Reply>)>,
    /// The answer the sender got: true time and reply.
    pub answer: Option<(u64, &'h Reply)>,
    /// When it went on the wire (true time): at `t` for a request sent
    /// alone, when a merged batch carried it for one asked of its
    /// process's merger, `None` if it never left (its caller gave up while
    /// it waited in the merger, or its process died).
    pub sent: Option<u64>,
}

impl ReqInfo<'_> {
    /// Whether the sender got a definite answer.
    pub fn answered(&self) -> bool {
        matches!(&self.answer, Some((_, r)) if r.is_known())
    }
}

/// The prune that deleted a job, as the history shows it.
#[derive(Clone, Debug)]
pub struct PrunedJob<'h> {
    /// True time it was served.
    pub t: u64,
    /// Store time it was served at: the `now` its age was judged by.
    pub store_time: StoreTime,
    /// Its retention `R`.
    pub retention: Millis,
    /// Who sent it.
    pub host: &'h str,
    /// Its request id.
    pub request: u64,
}

/// A belief milestone, borrowed from the history.
#[derive(Clone, Debug)]
pub struct BeliefStep<'h> {
    /// True time.
    pub t: u64,
    /// The worker's local time.
    pub local: u64,
    /// Host.
    pub host: &'h str,
    /// What happened.
    pub what: &'h BeliefWhat,
}

/// A lease holder: worker identity, job and token.
pub type LeaseKey = (WorkerId, JobId, Token);

/// Everything the checks need, indexed; what is large or many (requests,
/// replies, beliefs, final rows) is borrowed from the history, not copied.
#[derive(Debug, Default)]
pub struct Facts<'h> {
    /// Scenario config values the checks use.
    pub heal_ms: u64,
    /// Declared ρ in ppm.
    pub rho_ppm: u64,
    /// Whether I3 is asserted.
    pub timing_broken: bool,
    /// Tick.
    pub tick_ms: u64,
    /// The store truncates error messages to this many bytes.
    pub max_error_bytes: u64,
    /// True time covered.
    pub end_ms: u64,
    /// The run ended quiet.
    pub quiet: bool,
    /// Store events in commit order with true time and request.
    pub events: Vec<(Option<u64>, Option<u64>, Event)>,
    /// Requests by id.
    pub requests: BTreeMap<u64, ReqInfo<'h>>,
    /// Merged batch messages by sending host: true time sent and the
    /// requests carried.
    pub batches: BTreeMap<String, Vec<(u64, Vec<u64>)>>,
    /// Belief milestones by lease.
    pub beliefs: BTreeMap<LeaseKey, Vec<BeliefStep<'h>>>,
    /// Handler milestones by lease.
    pub handlers: BTreeMap<LeaseKey, Vec<(u64, HandlerPhase)>>,
    /// Process starts: host → (true time, worker identity).
    pub starts: BTreeMap<String, Vec<(u64, Option<WorkerId>)>>,
    /// Crashes by host.
    pub crashes: BTreeMap<String, Vec<u64>>,
    /// Pause windows by host.
    pub pauses: BTreeMap<String, Vec<(u64, u64)>>,
    /// Impaired link windows by host pair (names sorted): `[from, to)`.
    pub links: BTreeMap<(String, String), Vec<(u64, u64)>>,
    /// Largest drift per host, ppm.
    pub drift: BTreeMap<String, u64>,
    /// The schedule (ground truth).
    pub faults: Vec<ScriptedFault>,
    /// Final rows.
    pub finals: BTreeMap<JobId, &'h JobRecord>,
    /// The jobs the store answered it pruned, by the first prune naming
    /// each (a pruned job has no final row).
    pub pruned: BTreeMap<JobId, PrunedJob<'h>>,
    /// When the client finished its schedule.
    pub client_done: Option<u64>,
}

fn pair(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_string(), b.to_string())
    } else {
        (b.to_string(), a.to_string())
    }
}

impl<'h> Facts<'h> {
    /// Indexes `h`.
    pub fn of(h: &'h History, cfg: &SimConfig) -> Facts<'h> {
        let mut f = Facts {
            rho_ppm: u64::from(cfg.protocol.max_drift_ppm),
            tick_ms: cfg.tick.as_ms(),
            max_error_bytes: cfg.protocol.max_error_bytes,
            end_ms: cfg.duration.as_ms(),
            ..Facts::default()
        };
        let mut open_links: BTreeMap<(String, String), u64> = BTreeMap::new();
        let mut events = Vec::new();
        for r in &h.records {
            match r {
                Record::Run {
                    heal_ms,
                    timing_assumption_broken,
                    tick_ms,
                    ..
                } => {
                    f.heal_ms = *heal_ms;
                    f.timing_broken = *timing_assumption_broken;
                    f.tick_ms = *tick_ms;
                }
                Record::Fault { fault, .. } => {
                    match fault {
                        ScriptedFault::Pause { host, at, len } => f
                            .pauses
                            .entry(host.clone())
                            .or_default()
                            .push((at.as_ms(), at.as_ms() + len.as_ms())),
                        ScriptedFault::Drift { host, ppm, .. } => {
                            let d = f.drift.entry(host.clone()).or_default();
                            *d = (*d).max(ppm.unsigned_abs());
                        }
                        _ => {}
                    }
                    f.faults.push(fault.clone());
                }
                Record::HostStarted {
                    t, host, worker, ..
                } => f
                    .starts
                    .entry(host.clone())
                    .or_default()
                    .push((*t, worker.clone())),
                Record::HostCrashed { t, host } => {
                    f.crashes.entry(host.clone()).or_default().push(*t)
                }
                Record::Link {
                    t,
                    a,
                    b,
                    drop_ab,
                    drop_ba,
                    held,
                } => {
                    let key = pair(a, b);
                    let bad = *drop_ab || *drop_ba || *held;
                    if let Some(from) = open_links.remove(&key) {
                        f.links.entry(key.clone()).or_default().push((from, *t));
                    }
                    if bad {
                        open_links.insert(key, *t);
                    }
                }
                Record::Request {
                    t,
                    host,
                    id,
                    op,
                    merged,
                    ..
                } => {
                    f.requests.insert(
                        *id,
                        ReqInfo {
                            t: *t,
                            host,
                            op,
                            served: None,
                            answer: None,
                            sent: (!*merged).then_some(*t),
                        },
                    );
                }
                Record::Sent { t, host, ids, .. } => {
                    for id in ids {
                        if let Some(q) = f.requests.get_mut(id) {
                            q.sent.get_or_insert(*t);
                        }
                    }
                    f.batches
                        .entry(host.clone())
                        .or_default()
                        .push((*t, ids.clone()));
                }
                Record::Served {
                    t,
                    store_time,
                    id,
                    fate,
                    reply,
                    ..
                } => {
                    if let Some(q) = f.requests.get_mut(id) {
                        q.served = Some((*t, *fate, reply.as_ref()));
                        if let (Op::Prune { retention, .. }, Some(Reply::Pruned(ids))) =
                            (&q.op, reply)
                        {
                            for job in ids {
                                f.pruned.entry(*job).or_insert(PrunedJob {
                                    t: *t,
                                    store_time: *store_time,
                                    retention: *retention,
                                    host: q.host,
                                    request: *id,
                                });
                            }
                        }
                    }
                }
                Record::Answer { t, id, reply, .. } => {
                    if let Some(q) = f.requests.get_mut(id) {
                        if q.answer.is_none() {
                            q.answer = Some((*t, reply));
                        }
                    }
                }
                Record::Belief {
                    t,
                    local,
                    host,
                    worker,
                    job,
                    token,
                    what,
                } => f
                    .beliefs
                    .entry((worker.clone(), *job, *token))
                    .or_default()
                    .push(BeliefStep {
                        t: *t,
                        local: *local,
                        host,
                        what,
                    }),
                Record::Handler {
                    t,
                    worker,
                    job,
                    token,
                    phase,
                    ..
                } => f
                    .handlers
                    .entry((worker.clone(), *job, *token))
                    .or_default()
                    .push((*t, phase.clone())),
                Record::CrashReported { .. } => {}
                Record::ClientDone { t } => {
                    f.client_done.get_or_insert(*t);
                }
                Record::StoreEvent { t, seq, req, event } => {
                    events.push((*seq, Some(*t), *req, event.clone()))
                }
                Record::Final { row } => {
                    f.finals.insert(row.id, row);
                }
                Record::End { t, quiet } => {
                    f.end_ms = *t;
                    f.quiet = *quiet;
                }
            }
        }
        for (key, from) in open_links {
            f.links.entry(key).or_default().push((from, u64::MAX));
        }
        events.sort_by_key(|e| e.0);
        f.events = events.into_iter().map(|(_, t, r, e)| (t, r, e)).collect();
        f
    }

    /// The host a worker identity ran on (`worker-2#1` → `worker-2`).
    pub fn host_of(worker: &WorkerId) -> String {
        // `worker-2`, `worker-2#1`, and with several workers per process
        // `worker-2.3`, `worker-2.3#1`: the host is before any `.` or `#`.
        worker
            .as_str()
            .split(['#', '.'])
            .next()
            .unwrap_or_default()
            .to_string()
    }

    /// Whether `host` crashed in `[from, to]`.
    pub fn crashed_in(&self, host: &str, from: u64, to: u64) -> bool {
        self.crashes
            .get(host)
            .is_some_and(|v| v.iter().any(|&c| c >= from && c <= to))
    }

    /// Whether `host` was down (crashed and not yet started again) at some
    /// moment of `[from, to]`.
    pub fn down_in(&self, host: &str, from: u64, to: u64) -> bool {
        let starts = self.starts.get(host);
        self.crashes.get(host).is_some_and(|v| {
            v.iter().any(|&c| {
                let back = starts
                    .and_then(|s| s.iter().map(|x| x.0).find(|&x| x > c))
                    .unwrap_or(u64::MAX);
                c <= to && back >= from
            })
        })
    }

    /// Total pause of `host` overlapping `[from, to)`.
    pub fn paused_within(&self, host: &str, from: u64, to: u64) -> u64 {
        self.pauses.get(host).map_or(0, |v| {
            v.iter()
                .map(|&(a, b)| b.min(to).saturating_sub(a.max(from)))
                .sum()
        })
    }

    /// Whether the link between `a` and `b` was impaired at some point in `[from, to]`.
    pub fn link_impaired(&self, a: &str, b: &str, from: u64, to: u64) -> bool {
        self.links
            .get(&pair(a, b))
            .is_some_and(|v| v.iter().any(|&(x, y)| x <= to && y >= from))
    }

    /// Whether the store's own clock had a fault (a step, or drift beyond ρ)
    /// at or before `t`.
    pub fn store_clock_fault_by(&self, t: u64) -> bool {
        self.faults.iter().any(|f| match f {
            ScriptedFault::Skew { host, at, by } => {
                host == "store" && at.as_ms() > 0 && at.as_ms() <= t && by.0 != 0
            }
            ScriptedFault::Drift { host, at, ppm } => {
                host == "store" && at.as_ms() <= t && ppm.unsigned_abs() > self.rho_ppm
            }
            _ => false,
        })
    }
}
