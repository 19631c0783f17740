//! I4 no lost results: every `Committed` answer is reflected in the final
//! store state with the same result bytes and token, across store crashes;
//! no reader ever sees a terminal job without its result.
//!
//! Across pruning (spec §3 "Retention"): a committed result must stay for
//! at least `R` after its job finished. A job the store answered it pruned
//! has no final row; that is its lawful end only when the prune's store
//! time is at least `R` after the store time its success was accepted.
//! Pruned any sooner, the result was lost.

use super::facts::{Facts, PrunedJob};
use super::replay::{JobView, Step};
use super::Violation;
use leasehold_core::{EventKind, JobId, JobState, Outcome, StoreTime, Token};
use leasehold_model::config::InvariantId::I4;
use leasehold_model::history::{Blob, Op, Reply};
use std::collections::BTreeMap;

/// The accepted success of each job: token and result bytes (as the
/// releasing worker sent them, when the history has its request).
fn successes<'a>(
    steps: &[Step<'a>],
    facts: Option<&'a Facts>,
) -> BTreeMap<JobId, (Token, &'a [u8])> {
    let mut out = BTreeMap::new();
    for s in steps {
        if let EventKind::Released {
            outcome: Outcome::Succeeded(bytes),
            ..
        } = &s.event.kind
        {
            let sent = s
                .req
                .and_then(|r| facts.and_then(|f| f.requests.get(&r)))
                .and_then(|q| match &q.op {
                    Op::Release {
                        outcome: Outcome::Succeeded(b),
                        ..
                    } => Some(b.as_slice()),
                    _ => None,
                });
            out.entry(s.event.job)
                .or_insert((s.event.token, sent.unwrap_or(bytes.as_slice())));
        }
    }
    out
}

/// On events alone: a job whose success was accepted ends succeeded.
pub fn check_events(steps: &[Step<'_>], finals: &BTreeMap<JobId, JobView>) -> Vec<Violation> {
    let mut out = Vec::new();
    for (job, (token, _)) in successes(steps, None) {
        let end = finals.get(&job).and_then(|v| v.state);
        if end != Some(JobState::Succeeded) {
            out.push(
                Violation::new(
                    I4,
                    format!(
                        "the success of token {token} was accepted, but the job ended {}",
                        end.map_or("unknown", |s| s.as_str())
                    ),
                )
                .job(job)
                .tokens([token]),
            );
        }
    }
    out
}

/// Committed answers against the final rows, and what readers saw.
pub fn check_history(steps: &[Step<'_>], facts: &Facts) -> Vec<Violation> {
    let ok = successes(steps, Some(facts));
    // When each job's success was accepted (store time).
    let mut finished: BTreeMap<JobId, StoreTime> = BTreeMap::new();
    for s in steps {
        if let EventKind::Released {
            outcome: Outcome::Succeeded(_),
            ..
        } = &s.event.kind
        {
            finished.entry(s.event.job).or_insert(s.event.at);
        }
    }
    let mut out = Vec::new();
    for (id, q) in &facts.requests {
        let Some((t, reply)) = &q.answer else {
            continue;
        };
        match (&q.op, reply) {
            (
                Op::Release {
                    job,
                    token,
                    outcome: Outcome::Succeeded(bytes),
                },
                Reply::Committed,
            ) => {
                if let Some(p) = facts.pruned.get(job) {
                    out.extend(pruned_early(
                        *job,
                        *token,
                        *id,
                        p,
                        finished.get(job).copied(),
                    ));
                    continue;
                }
                let row = facts.finals.get(job);
                let good = row.is_some_and(|r| {
                    r.state == JobState::Succeeded
                        && r.result.as_deref() == Some(bytes.as_slice())
                        && r.released.map(|m| m.token) == Some(*token)
                });
                if !good {
                    out.push(
                        Violation::new(
                            I4,
                            format!(
                                "release #{id} of token {token} was answered Committed with a result, but the final row is {} with result {:?}",
                                row.map_or("missing", |r| r.state.as_str()),
                                row.and_then(|r| r.result.as_deref()).map(show)
                            ),
                        )
                        .job(*job)
                        .tokens([*token])
                        .hosts([q.host])
                        .at(*t),
                    );
                }
            }
            (Op::List { .. } | Op::Get { .. }, Reply::Rows(rows)) => {
                for r in rows {
                    check_read(&ok, r, q.host, *t, &mut out);
                }
            }
            (Op::Get { .. }, Reply::Row(Some(r))) => check_read(&ok, r, q.host, *t, &mut out),
            _ => {}
        }
    }
    for (job, row) in &facts.finals {
        if row.state == JobState::Succeeded {
            let expect = ok.get(job);
            if row.result.as_deref() != expect.map(|e| e.1) {
                out.push(
                    Violation::new(
                        I4,
                        format!(
                            "final row is succeeded with result {:?}, but the accepted release carried {:?}",
                            row.result.as_deref().map(show),
                            expect.map(|e| show(e.1))
                        ),
                    )
                    .job(*job)
                    .tokens([row.token])
                    .at(facts.end_ms),
                );
            }
        }
    }
    out
}

/// A committed result whose job was pruned: lost when the prune came
/// sooner than `R` after the success was accepted at `finished`.
fn pruned_early(
    job: JobId,
    token: Token,
    release: u64,
    p: &PrunedJob,
    finished: Option<StoreTime>,
) -> Option<Violation> {
    let finished = finished?;
    let age = p.store_time.0.saturating_sub(finished.0);
    if age >= i64::try_from(p.retention.0).unwrap_or(i64::MAX) {
        return None;
    }
    Some(
        Violation::new(
            I4,
            format!(
                "release #{release} of token {token} was answered Committed with a result, \
                 accepted at {finished}, but prune #{} by {} deleted the job at {}, {age}ms \
                 later, before its retention R = {}: the result was lost",
                p.request, p.host, p.store_time, p.retention
            ),
        )
        .job(job)
        .tokens([token])
        .hosts([p.host])
        .at(p.t)
        .store_at(p.store_time),
    )
}

fn check_read(
    ok: &BTreeMap<JobId, (Token, &[u8])>,
    r: &leasehold_model::history::ReadRow,
    host: &str,
    t: u64,
    out: &mut Vec<Violation>,
) {
    if r.state != JobState::Succeeded {
        return;
    }
    let expect = ok.get(&r.job).map(|e| e.1);
    if r.result != expect.map(Blob::of) || expect.is_none() {
        out.push(
            Violation::new(
                I4,
                format!(
                    "a reader saw {} succeeded with result {:?}; the accepted release carried {:?}",
                    r.job,
                    r.result.map(|b| b.to_string()),
                    expect.map(show)
                ),
            )
            .job(r.job)
            .tokens(r.released_token)
            .hosts([host])
            .at(t),
        );
    }
}

/// Short, readable bytes for a report: the text when it is short UTF-8,
/// else length and digest (results can be megabytes of binary).
fn show(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) if s.len() <= 64 => s.to_string(),
        _ => Blob::of(bytes).to_string(),
    }
}
