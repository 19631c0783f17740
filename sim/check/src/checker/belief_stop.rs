//! I3 part (b), asserted on every run whatever the clocks: once a worker has
//! received `Lost` for a lease (a renew or a release answered Lost), or has
//! self-fenced, that lease's handler is stopped within one step and
//! produces no later side effect.
//!
//! Per lease (worker, job, token), the stop time `t_stop` is the earliest of
//! - the true time the worker received a `RenewLost` answer to a renew of
//!   that lease (receipt, so a paused worker hears it when it resumes),
//! - a belief end for `Lost` (a renew answered Lost or rejected) or `Fenced`
//!   (self-fencing),
//! - a release of that lease answered Lost.
//!
//! Then, from the handler's ground truth:
//! - a handler execution running at `t_stop` ends (returns or is dropped)
//!   by `t_stop + tick`; a crash of the worker's host ends it too;
//! - no execution returns successfully (its side effect) after
//!   `t_stop + tick`;
//! - no execution starts after `t_stop`.
//!
//! A handler that returned before the Lost arrived is fine: its side effect
//! happened while the lease was believed (the release is then answered Lost).
//! Nothing here depends on any clock but true time, so it is checked even
//! when the run broke the timing assumption (where part (a) is not).

use super::facts::{Facts, LeaseKey};
use super::Violation;
use leasehold_model::config::InvariantId::I3;
use leasehold_model::history::{BeliefWhat, HandlerPhase, Op, Reply};
use std::collections::BTreeMap;

/// What ended the lease for the worker, and when (true ms).
#[derive(Clone, Debug)]
struct Stop {
    t: u64,
    cause: String,
}

/// The earliest stop cause of every lease that has one.
fn stops(facts: &Facts) -> BTreeMap<LeaseKey, Stop> {
    let mut out: BTreeMap<LeaseKey, Stop> = BTreeMap::new();
    let mut note = |key: &LeaseKey, t: u64, cause: String| {
        let e = out.entry(key.clone()).or_insert(Stop {
            t,
            cause: cause.clone(),
        });
        if t < e.t {
            *e = Stop { t, cause };
        }
    };
    for (key, steps) in &facts.beliefs {
        for s in steps {
            match &s.what {
                BeliefWhat::Ended { why } if why == "Lost" => {
                    note(key, s.t, "its belief ended as Lost".into())
                }
                BeliefWhat::Ended { why } if why == "Fenced" => {
                    note(key, s.t, "it self-fenced".into())
                }
                BeliefWhat::Released {
                    answer: Some(a), ..
                } if a == "Lost" => note(key, s.t, "its release was answered Lost".into()),
                _ => {}
            }
        }
    }
    // Leases by (host, job, token), to attach answers (which name the host).
    let mut by_host: BTreeMap<(String, u64, u64), Vec<&LeaseKey>> = BTreeMap::new();
    for key in facts.beliefs.keys().chain(facts.handlers.keys()) {
        let v = by_host
            .entry((Facts::host_of(&key.0), key.1 .0, key.2 .0))
            .or_default();
        if !v.contains(&key) {
            v.push(key);
        }
    }
    for (id, q) in &facts.requests {
        let (job, token, t, what) = match (&q.op, &q.answer) {
            (Op::Renew { job, token, .. }, Some((t, Reply::RenewLost))) => {
                (job, token, *t, "a renew answered Lost")
            }
            (Op::Release { job, token, .. }, Some((t, Reply::ReleaseLost))) => {
                (job, token, *t, "a release answered Lost")
            }
            _ => continue,
        };
        for key in by_host
            .get(&(q.host.to_string(), job.0, token.0))
            .into_iter()
            .flatten()
        {
            note(key, t, format!("it received {what} (request {id})"));
        }
    }
    out
}

/// One handler execution: its start, and its end (time, `Some(ok)` for a
/// return, `None` for a drop) if one was recorded.
type Exec = (u64, Option<(u64, Option<bool>)>);

/// The executions of one lease, in order.
fn executions(phases: &[(u64, HandlerPhase)]) -> Vec<Exec> {
    let mut out: Vec<Exec> = Vec::new();
    for (t, p) in phases {
        let end = match p {
            HandlerPhase::Start => {
                out.push((*t, None));
                continue;
            }
            HandlerPhase::Done { ok } => (*t, Some(*ok)),
            HandlerPhase::Dropped => (*t, None),
        };
        match out.last_mut() {
            Some(e) if e.1.is_none() => e.1 = Some(end),
            // An end without a start: an execution of its own.
            _ => out.push((*t, Some(end))),
        }
    }
    out
}

/// Checks that a lost or fenced lease's handler stops within one step and
/// has no later side effect.
pub fn check(facts: &Facts) -> Vec<Violation> {
    let tick = facts.tick_ms.max(1);
    let mut out = Vec::new();
    for (key, stop) in stops(facts) {
        let (worker, job, token) = &key;
        let host = Facts::host_of(worker);
        let deadline = stop.t.saturating_add(tick);
        let violation = |msg: String, at: u64| {
            Violation::new(
                I3,
                format!(
                    "part (b), handler stopped after Lost or self-fencing: {worker} holding {job} (lease {token}): {} at {}ms, but {msg}",
                    stop.cause, stop.t
                ),
            )
            .job(*job)
            .tokens([*token])
            .hosts([worker.as_str()])
            .at(at)
        };
        let phases = facts.handlers.get(&key).map(Vec::as_slice).unwrap_or(&[]);
        for (start, end) in executions(phases) {
            if start > stop.t {
                out.push(violation(
                    format!("its handler started afterwards, at {start}ms"),
                    start,
                ));
                continue;
            }
            // A crash of the host (its first after the start) ends everything.
            let crash = facts
                .crashes
                .get(&host)
                .and_then(|v| v.iter().copied().find(|&c| c >= start));
            match (end, crash) {
                (Some((te, _)), _) if te <= deadline => {}
                (None, Some(c)) if c <= deadline => {}
                (None, None) if facts.end_ms <= deadline => {}
                (Some((te, Some(true))), _) => out.push(violation(
                    format!(
                        "its handler was not stopped and produced its side effect (succeeded) \
                         at {te}ms, later than one step ({tick}ms) after"
                    ),
                    te,
                )),
                (Some((te, ok)), _) => out.push(violation(
                    format!(
                        "its handler was stopped only at {te}ms ({}), later than one step \
                         ({tick}ms) after",
                        if ok == Some(false) {
                            "returned a failure"
                        } else {
                            "dropped"
                        }
                    ),
                    te,
                )),
                (None, Some(c)) => out.push(violation(
                    format!(
                        "its handler was never stopped: it ran until its host crashed at {c}ms"
                    ),
                    deadline,
                )),
                (None, None) => out.push(violation(
                    format!(
                        "its handler was never stopped (still running when the run ended at {}ms)",
                        facts.end_ms
                    ),
                    deadline,
                )),
            }
        }
    }
    out
}
