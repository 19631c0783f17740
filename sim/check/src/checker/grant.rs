//! I1 single grant: each (job, token) is granted to exactly one worker;
//! tokens strictly increase per job; at any store instant a job has at most
//! one live lease.

use super::facts::Facts;
use super::replay::Step;
use super::Violation;
use leasehold_core::{EventKind, JobId, JobState, Token, WorkerId};
use leasehold_model::config::InvariantId::I1;
use leasehold_model::history::BeliefWhat;
use std::collections::BTreeMap;

/// Claims against the checker's view of the job.
pub fn check_events(steps: &[Step<'_>]) -> Vec<Violation> {
    let mut out = Vec::new();
    for s in steps {
        let EventKind::Claimed { .. } = s.event.kind else {
            continue;
        };
        let b = &s.before;
        if !b.known {
            out.push(
                Violation::new(I1, "lease granted on a job that was never enqueued").on_step(s),
            );
            continue;
        }
        match b.state {
            Some(JobState::Running) => out.push(
                Violation::new(
                    I1,
                    format!(
                        "lease {} granted while lease {} of {} was still live: two live leases",
                        s.event.token,
                        b.token,
                        b.holder.as_ref().map_or("?", WorkerId::as_str)
                    ),
                )
                .on_step(s)
                .tokens([b.token])
                .hosts(b.holder.iter().map(WorkerId::as_str)),
            ),
            Some(JobState::Pending) => {}
            Some(other) => {
                out.push(Violation::new(I1, format!("lease granted on a {other} job")).on_step(s))
            }
            None => {}
        }
        if s.event.token <= b.token {
            out.push(
                Violation::new(
                    I1,
                    format!(
                        "token did not increase: {} granted after {}",
                        s.event.token, b.token
                    ),
                )
                .on_step(s)
                .tokens([b.token]),
            );
        }
    }
    out
}

/// Each granted (job, token) is believed by one worker only, and by the
/// worker the store granted it to.
pub fn check_history(facts: &Facts) -> Vec<Violation> {
    let mut granted: BTreeMap<(JobId, Token), (WorkerId, u64)> = BTreeMap::new();
    for (t, _, e) in &facts.events {
        if let (EventKind::Claimed { .. }, Some(w)) = (&e.kind, &e.worker) {
            granted
                .entry((e.job, e.token))
                .or_insert((w.clone(), t.unwrap_or(0)));
        }
    }
    let mut believers: BTreeMap<(JobId, Token), Vec<(WorkerId, u64)>> = BTreeMap::new();
    for ((w, j, tok), steps) in &facts.beliefs {
        if let Some(first) = steps
            .iter()
            .find(|s| matches!(s.what, BeliefWhat::Claimed { .. }))
        {
            believers
                .entry((*j, *tok))
                .or_default()
                .push((w.clone(), first.t));
        }
    }
    let mut out = Vec::new();
    for ((job, token), ws) in believers {
        let names: Vec<&str> = ws.iter().map(|(w, _)| w.as_str()).collect();
        let at = ws.iter().map(|w| w.1).min().unwrap_or(0);
        if ws.len() > 1 {
            out.push(
                Violation::new(
                    I1,
                    format!(
                        "lease {token} on {job} believed granted by {}",
                        names.join(" and ")
                    ),
                )
                .job(job)
                .tokens([token])
                .hosts(names.iter().copied())
                .at(at),
            );
        }
        match granted.get(&(job, token)) {
            None => out.push(
                Violation::new(
                    I1,
                    format!("{} believes it holds lease {token} on {job}, which the store never granted", names.join(", ")),
                )
                .job(job)
                .tokens([token])
                .hosts(names.iter().copied())
                .at(at),
            ),
            Some((w, _)) if ws.iter().any(|(x, _)| x != w) => out.push(
                Violation::new(
                    I1,
                    format!("lease {token} on {job} was granted to {w} but believed by {}", names.join(", ")),
                )
                .job(job)
                .tokens([token])
                .hosts(names.iter().copied().chain([w.as_str()]))
                .at(at),
            ),
            _ => {}
        }
    }
    out
}
