//! I9 on hand-written histories: a worker's own limit of handlers per
//! queue.

mod histories;

use histories::{cfg, end, handler, messages, row, run_record};
use leasehold_core::JobState;
use leasehold_model::config::InvariantId;
use leasehold_model::history::{HandlerPhase, History, Record};

/// Handler runs of `worker-1.2` (a worker of a process with several):
/// `(job, start, done)`, on a worker limited to 2 handlers of queue `q`.
fn i9_worker_history(runs: &[(u64, u64, u64)]) -> Vec<String> {
    i9_worker_history_with(runs, |_| {})
}

/// [`i9_worker_history`] with the limits `limits` sets on the scenario.
fn i9_worker_history_with(
    runs: &[(u64, u64, u64)],
    limits: impl Fn(&mut leasehold_model::config::Protocol),
) -> Vec<String> {
    let mut records = vec![run_record(0)];
    for &(job, from, to) in runs {
        records.push(handler(from, "worker-1.2", job, HandlerPhase::Start));
        records.push(handler(
            to,
            "worker-1.2",
            job,
            HandlerPhase::Done { ok: true },
        ));
    }
    for &(job, ..) in runs {
        records.push(Record::Final {
            row: row(job, JobState::Succeeded, Some(b"r")),
        });
    }
    records.push(end(10_000, false));
    let mut c = cfg();
    c.protocol.concurrency = 4;
    c.protocol.queue_limit = Some(2);
    limits(&mut c.protocol);
    messages(&History { records }, &c, InvariantId::I9)
}

#[test]
fn i9_a_worker_running_more_of_a_queue_than_its_limit() {
    let over = i9_worker_history(&[(1, 100, 500), (2, 100, 500), (3, 200, 300)]);
    assert_eq!(over.len(), 1, "{over:#?}");
    assert!(
        over[0].contains("worker-1.2 runs 3 handlers of queue \"q\" at once, its limit is 2"),
        "{over:#?}"
    );
    // A slot freed and taken in the same millisecond, and a run that ended
    // as it began (a poison payload), never overlap.
    let fine = i9_worker_history(&[(1, 100, 500), (2, 100, 500), (3, 500, 900), (4, 300, 300)]);
    assert!(fine.is_empty(), "{fine:#?}");
}

#[test]
fn i9_each_queue_is_judged_against_its_own_limit() {
    let two = [(1, 100, 500), (2, 200, 500)];
    // The queue's own limit replaces the common one, lower...
    let over = i9_worker_history_with(&two, |p| {
        p.queue_limits.insert("q".into(), 1);
    });
    assert_eq!(over.len(), 1, "{over:#?}");
    assert!(
        over[0].contains("runs 2 handlers of queue \"q\" at once, its limit is 1"),
        "{over:#?}"
    );
    // ... or higher.
    let three = [(1, 100, 500), (2, 100, 500), (3, 200, 300)];
    let fine = i9_worker_history_with(&three, |p| {
        p.queue_limits.insert("q".into(), 3);
    });
    assert!(fine.is_empty(), "{fine:#?}");
    // Another queue's own limit is not this queue's.
    let fine = i9_worker_history_with(&two, |p| {
        p.queue_limits.insert("other".into(), 1);
    });
    assert!(fine.is_empty(), "{fine:#?}");
}
