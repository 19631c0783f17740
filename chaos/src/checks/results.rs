//! Every job reached `succeeded` with its exact result bytes, and the
//! winning token's handler finished (an `end` side effect): a result no
//! handler produced under that lease is a violation.

use super::{effects, CheckId, CheckStats, Evidence, Violation};
use crate::effects::Phase;
use leasehold_core::{JobId, JobRecord, JobState, Token};
use std::collections::{BTreeMap, BTreeSet};

/// Runs the check.
pub fn check(e: &Evidence<'_>, stats: &mut CheckStats) -> Vec<Violation> {
    let rows: BTreeMap<JobId, &JobRecord> = e.rows.iter().map(|r| (r.id, r)).collect();
    let ended: BTreeSet<(JobId, Token)> = effects(e.logs)
        .filter(|x| x.3 == Phase::End)
        .map(|x| (x.0, x.1))
        .collect();
    let mut out = Vec::new();
    for (&id, job) in e.expected {
        let Some(row) = rows.get(&id) else {
            out.push(
                Violation::new(CheckId::Results, "enqueued job missing from the store").job(id),
            );
            continue;
        };
        if row.state != JobState::Succeeded {
            let why = if row.state.is_terminal() {
                format!(
                    "ended {} at attempt {}/{} (error: {})",
                    row.state,
                    row.attempt,
                    row.max_attempts,
                    row.error.as_deref().unwrap_or("none")
                )
            } else {
                format!(
                    "still {} after the healing phase (attempt {}, holder {})",
                    row.state,
                    row.attempt,
                    row.holder.as_ref().map_or("none", |h| h.as_str())
                )
            };
            out.push(
                Violation::new(CheckId::Results, format!("job did not succeed: {why}"))
                    .job(id)
                    .tokens([row.token]),
            );
            continue;
        }
        let want = job.expected_result();
        if row.result.as_deref() != Some(want.as_slice()) {
            out.push(
                Violation::new(
                    CheckId::Results,
                    format!(
                        "result bytes differ: stored {:?}, expected {:?}",
                        row.result
                            .as_deref()
                            .map(|r| String::from_utf8_lossy(r).into_owned()),
                        String::from_utf8_lossy(&want)
                    ),
                )
                .job(id)
                .tokens([row.token]),
            );
            continue;
        }
        if !ended.contains(&(id, row.token)) {
            out.push(
                Violation::new(
                    CheckId::Results,
                    "succeeded under a token whose handler never finished (no `end` side effect)",
                )
                .job(id)
                .tokens([row.token]),
            );
            continue;
        }
        stats.exact_results += 1;
    }
    out
}
