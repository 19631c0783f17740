//! The invariant checker: reads the history (and the config), never the
//! core's transition, guard or worker code.
//!
//! One module per invariant (or small group). Each check reads either the
//! store events alone ([`check_store_events`], usable on a production
//! `lease_events` export) or the full history with the simulator's ground
//! truth ([`check`]). The checker keeps its own model of a job, rebuilt from
//! what the events say ([`replay`](mod@replay)), and compares every event against it.

pub mod answers;
mod belief;
mod belief_stop;
mod budget;
mod cancel;
pub mod facts;
mod grant;
pub(crate) mod liveness;
mod owed_renews;
mod parallelism;
mod reclaim;
pub mod replay;
mod results;
mod schedules;
mod winner;

use facts::Facts;
use leasehold_core::{Event, JobId, StoreTime, Token};
use leasehold_model::config::{InvariantId, ScriptedFault, SimConfig};
use leasehold_model::history::History;
use replay::{replay, Step, Timed};
use serde::Serialize;
use std::collections::BTreeMap;

/// Most violations kept per invariant and job (the first ones tell the story).
const MAX_PER_JOB: usize = 2;
/// Most violations kept per run.
const MAX_TOTAL: usize = 100;

/// One broken invariant, with what is needed to understand and replay it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// Which invariant.
    pub invariant: InvariantId,
    /// The job, if one is concerned.
    pub job: Option<JobId>,
    /// The tokens involved.
    pub tokens: Vec<Token>,
    /// The hosts or worker identities involved.
    pub hosts: Vec<String>,
    /// True time (ms since the start of the run; 0 when unknown).
    pub true_ms: u64,
    /// Store time, when known.
    pub store_time: Option<StoreTime>,
    /// Local times of the hosts involved.
    pub local_ms: Vec<(String, u64)>,
    /// What happened.
    pub message: String,
    /// Faults of the schedule active around `true_ms` touching these hosts.
    pub faults_nearby: Vec<String>,
}

impl Violation {
    /// A violation of `invariant` with a message; other fields via the setters.
    pub fn new(invariant: InvariantId, message: impl Into<String>) -> Self {
        Violation {
            invariant,
            job: None,
            tokens: Vec::new(),
            hosts: Vec::new(),
            true_ms: 0,
            store_time: None,
            local_ms: Vec::new(),
            message: message.into(),
            faults_nearby: Vec::new(),
        }
    }

    /// Sets the job.
    pub fn job(mut self, j: JobId) -> Self {
        self.job = Some(j);
        self
    }

    /// Adds tokens.
    pub fn tokens(mut self, t: impl IntoIterator<Item = Token>) -> Self {
        self.tokens.extend(t);
        self
    }

    /// Adds hosts or identities.
    pub fn hosts<S: ToString>(mut self, h: impl IntoIterator<Item = S>) -> Self {
        self.hosts.extend(h.into_iter().map(|s| s.to_string()));
        self
    }

    /// Sets the true time.
    pub fn at(mut self, t: u64) -> Self {
        self.true_ms = t;
        self
    }

    /// Adds local times of hosts.
    pub fn locals(mut self, l: impl IntoIterator<Item = (String, u64)>) -> Self {
        self.local_ms.extend(l);
        self
    }

    /// Sets the store time.
    pub fn store_at(mut self, t: StoreTime) -> Self {
        self.store_time = Some(t);
        self
    }

    /// Context of a store event: job, token, worker, times.
    pub(crate) fn on_step(self, s: &Step<'_>) -> Self {
        let v = self
            .job(s.event.job)
            .tokens([s.event.token])
            .store_at(s.event.at)
            .at(s.t.unwrap_or(0));
        match &s.event.worker {
            Some(w) => v.hosts([w.as_str()]),
            None => v,
        }
    }
}

impl crate::finding::Finding for Violation {
    fn broken(&self) -> String {
        crate::finding::invariant(self.invariant)
    }
    fn message(&self) -> String {
        self.message.clone()
    }
    /// Job, tokens and hosts; the times need the run's origin, which the
    /// report that prints them knows.
    fn context(&self) -> Vec<(&'static str, String)> {
        crate::finding::concerns(self.job, &self.tokens, "hosts", &self.hosts)
    }
}

/// Checks that need no ground truth (I1, I2, I4, I7, I8, I9) on store events
/// alone, in commit order; `parallelism` is the per-queue limit, if any.
pub fn check_store_events(events: &[Event], parallelism: Option<u32>) -> Vec<Violation> {
    let timed: Vec<Timed<'_>> = events.iter().map(|e| (None, None, e)).collect();
    let (steps, finals) = replay(&timed);
    let mut out = Vec::new();
    out.extend(grant::check_events(&steps));
    out.extend(winner::check_events(&steps));
    out.extend(results::check_events(&steps, &finals));
    out.extend(cancel::check_events(&steps));
    out.extend(budget::check_events(&steps));
    out.extend(parallelism::check_events(&steps, parallelism));
    limit(out)
}

/// Checks I1–I9, I11 and I12 on a run's history (I10 is checked by
/// comparing hashes).
pub fn check(history: &History, cfg: &SimConfig) -> Vec<Violation> {
    let facts = Facts::of(history, cfg);
    let timed: Vec<Timed<'_>> = facts.events.iter().map(|(t, r, e)| (*t, *r, e)).collect();
    let (steps, finals) = replay(&timed);
    let mut out = Vec::new();
    out.extend(grant::check_events(&steps));
    out.extend(grant::check_history(&facts));
    out.extend(winner::check_events(&steps));
    out.extend(winner::check_history(&steps, &facts));
    out.extend(belief::check(&facts));
    out.extend(belief_stop::check(&facts));
    out.extend(results::check_events(&steps, &finals));
    out.extend(results::check_history(&steps, &facts));
    out.extend(reclaim::check(&steps, &facts, cfg));
    out.extend(liveness::check(&facts, cfg));
    out.extend(cancel::check_events(&steps));
    out.extend(cancel::check_history(&steps, &facts));
    out.extend(budget::check_events(&steps));
    let p = &cfg.protocol;
    out.extend(parallelism::check_events_per_queue(&steps, |q| {
        p.queue_parallelism.get(q).copied().or(p.parallelism)
    }));
    out.extend(parallelism::check_workers(&facts, cfg));
    out.extend(answers::check(history, cfg));
    out.extend(schedules::check(history, &facts, cfg));
    let mut out = limit(out);
    for v in &mut out {
        v.faults_nearby = faults_nearby(&facts, cfg, v);
    }
    out
}

/// Keeps the first few violations per invariant and job.
fn limit(all: Vec<Violation>) -> Vec<Violation> {
    let mut seen: BTreeMap<(InvariantId, Option<JobId>), usize> = BTreeMap::new();
    let mut out = Vec::new();
    for v in all {
        let n = seen.entry((v.invariant, v.job)).or_default();
        *n += 1;
        if *n <= MAX_PER_JOB && out.len() < MAX_TOTAL {
            out.push(v);
        }
    }
    out
}

/// Faults active within a few leases before the violation that touch its
/// hosts or the store.
fn faults_nearby(facts: &Facts, cfg: &SimConfig, v: &Violation) -> Vec<String> {
    let span = cfg.protocol.lease.as_ms() * 3 + cfg.protocol.sweep_interval.as_ms();
    let from = v.true_ms.saturating_sub(span);
    let to = v.true_ms + 1_000;
    let hosts: Vec<String> = v
        .hosts
        .iter()
        .map(|h| facts::Facts::host_of(&leasehold_core::WorkerId::new(h.clone())))
        .chain(std::iter::once("store".to_string()))
        .collect();
    let touches = |f: &ScriptedFault| f.hosts().iter().any(|h| hosts.iter().any(|x| x == h));
    facts
        .faults
        .iter()
        .filter(|f| touches(f))
        .filter(|f| {
            let (a, b) = active_span(f);
            a <= to && b >= from
        })
        .take(20)
        .map(|f| f.to_string())
        .collect()
}

/// When a fault is in effect (clock faults last from their start on).
fn active_span(f: &ScriptedFault) -> (u64, u64) {
    match f {
        ScriptedFault::Crash { at, .. }
        | ScriptedFault::Restart { at, .. }
        | ScriptedFault::Shutdown { at, .. } => (at.as_ms(), at.as_ms()),
        ScriptedFault::Partition { from, to, .. }
        | ScriptedFault::Hold { from, to, .. }
        | ScriptedFault::Conflict { from, to, .. } => (from.as_ms(), to.as_ms()),
        ScriptedFault::Pause { at, len, .. } => (at.as_ms(), at.as_ms() + len.as_ms()),
        ScriptedFault::Skew { at, .. } | ScriptedFault::Drift { at, .. } => (at.as_ms(), u64::MAX),
    }
}
