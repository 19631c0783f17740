//! I9 on a hand-written history of two queues with limits of their own
//! (`protocol.queue_parallelism`): the store runs queue `b` past its own
//! limit while queue `a` has room, and the whole check names `b`.

mod histories;

use histories::{cfg, claim, end, enq, messages, ok, released, row, run_record, store_event};
use leasehold_core::{Event, EventKind, JobState};
use leasehold_model::config::InvariantId;
use leasehold_model::history::{History, Record};

/// Job `job` enqueued on `queue` at 0.
fn enq_on(job: u64, queue: &str) -> Event {
    let mut e = enq(job, 0);
    if let EventKind::Enqueued { queue: q, .. } = &mut e.kind {
        *q = queue.into();
    }
    e
}

/// Job 1 of queue `a`, jobs 2 and 3 of queue `b`: all three claimed at
/// once (10-12) and released with a success (20-22). Queue `a` may run
/// `limit_a`, queue `b` `limit_b`; the I9 messages of the whole check.
fn two_queues(limit_a: u32, limit_b: u32) -> Vec<String> {
    let jobs = [(1, "a", "w1"), (2, "b", "w1"), (3, "b", "w2")];
    let mut events = Vec::new();
    for (job, queue, _) in jobs {
        events.push(enq_on(job, queue));
    }
    for (i, (job, _, w)) in jobs.into_iter().enumerate() {
        events.push(claim(job, 1, w, 1, 10 + i as i64, 2));
    }
    for (i, (job, _, w)) in jobs.into_iter().enumerate() {
        let done = JobState::Succeeded;
        events.push(released(job, 1, w, ok(b"r"), done, 20 + i as i64, 3, None));
    }
    let mut records = vec![run_record(0)];
    for (seq, e) in events.into_iter().enumerate() {
        let t = (e.at.0 - histories::T0) as u64;
        records.push(store_event(t, seq as u64, None, e));
    }
    records.push(Record::ClientDone { t: 0 });
    for (job, queue, _) in jobs {
        let mut r = row(job, JobState::Succeeded, Some(b"r"));
        r.queue = queue.into();
        r.version = 3;
        records.push(Record::Final { row: r });
    }
    records.push(end(10_000, false));
    let mut c = cfg();
    c.workload.queues = vec!["a".into(), "b".into()];
    c.protocol.queue_parallelism.insert("a".into(), limit_a);
    c.protocol.queue_parallelism.insert("b".into(), limit_b);
    messages(&History { records }, &c, InvariantId::I9)
}

#[test]
fn i9_names_the_queue_that_ran_past_its_own_limit() {
    // `a` (limit 3) runs one job; `b` (limit 1) runs two.
    let over = two_queues(3, 1);
    assert_eq!(over.len(), 1, "{over:#?}");
    assert!(
        over[0].contains("queue \"b\" has 2 running jobs, limit 1"),
        "{over:#?}"
    );
    // `a` at its limit of one is within it.
    let over = two_queues(1, 1);
    assert_eq!(over.len(), 1, "{over:#?}");
    assert!(over[0].contains("queue \"b\""), "{over:#?}");
}

#[test]
fn i9_passes_the_same_history_within_each_queues_limit() {
    let fine = two_queues(1, 2);
    assert!(fine.is_empty(), "{fine:#?}");
}
