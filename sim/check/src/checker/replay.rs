//! The checker's own model of a job, rebuilt from store events alone.
//!
//! This is a plain reading of the events (what each kind of event says
//! happened), not the core's transition code: the checker must not share the
//! logic it checks. Each step carries the job as it was before the event,
//! so invariants compare the event against the checker's view.

use leasehold_core::{Event, EventKind, JobId, JobState, Outcome, StoreTime, Token, WorkerId};
use std::collections::BTreeMap;

/// A job as the checker understands it from the events so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobView {
    /// An `enqueued` event was seen.
    pub known: bool,
    /// State (meaningful when `known`).
    pub state: Option<JobState>,
    /// Token of the current or last lease.
    pub token: Token,
    /// Current holder.
    pub holder: Option<WorkerId>,
    /// Attempts started (refunded by a return).
    pub attempt: u32,
    /// Attempt budget.
    pub max_attempts: u32,
    /// Earliest claim time.
    pub run_at: StoreTime,
    /// Queue.
    pub queue: String,
    /// Result of the accepted success.
    pub result: Option<Vec<u8>>,
    /// Token of the accepted release.
    pub released_token: Option<Token>,
}

/// One event with its context.
#[derive(Clone, Debug)]
pub struct Step<'a> {
    /// Commit index.
    pub index: usize,
    /// True time, when known.
    pub t: Option<u64>,
    /// The request that committed it, when known.
    pub req: Option<u64>,
    /// The event.
    pub event: &'a Event,
    /// The job before the event.
    pub before: JobView,
}

/// An event with optional true time and request.
pub type Timed<'a> = (Option<u64>, Option<u64>, &'a Event);

fn apply(v: &mut JobView, e: &Event) {
    match &e.kind {
        EventKind::Enqueued {
            queue,
            max_attempts,
            run_at,
        } => {
            *v = JobView {
                known: true,
                queue: queue.clone(),
                max_attempts: *max_attempts,
                run_at: *run_at,
                ..JobView::default()
            };
        }
        EventKind::Claimed { attempt, .. } => {
            v.token = e.token;
            v.holder = e.worker.clone();
            v.attempt = *attempt;
        }
        EventKind::Renewed { .. } | EventKind::CancelRequested | EventKind::Cancelled => {}
        EventKind::Released { outcome, run_at } => {
            v.holder = None;
            v.released_token = Some(e.token);
            if let Some(r) = run_at {
                v.run_at = *r;
            }
            match outcome {
                Outcome::Succeeded(bytes) => v.result = Some(bytes.clone()),
                Outcome::Returned if e.to == JobState::Pending => {
                    v.attempt = v.attempt.saturating_sub(1)
                }
                _ => {}
            }
        }
        EventKind::Swept { .. } => {
            v.holder = None;
            if e.to == JobState::Pending {
                v.run_at = e.at;
            }
        }
        // An operator's retry of a dead job: a fresh budget from `run_at`.
        EventKind::Retried { run_at, .. } => {
            v.attempt = 0;
            v.run_at = *run_at;
        }
    }
    v.state = Some(e.to);
}

/// Replays events in commit order; answers each step and the final views.
pub fn replay<'a>(events: &[Timed<'a>]) -> (Vec<Step<'a>>, BTreeMap<JobId, JobView>) {
    let mut jobs: BTreeMap<JobId, JobView> = BTreeMap::new();
    let mut steps = Vec::with_capacity(events.len());
    for (index, &(t, req, event)) in events.iter().enumerate() {
        let view = jobs.entry(event.job).or_default();
        steps.push(Step {
            index,
            t,
            req,
            event,
            before: view.clone(),
        });
        apply(view, event);
    }
    (steps, jobs)
}
