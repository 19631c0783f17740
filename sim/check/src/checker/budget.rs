//! I8 retry budget: `attempt ≤ max_attempts`; no claim before `run_at`;
//! `dead` only when the budget is spent or the error is not retryable.

use super::replay::Step;
use super::Violation;
use leasehold_core::{EventKind, JobState, Outcome};
use leasehold_model::config::InvariantId::I8;

/// On events alone.
pub fn check_events(steps: &[Step<'_>]) -> Vec<Violation> {
    let mut out = Vec::new();
    for s in steps {
        let b = &s.before;
        if !b.known {
            continue;
        }
        match &s.event.kind {
            EventKind::Claimed { attempt, .. } => {
                if *attempt > b.max_attempts {
                    out.push(
                        Violation::new(
                            I8,
                            format!(
                                "attempt {attempt} started with a budget of {}",
                                b.max_attempts
                            ),
                        )
                        .on_step(s),
                    );
                }
                if *attempt != b.attempt + 1 {
                    out.push(
                        Violation::new(
                            I8,
                            format!(
                                "attempt {attempt} started after attempt {}: the count skipped",
                                b.attempt
                            ),
                        )
                        .on_step(s),
                    );
                }
                if s.event.at < b.run_at {
                    out.push(
                        Violation::new(
                            I8,
                            format!(
                                "claimed at {} before run_at {} (store time)",
                                s.event.at, b.run_at
                            ),
                        )
                        .on_step(s),
                    );
                }
            }
            EventKind::Released { outcome, .. } if s.event.to == JobState::Dead => {
                let justified = match outcome {
                    Outcome::Failed { retryable, .. } => !*retryable || b.attempt >= b.max_attempts,
                    _ => false,
                };
                if !justified {
                    out.push(
                        Violation::new(
                            I8,
                            format!(
                                "dead after a {} release on attempt {} of {}",
                                if matches!(
                                    outcome,
                                    Outcome::Failed {
                                        retryable: true,
                                        ..
                                    }
                                ) {
                                    "retryable failure"
                                } else {
                                    outcome.kind()
                                },
                                b.attempt,
                                b.max_attempts
                            ),
                        )
                        .on_step(s),
                    );
                }
            }
            EventKind::Swept { .. }
                if s.event.to == JobState::Dead && b.attempt < b.max_attempts =>
            {
                out.push(
                    Violation::new(
                        I8,
                        format!(
                            "dead after a reclaim on attempt {} of {}",
                            b.attempt, b.max_attempts
                        ),
                    )
                    .on_step(s),
                );
            }
            _ => {}
        }
    }
    out
}
