//! A worker runtime's events as history records, the same in every
//! simulator that runs the real `Worker`.

use super::{BeliefWhat, Record};
use leasehold_core::worker::RuntimeEvent;
use leasehold_core::{Millis, Release, WorkerId};

/// The record of runtime event `e`, observed at true time `t` on `host`;
/// `until_true` maps a local time of that host to true time (`None` when
/// it lies beyond anything the run can reach).
pub fn record_of_event(
    e: &RuntimeEvent,
    t: u64,
    host: &str,
    until_true: impl Fn(u64) -> Option<u64>,
) -> Record {
    let belief = |worker: &WorkerId, job, token, at: Millis, what| Record::Belief {
        t,
        local: at.0,
        host: host.to_string(),
        worker: worker.clone(),
        job,
        token,
        what,
    };
    match e {
        RuntimeEvent::Claimed {
            worker,
            job,
            token,
            at,
            believe_until,
        }
        | RuntimeEvent::Renewed {
            worker,
            job,
            token,
            at,
            believe_until,
        } => {
            let (until_local, until_true) = (believe_until.0, until_true(believe_until.0));
            // A claim and a renew both start a belief until a local time.
            let what = if matches!(e, RuntimeEvent::Claimed { .. }) {
                BeliefWhat::Claimed {
                    until_local,
                    until_true,
                }
            } else {
                BeliefWhat::Renewed {
                    until_local,
                    until_true,
                }
            };
            belief(worker, *job, *token, *at, what)
        }
        RuntimeEvent::RenewUnavailable {
            worker,
            job,
            token,
            at,
        } => belief(worker, *job, *token, *at, BeliefWhat::RenewUnavailable),
        RuntimeEvent::BeliefEnded {
            worker,
            job,
            token,
            at,
            why: w,
        } => belief(
            worker,
            *job,
            *token,
            *at,
            BeliefWhat::Ended {
                why: format!("{w:?}"),
            },
        ),
        RuntimeEvent::Released {
            worker,
            job,
            token,
            at,
            outcome,
            answer,
        } => belief(
            worker,
            *job,
            *token,
            *at,
            BeliefWhat::Released {
                outcome: outcome.to_string(),
                answer: answer.map(|a| match a {
                    Release::Committed => "Committed".to_string(),
                    Release::Lost => "Lost".to_string(),
                }),
            },
        ),
        RuntimeEvent::CrashReported { report, at } => Record::CrashReported {
            t,
            local: at.0,
            host: host.to_string(),
            report: report.clone(),
        },
    }
}
