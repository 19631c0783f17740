//! I7 cancel: a job cancelled while pending never runs; a cancelled job
//! never changes again (never back to pending); a late cancel never
//! overwrites `succeeded` (or any terminal state).

use super::facts::Facts;
use super::replay::Step;
use super::Violation;
use leasehold_core::{CancelOutcome, EventKind, JobId, JobState};
use leasehold_model::config::InvariantId::I7;
use leasehold_model::history::{HandlerPhase, Op, Reply};
use std::collections::BTreeMap;

/// On events alone.
pub fn check_events(steps: &[Step<'_>]) -> Vec<Violation> {
    let mut out = Vec::new();
    for s in steps {
        let before = s.before.state;
        let cancelish = matches!(
            s.event.kind,
            EventKind::Cancelled | EventKind::CancelRequested
        ) || s.event.to == JobState::Cancelled;
        if before == Some(JobState::Cancelled) {
            out.push(
                Violation::new(
                    I7,
                    format!(
                        "a cancelled job changed again ({:?}, now {})",
                        s.event.kind, s.event.to
                    ),
                )
                .on_step(s),
            );
        } else if matches!(before, Some(st) if st.is_terminal()) && cancelish {
            out.push(
                Violation::new(
                    I7,
                    format!(
                        "a late cancel overwrote {} (now {})",
                        before.map_or("?", |st| st.as_str()),
                        s.event.to
                    ),
                )
                .on_step(s),
            );
        }
    }
    out
}

/// With ground truth: no handler starts after a cancel of the pending job;
/// a cancel answered `Cancelled` leaves the job cancelled.
pub fn check_history(steps: &[Step<'_>], facts: &Facts) -> Vec<Violation> {
    let mut cancelled_at: BTreeMap<JobId, u64> = BTreeMap::new();
    for s in steps {
        if matches!(s.event.kind, EventKind::Cancelled) && s.before.state == Some(JobState::Pending)
        {
            if let Some(t) = s.t {
                cancelled_at.entry(s.event.job).or_insert(t);
            }
        }
    }
    let mut out = Vec::new();
    for ((worker, job, token), phases) in &facts.handlers {
        let Some(&c) = cancelled_at.get(job) else {
            continue;
        };
        for (t, phase) in phases {
            if *phase == HandlerPhase::Start && *t > c {
                out.push(
                    Violation::new(
                        I7,
                        format!("{worker} started running {job} after it was cancelled while pending (at {c}ms)"),
                    )
                    .job(*job)
                    .tokens([*token])
                    .hosts([worker.as_str()])
                    .at(*t),
                );
            }
        }
    }
    for q in facts.requests.values() {
        if let (Op::Cancel { job }, Some((t, Reply::Cancel(CancelOutcome::Cancelled)))) =
            (&q.op, &q.answer)
        {
            let end = facts.finals.get(job).map(|r| r.state);
            if end.is_some_and(|s| s != JobState::Cancelled) {
                out.push(
                    Violation::new(
                        I7,
                        format!(
                            "cancel answered Cancelled, but the job ended {}",
                            end.map_or("?", |s| s.as_str())
                        ),
                    )
                    .job(*job)
                    .hosts([q.host])
                    .at(*t),
                );
            }
        }
    }
    out
}
