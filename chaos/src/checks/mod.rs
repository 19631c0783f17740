//! The checks run after healing, on what the run left behind: the final
//! rows, the audit log (`lease_events`), every process's side-effect log,
//! and the faults as injected.
//!
//! | check | what it needs | what it asserts |
//! |---|---|---|
//! | `results` | rows, payloads, side effects | every job `succeeded` with its exact result bytes, from a handler that finished under the winning token |
//! | `overlap` | side effects | no two tokens of a job have side effects that overlap in time (fencing permits none) |
//! | `grants` | audit log, side effects | every handler ran under a lease the store granted to its own `Worker`, one its process runs |
//! | `crash-reports` | audit log, faults | every sweep reclaim (crash report) matches a fault the nemesis injected on its holder's process or on the store (a restart, any pause, on SQLite any kill) |
//! | `audit` | audit log | the offline checker (`leasehold check`): I1, I2, I4, I7, I8 |
//! | `processes` | exit statuses | no worker died unasked or ignored SIGTERM |

mod audit;
mod crashes;
mod grants;
mod overlap;
mod results;

use crate::config::StoreTarget;
use crate::effects::ProcessLog;
use crate::fleet::Incarnation;
use crate::job::ChaosJob;
use crate::nemesis::Injected;
use leasehold_check::finding::{concerns, Finding, Printed};
use leasehold_core::{Event, JobId, JobRecord, Token};
use leasehold_model::config::InvariantId;
use std::collections::BTreeMap;
use std::fmt;

/// Slack (ms) when matching fault times (the orchestrator's clock) with
/// store times: on one host both read the same wall clock, so this only
/// absorbs the time between reading it and acting.
pub const MATCH_SLACK_MS: i64 = 250;

/// Which check found a violation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CheckId {
    /// Every job succeeded with its exact result bytes.
    Results,
    /// No overlapping side effects of two tokens.
    Overlap,
    /// Handlers ran only under leases granted to them.
    Grants,
    /// Every crash report matches an injected fault.
    CrashReports,
    /// The offline checker on the audit log.
    Audit(InvariantId),
    /// Worker processes behaved (no unasked exits, SIGTERM honoured).
    Processes,
}

impl fmt::Display for CheckId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckId::Results => f.write_str("results"),
            CheckId::Overlap => f.write_str("overlap"),
            CheckId::Grants => f.write_str("grants"),
            CheckId::CrashReports => f.write_str("crash-reports"),
            CheckId::Audit(i) => write!(f, "audit {i} {}", i.name()),
            CheckId::Processes => f.write_str("processes"),
        }
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which check.
    pub check: CheckId,
    /// The job, if one.
    pub job: Option<JobId>,
    /// The tokens involved (both, for an overlap).
    pub tokens: Vec<Token>,
    /// The worker identities involved.
    pub workers: Vec<String>,
    /// What broke.
    pub message: String,
}

impl Violation {
    /// A violation of `check`.
    pub fn new(check: CheckId, message: impl Into<String>) -> Self {
        Violation {
            check,
            job: None,
            tokens: Vec::new(),
            workers: Vec::new(),
            message: message.into(),
        }
    }

    fn job(mut self, j: JobId) -> Self {
        self.job = Some(j);
        self
    }

    fn tokens(mut self, t: impl IntoIterator<Item = Token>) -> Self {
        self.tokens.extend(t);
        self
    }

    fn workers<S: ToString>(mut self, w: impl IntoIterator<Item = S>) -> Self {
        self.workers.extend(w.into_iter().map(|s| s.to_string()));
        self
    }
}

impl Finding for Violation {
    fn broken(&self) -> String {
        self.check.to_string()
    }
    fn message(&self) -> String {
        self.message.clone()
    }
    fn context(&self) -> Vec<(&'static str, String)> {
        concerns(self.job, &self.tokens, "workers", &self.workers)
    }
}

/// Printed as every tool prints a finding.
impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Printed::new(self).fmt(f)
    }
}

/// Everything the checks read.
pub struct Evidence<'a> {
    /// The store.
    pub store: &'a StoreTarget,
    /// Each enqueued job and its payload.
    pub expected: &'a BTreeMap<JobId, ChaosJob>,
    /// The final rows.
    pub rows: &'a [JobRecord],
    /// The audit log, in commit order.
    pub events: &'a [Event],
    /// Every process's side-effect log.
    pub logs: &'a [ProcessLog],
    /// Every process started.
    pub incarnations: &'a [Incarnation],
    /// Every fault injected.
    pub faults: &'a [Injected],
    /// Process problems seen during the run.
    pub process_problems: &'a [String],
    /// How long after a pause of its holder's process, or after a restart
    /// of the store, a lease granted then may still be that fault's doing
    /// (ms; see `crash-reports`).
    pub aftermath_ms: i64,
}

/// Counts behind the report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckStats {
    /// Jobs that succeeded with their exact result bytes.
    pub exact_results: u64,
    /// Side effects recorded.
    pub effects: u64,
    /// Leases (job, token) with side effects.
    pub leases_with_effects: u64,
    /// Crash reports (sweep reclaims) in the audit log.
    pub crash_reports: u64,
    /// Of those, matched to an injected fault.
    pub crash_reports_matched: u64,
    /// Of the matched, those only a fault's aftermath explains (a lease
    /// granted after the fault ended: see `crash-reports`).
    pub crash_reports_by_aftermath: u64,
    /// Audit events checked.
    pub audit_events: u64,
    /// Torn last lines in side-effect logs (processes killed mid-write).
    pub torn_tails: u64,
    /// Worker processes (incarnations) whose Workers made side effects.
    pub processes_with_effects: u64,
    /// Workers that made side effects (each attributed to its process).
    pub workers_with_effects: u64,
    /// Most Workers of one process that made side effects.
    pub most_workers_in_a_process: u64,
}

/// What the checks found.
#[derive(Clone, Debug, Default)]
pub struct Findings {
    /// Every violation.
    pub violations: Vec<Violation>,
    /// The counts.
    pub stats: CheckStats,
}

/// Runs every check.
pub fn run_all(e: &Evidence<'_>) -> Findings {
    let mut f = Findings::default();
    f.violations.extend(results::check(e, &mut f.stats));
    f.violations.extend(overlap::check(e, &mut f.stats));
    f.violations.extend(grants::check(e, &mut f.stats));
    f.violations.extend(crashes::check(e, &mut f.stats));
    f.violations.extend(audit::check(e, &mut f.stats));
    f.violations.extend(
        e.process_problems
            .iter()
            .map(|p| Violation::new(CheckId::Processes, p.clone())),
    );
    f.stats.torn_tails = e.logs.iter().filter(|l| l.torn_tail).count() as u64;
    f
}

/// Every side effect in the logs, as (job, token, worker, phase, wall µs, mono µs).
pub(crate) fn effects<'a>(
    logs: &'a [ProcessLog],
) -> impl Iterator<Item = (JobId, Token, &'a str, crate::effects::Phase, i64, u64)> + 'a {
    logs.iter().flat_map(|l| {
        l.effects.iter().filter_map(|line| match line {
            crate::effects::Line::Effect {
                job,
                token,
                worker,
                phase,
                wall_us,
                mono_us,
                ..
            } => Some((
                JobId(*job),
                Token(*token),
                worker.as_str(),
                *phase,
                *wall_us,
                *mono_us,
            )),
            crate::effects::Line::Started { .. } => None,
        })
    })
}

/// A wall time in µs as `HH:MM:SS.mmm` UTC, for reports.
pub(crate) fn clock(wall_us: i64) -> String {
    let ms = wall_us.div_euclid(1_000);
    let day_ms = ms.rem_euclid(86_400_000);
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        day_ms / 3_600_000,
        day_ms / 60_000 % 60,
        day_ms / 1_000 % 60,
        day_ms % 1_000
    )
}
