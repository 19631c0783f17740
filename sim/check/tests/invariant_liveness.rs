//! I6 on a hand-written history: a job still running long after the
//! faults healed.

mod histories;

use histories::{cfg, end, enq, only, row, run_record, store_event, w1_holds_job_1, T0};
use leasehold_check::checker::check;
use leasehold_core::{EventKind, JobId, JobState, StoreTime};
use leasehold_model::config::InvariantId;
use leasehold_model::history::{History, Record};

#[test]
fn i6_a_job_still_running_long_after_healing() {
    let mut records = vec![run_record(1_000)];
    records.extend(w1_holds_job_1(None));
    records.extend([
        Record::ClientDone { t: 30 },
        Record::Final {
            row: row(1, JobState::Running, None),
        },
        end(600_000, false),
    ]);
    assert_eq!(only(&History { records }), vec![InvariantId::I6]);
}

/// Three jobs of each of queues `a` and `b`, enqueued at 0 and never
/// claimed, on one worker serving both (`a` first, `b` second) with four
/// slots: the I6 messages of the third job of each queue, the run ending
/// at `end_ms`.
fn third_jobs_of_two_queues(end_ms: u64) -> (Vec<String>, u64) {
    let mut c = cfg();
    c.workload.queues = vec!["a".into(), "b".into()];
    c.topology.workers = 1;
    c.topology.queues_per_worker = 2;
    c.protocol.concurrency = 4;
    let bound = leasehold_model::timing::liveness_bound_ms(&c);
    let mut records = vec![run_record(0)];
    for (seq, (job, queue)) in [(1, "a"), (2, "a"), (3, "a"), (4, "b"), (5, "b"), (6, "b")]
        .into_iter()
        .enumerate()
    {
        let mut e = enq(job, 0);
        e.kind = EventKind::Enqueued {
            queue: queue.into(),
            max_attempts: 3,
            run_at: StoreTime(T0),
        };
        records.push(store_event(0, seq as u64, None, e));
    }
    records.push(Record::ClientDone { t: 0 });
    for (job, queue) in [(1, "a"), (2, "a"), (3, "a"), (4, "b"), (5, "b"), (6, "b")] {
        let mut r = row(job, JobState::Pending, None);
        r.queue = queue.into();
        records.push(Record::Final { row: r });
    }
    records.push(end(end_ms, false));
    let third: Vec<String> = check(&History { records }, &c)
        .into_iter()
        .filter(|v| v.invariant == InvariantId::I6 && matches!(v.job, Some(JobId(3 | 6))))
        .map(|v| v.message)
        .collect();
    (third, bound)
}

/// Every queue a worker serves counts its slots, not only its first: the
/// one worker gives each of `a` and `b` half its four slots, so the third
/// job of each waits one round behind the first two, and its deadline is
/// two bounds. The old count gave `a` all four slots (deadline one bound)
/// and `b`, served only as a second queue, a single slot (three bounds): a
/// run ending between two and three bounds then called `b`'s stuck job
/// "too short to judge" instead of past its deadline.
#[test]
fn i6_the_backlog_bound_counts_every_queue_a_worker_serves() {
    let (_, bound) = third_jobs_of_two_queues(0);
    let (third, _) = third_jobs_of_two_queues(2 * bound + bound / 2);
    assert_eq!(third.len(), 2, "{third:#?}");
    for m in &third {
        assert!(
            m.contains(&format!("past its deadline {}ms", 2 * bound)),
            "{m}"
        );
    }
    // Before two bounds, each is still unjudged (too short), on both
    // queues alike.
    let (early, _) = third_jobs_of_two_queues(2 * bound - 1);
    assert_eq!(early.len(), 2, "{early:#?}");
    for m in &early {
        assert!(
            m.contains(&format!("before its deadline {}ms", 2 * bound)),
            "{m}"
        );
    }
}
