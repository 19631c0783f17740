//! Every handler ran under a lease the store granted to its own `Worker`,
//! inside its own process:
//!
//! - the audit log's `claimed` event for (job, token) names the Worker
//!   whose handler recorded the side effects. A handler running a lease
//!   granted to another Worker, or never granted, breaks single grant (I1)
//!   in the real world, where the audit log alone cannot see it; with
//!   several Workers per process that includes a neighbour in the same
//!   process (what a merger handing answers to the wrong callers does);
//! - the Worker is one of those its process's log names: a side effect
//!   under a Worker identity that process does not run is misattributed.

use super::{effects, CheckId, CheckStats, Evidence, Violation};
use crate::effects::Line;
use leasehold_core::{EventKind, JobId, Token};
use std::collections::{BTreeMap, BTreeSet};

/// Runs the check.
pub fn check(e: &Evidence<'_>, stats: &mut CheckStats) -> Vec<Violation> {
    let granted: BTreeMap<(JobId, Token), &str> = e
        .events
        .iter()
        .filter(|ev| matches!(ev.kind, EventKind::Claimed { .. }))
        .filter_map(|ev| Some(((ev.job, ev.token), ev.worker.as_ref()?.as_str())))
        .collect();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (job, token, worker, ..) in effects(e.logs) {
        if !seen.insert((job, token, worker)) {
            continue;
        }
        match granted.get(&(job, token)) {
            Some(w) if *w == worker => {}
            Some(w) => out.push(
                Violation::new(
                    CheckId::Grants,
                    format!("{worker} ran a lease the store granted to {w}"),
                )
                .job(job)
                .tokens([token])
                .workers([worker, w]),
            ),
            None => out.push(
                Violation::new(
                    CheckId::Grants,
                    format!("{worker} ran a lease the audit log never granted"),
                )
                .job(job)
                .tokens([token])
                .workers([worker]),
            ),
        }
    }
    out.extend(own_workers(e, stats));
    out
}

/// Each effect names a Worker of the process whose log holds it; counts
/// the Workers and processes that ran jobs.
fn own_workers(e: &Evidence<'_>, stats: &mut CheckStats) -> Vec<Violation> {
    let mut out = Vec::new();
    for log in e.logs {
        let mine: BTreeSet<&str> = log.workers.iter().map(String::as_str).collect();
        let mut ran: BTreeSet<&str> = BTreeSet::new();
        for line in &log.effects {
            let Line::Effect {
                job, token, worker, ..
            } = line
            else {
                continue;
            };
            if mine.contains(worker.as_str()) {
                ran.insert(worker);
            } else if ran.insert(worker) {
                out.push(
                    Violation::new(
                        CheckId::Grants,
                        format!(
                            "side effects under {worker} in the log of process {}, which runs \
                             only {}",
                            log.worker.as_deref().unwrap_or("(identity unknown)"),
                            log.workers.join(", ")
                        ),
                    )
                    .job(JobId(*job))
                    .tokens([Token(*token)])
                    .workers([worker.as_str()]),
                );
            }
        }
        if !ran.is_empty() {
            stats.processes_with_effects += 1;
            stats.workers_with_effects += ran.len() as u64;
            stats.most_workers_in_a_process = stats.most_workers_in_a_process.max(ran.len() as u64);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StoreTarget;
    use crate::effects::{Phase, ProcessLog};
    use leasehold_core::{Event, JobState, StoreTime, WorkerId};
    use std::collections::BTreeMap;

    fn claimed(job: u64, token: u64, worker: &str) -> Event {
        Event {
            job: JobId(job),
            token: Token(token),
            worker: Some(WorkerId::new(worker)),
            from: Some(JobState::Pending),
            to: JobState::Running,
            at: StoreTime(1),
            version: 2,
            kind: EventKind::Claimed {
                attempt: 1,
                expires_at: StoreTime(3_001),
            },
        }
    }

    fn effect(job: u64, token: u64, worker: &str) -> Line {
        Line::Effect {
            job,
            token,
            attempt: 1,
            worker: worker.into(),
            phase: Phase::Start,
            wall_us: 0,
            mono_us: 0,
        }
    }

    fn log(process: &str, workers: &[&str], effects: Vec<Line>) -> ProcessLog {
        ProcessLog {
            path: "l".into(),
            worker: Some(process.into()),
            workers: workers.iter().map(|w| w.to_string()).collect(),
            effects,
            torn_tail: false,
        }
    }

    fn run(events: &[Event], logs: &[ProcessLog]) -> (Vec<Violation>, CheckStats) {
        let expected = BTreeMap::new();
        let e = Evidence {
            store: &StoreTarget::Sqlite,
            expected: &expected,
            rows: &[],
            events,
            logs,
            incarnations: &[],
            faults: &[],
            process_problems: &[],
            aftermath_ms: 0,
        };
        let mut stats = CheckStats::default();
        (check(&e, &mut stats), stats)
    }

    /// Two Workers of one process: each ran the lease granted to it. Then
    /// the neighbour's lease, in the same process: caught, naming both.
    #[test]
    fn a_worker_running_its_neighbours_lease_in_the_same_process_is_caught() {
        let events = [claimed(1, 1, "p.w0"), claimed(2, 1, "p.w1")];
        let good = [log(
            "p",
            &["p.w0", "p.w1"],
            vec![effect(1, 1, "p.w0"), effect(2, 1, "p.w1")],
        )];
        let (v, stats) = run(&events, &good);
        assert!(v.is_empty(), "{v:?}");
        assert_eq!(
            (stats.processes_with_effects, stats.workers_with_effects),
            (1, 2)
        );
        let swapped = [log(
            "p",
            &["p.w0", "p.w1"],
            vec![effect(1, 1, "p.w1"), effect(2, 1, "p.w0")],
        )];
        let (v, _) = run(&events, &swapped);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0]
            .message
            .contains("p.w1 ran a lease the store granted to p.w0"));
        assert_eq!(v[0].workers, ["p.w1", "p.w0"]);
    }

    #[test]
    fn an_effect_under_a_worker_its_process_does_not_run_is_caught() {
        let events = [claimed(1, 1, "q.w0")];
        let logs = [log("p", &["p.w0", "p.w1"], vec![effect(1, 1, "q.w0")])];
        let (v, _) = run(&events, &logs);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].message.contains("in the log of process p"), "{}", v[0]);
    }
}
