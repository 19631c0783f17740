//! I2 single winner: per job at most one terminal transition is accepted,
//! and only from the token that held the lease at that moment; a stale
//! token's release is answered `Lost`.

use super::facts::Facts;
use super::replay::Step;
use super::Violation;
use leasehold_core::{EventKind, JobId, JobState, Outcome, Token, WorkerId};
use leasehold_model::config::InvariantId::{I2, I4};
use leasehold_model::history::{Op, Reply};
use std::collections::BTreeMap;

fn changes_terminal_outside_cancel(s: &Step<'_>) -> bool {
    // Changes of a cancelled job, and cancels of terminal jobs, are I7's.
    let cancel_kind = matches!(
        s.event.kind,
        EventKind::Cancelled | EventKind::CancelRequested
    );
    matches!(s.before.state, Some(st) if st.is_terminal() && st != JobState::Cancelled)
        && !cancel_kind
}

/// Releases against the checker's view.
pub fn check_events(steps: &[Step<'_>]) -> Vec<Violation> {
    let mut out = Vec::new();
    for s in steps {
        let b = &s.before;
        if changes_terminal_outside_cancel(s) {
            out.push(
                Violation::new(
                    I2,
                    format!(
                        "{} job changed by a second terminal transition ({:?} to {})",
                        b.state.map_or("?", |st| st.as_str()),
                        s.event.kind,
                        s.event.to
                    ),
                )
                .on_step(s),
            );
            continue;
        }
        let EventKind::Released { outcome, .. } = &s.event.kind else {
            continue;
        };
        if b.state != Some(JobState::Running) {
            out.push(
                Violation::new(
                    I2,
                    format!(
                        "release ({}) accepted on a job that was {}",
                        outcome.kind(),
                        b.state.map_or("unknown", |st| st.as_str())
                    ),
                )
                .on_step(s),
            );
        } else if s.event.token != b.token {
            out.push(
                Violation::new(
                    I2,
                    format!(
                        "release with token {} accepted while token {} held the lease",
                        s.event.token, b.token
                    ),
                )
                .on_step(s)
                .tokens([b.token]),
            );
        } else if s.event.worker != b.holder {
            out.push(
                Violation::new(
                    I2,
                    format!(
                        "release by {} accepted for the lease of {}",
                        s.event.worker.as_ref().map_or("?", WorkerId::as_str),
                        b.holder.as_ref().map_or("?", WorkerId::as_str)
                    ),
                )
                .on_step(s),
            );
        }
    }
    out
}

/// Every release the store answered `Committed` matches an accepted release
/// of the same token and outcome; every accepted release was asked for by
/// that token.
pub fn check_history(steps: &[Step<'_>], facts: &Facts) -> Vec<Violation> {
    let mut accepted: BTreeMap<(JobId, Token), Vec<&Outcome>> = BTreeMap::new();
    let mut out = Vec::new();
    for s in steps {
        if let EventKind::Released { outcome, .. } = &s.event.kind {
            accepted
                .entry((s.event.job, s.event.token))
                .or_default()
                .push(outcome);
            let asked = s.req.and_then(|r| facts.requests.get(&r));
            if let Some(q) = asked {
                if let Op::Release { token, .. } = &q.op {
                    if *token != s.event.token {
                        out.push(
                            Violation::new(
                                I2,
                                format!(
                                    "a release sent with stale token {token} by {} was accepted as the release of token {}",
                                    q.host, s.event.token
                                ),
                            )
                            .on_step(s)
                            .tokens([*token])
                            .hosts([q.host]),
                        );
                    }
                }
            }
        }
    }
    for (id, q) in &facts.requests {
        let (
            Op::Release {
                job,
                token,
                outcome,
            },
            Some((t, _, Some(Reply::Committed))),
        ) = (&q.op, &q.served)
        else {
            continue;
        };
        let same_token = accepted.get(&(*job, *token));
        let stored = as_stored(outcome, facts.max_error_bytes);
        let ok = same_token.is_some_and(|v| v.contains(&&stored));
        if !ok {
            // Another outcome accepted for that token is a lost result (I4);
            // no release of it accepted at all, a second winner (I2).
            let (invariant, why) = if same_token.is_some() {
                (I4, "the store recorded a different outcome for that token")
            } else {
                (I2, "no such release was accepted")
            };
            out.push(
                Violation::new(
                    invariant,
                    format!(
                        "release #{id} ({}) of token {token} answered Committed, but {why}",
                        outcome.kind()
                    ),
                )
                .job(*job)
                .tokens([*token])
                .hosts([q.host])
                .at(*t),
            );
        }
    }
    out
}

/// A released outcome as the store keeps it: spec §3 lets the store cut an
/// error message to its limit (at a character boundary, after a NUL became
/// U+FFFD); everything else is kept exactly.
fn as_stored(o: &Outcome, max_error_bytes: u64) -> Outcome {
    match o {
        Outcome::Failed { error, retryable } => Outcome::Failed {
            error: crate::checker::answers::stored_error(error, max_error_bytes),
            retryable: *retryable,
        },
        other => other.clone(),
    }
}
