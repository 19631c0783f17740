//! Counters and a histogram through the [`metrics`] facade, for the
//! [`Worker`](super::Worker), [`Sweeper`](super::Sweeper) and
//! [`Scheduler`](super::Scheduler).
//!
//! The runtime records to whatever recorder the application installed
//! (Prometheus, StatsD, ...); with none installed every call is a no-op, so
//! no exporter is forced on users. Names (all prefixed `leasehold_`):
//!
//! | name | kind | labels | counts |
//! |---|---|---|---|
//! | [`CLAIMED`] | counter | | leases granted to this process |
//! | [`RENEWED`] | counter | | renews answered `Renewed` |
//! | [`RENEW_UNKNOWN`] | counter | | renews whose outcome was unknown (retried) |
//! | [`LOST`] | counter | `op` = `renew` or `release` | answers `Lost` (the token no longer held the job) |
//! | [`SELF_FENCED`] | counter | | leases given up because no renew succeeded before the fence deadline |
//! | [`RELEASED`] | counter | `outcome` = `succeeded`, `failed`, `cancelled`, `returned`; `answer` = `committed`, `lost`, `unknown` | releases by outcome and answer |
//! | [`SWEEPS`] | counter | | sweep calls answered by the store |
//! | [`CRASH_REPORTS`] | counter | | expired leases reclaimed (one crash report each) |
//! | [`RENEW_RTT`] | histogram | | renew round-trip time in seconds, on the worker's own clock |
//! | [`SCHEDULE_FIRED`] | counter | | plan times fired with a definite answer (a new job, or the one an earlier fire made) |
//! | [`SCHEDULE_FIRE_UNKNOWN`] | counter | | fires whose outcome was unknown (retried next tick) |
//! | [`SCHEDULE_FIRE_REFUSED`] | counter | | fires the store refused (the schedule was removed or replaced meanwhile) |
//! | [`SCHEDULER_TICK_FAILED`] | counter | | scheduler ticks that could not read the store's clock or schedules |
//!
//! Invariant: every [`RuntimeEvent`] the runtime emits is counted here
//! exactly once, by `record_event`, and every scheduler tick once, by
//! `record_tick` or `record_tick_failed`; metrics never change what the
//! runtime does (they are written after the decision, and never read back).
//!
//! In the simulator the clock is simulated, so [`RENEW_RTT`] there measures
//! simulated time.

use super::observer::{BeliefEnd, RuntimeEvent};
use super::tick_report::TickReport;
use crate::job::Release;
use crate::time::Millis;

/// Leases granted to this process.
pub const CLAIMED: &str = "leasehold_claimed_total";
/// Renews answered `Renewed`.
pub const RENEWED: &str = "leasehold_renewed_total";
/// Renews whose outcome was unknown; they are retried until the fence.
pub const RENEW_UNKNOWN: &str = "leasehold_renew_unknown_total";
/// Answers `Lost`, labelled `op` = `renew` or `release`.
pub const LOST: &str = "leasehold_lost_total";
/// Leases given up by self-fencing.
pub const SELF_FENCED: &str = "leasehold_self_fenced_total";
/// Releases, labelled `outcome` and `answer` (`committed`, `lost`, `unknown`).
pub const RELEASED: &str = "leasehold_released_total";
/// Sweep calls the store answered.
pub const SWEEPS: &str = "leasehold_sweeps_total";
/// Reclaimed expired leases (crash reports).
pub const CRASH_REPORTS: &str = "leasehold_crash_reports_total";
/// Renew round-trip time, seconds.
pub const RENEW_RTT: &str = "leasehold_renew_rtt_seconds";

/// Plan times fired with a definite answer.
pub const SCHEDULE_FIRED: &str = "leasehold_schedule_fired_total";
/// Fires whose outcome was unknown.
pub const SCHEDULE_FIRE_UNKNOWN: &str = "leasehold_schedule_fire_unknown_total";
/// Fires the store refused.
pub const SCHEDULE_FIRE_REFUSED: &str = "leasehold_schedule_fire_refused_total";
/// Scheduler ticks that failed before firing anything.
pub const SCHEDULER_TICK_FAILED: &str = "leasehold_scheduler_tick_failed_total";

/// Every metric name, for exporters that want to pre-register them.
pub const ALL: [&str; 13] = [
    CLAIMED,
    RENEWED,
    RENEW_UNKNOWN,
    LOST,
    SELF_FENCED,
    RELEASED,
    SWEEPS,
    CRASH_REPORTS,
    RENEW_RTT,
    SCHEDULE_FIRED,
    SCHEDULE_FIRE_UNKNOWN,
    SCHEDULE_FIRE_REFUSED,
    SCHEDULER_TICK_FAILED,
];

/// Counts one runtime event.
pub(crate) fn record_event(event: &RuntimeEvent) {
    match event {
        RuntimeEvent::Claimed { .. } => metrics::counter!(CLAIMED).increment(1),
        RuntimeEvent::Renewed { .. } => metrics::counter!(RENEWED).increment(1),
        RuntimeEvent::RenewUnavailable { .. } => metrics::counter!(RENEW_UNKNOWN).increment(1),
        RuntimeEvent::BeliefEnded { why, .. } => match why {
            BeliefEnd::Lost => metrics::counter!(LOST, "op" => "renew").increment(1),
            BeliefEnd::Fenced => metrics::counter!(SELF_FENCED).increment(1),
            BeliefEnd::HandlerDone | BeliefEnd::ShutdownTimeout | BeliefEnd::CancelTimeout => {}
        },
        RuntimeEvent::Released {
            outcome, answer, ..
        } => {
            let answer = match answer {
                Some(Release::Committed) => "committed",
                Some(Release::Lost) => {
                    metrics::counter!(LOST, "op" => "release").increment(1);
                    "lost"
                }
                None => "unknown",
            };
            metrics::counter!(RELEASED, "outcome" => *outcome, "answer" => answer).increment(1);
        }
        RuntimeEvent::CrashReported { .. } => metrics::counter!(CRASH_REPORTS).increment(1),
    }
}

/// Counts one answered sweep call.
pub(crate) fn record_sweep() {
    metrics::counter!(SWEEPS).increment(1);
}

/// Records one renew's round trip, on the worker's own clock.
pub(crate) fn record_renew_rtt(rtt: Millis) {
    metrics::histogram!(RENEW_RTT).record(rtt.0 as f64 / 1000.0);
}

/// Counts one scheduler tick's fires.
pub(crate) fn record_tick(report: &TickReport) {
    metrics::counter!(SCHEDULE_FIRED).increment(report.fired.len() as u64);
    metrics::counter!(SCHEDULE_FIRE_UNKNOWN).increment(u64::from(report.unknown));
    metrics::counter!(SCHEDULE_FIRE_REFUSED).increment(u64::from(report.refused));
}

/// Counts one scheduler tick that failed before firing.
pub(crate) fn record_tick_failed() {
    metrics::counter!(SCHEDULER_TICK_FAILED).increment(1);
}
