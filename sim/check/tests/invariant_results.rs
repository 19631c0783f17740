//! I4 on a hand-written history: a reader sees a succeeded job without
//! its result.

mod histories;

use histories::{
    answer, answer_by, end, ok, only, release_of_w1, released, request, request_by, row,
    run_record, store_event, w1_holds_job_1,
};
use leasehold_core::JobState;
use leasehold_model::config::InvariantId;
use leasehold_model::history::{History, Op, ReadRow, Record, Reply};

#[test]
fn i4_a_reader_sees_a_succeeded_job_without_its_result() {
    let mut records = vec![run_record(0)];
    records.extend(w1_holds_job_1(None));
    records.extend([
        request(30, 7, release_of_w1(), false),
        store_event(
            31,
            2,
            Some(7),
            released(1, 1, "w1", ok(b"r"), JobState::Succeeded, 31, 3, None),
        ),
        request_by(
            "client",
            40,
            8,
            Op::List {
                after: None,
                limit: 10,
            },
            false,
        ),
        answer_by(
            "client",
            41,
            8,
            Reply::Rows(vec![ReadRow {
                result: None,
                ..ReadRow::of(&row(1, JobState::Succeeded, Some(b"r")))
            }]),
        ),
        Record::ClientDone { t: 45 },
        Record::Final {
            row: row(1, JobState::Succeeded, Some(b"r")),
        },
        end(50, true),
    ]);
    assert_eq!(only(&History { records }), vec![InvariantId::I4]);
}

/// Job 1's success committed at store time `T0 + 31` (request 7), then a
/// prune served at true time `at` and store time `T0 + at` naming job 1,
/// and no final row.
fn pruned_at(at: i64) -> History {
    use leasehold_core::{JobId, Millis, StoreTime};
    let mut records = vec![run_record(0)];
    records.extend(w1_holds_job_1(None));
    records.extend([
        request(30, 7, release_of_w1(), false),
        store_event(
            31,
            2,
            Some(7),
            released(1, 1, "w1", ok(b"r"), JobState::Succeeded, 31, 3, None),
        ),
        answer(32, 7, Reply::Committed),
        request_by(
            "pruner-1",
            at as u64,
            8,
            Op::Prune {
                retention: Millis(60_000),
                limit: 10,
                audit_retention: Millis(60_000),
            },
            false,
        ),
        Record::Served {
            t: at as u64,
            store_time: StoreTime(histories::T0 + at),
            id: 8,
            host: "pruner-1".into(),
            fate: leasehold_model::history::Fate::Answered,
            reply: Some(Reply::Pruned(vec![JobId(1)])),
            after: vec![],
        },
        Record::ClientDone { t: 45 },
        end(at as u64 + 10, true),
    ]);
    History { records }
}

fn i4(h: &History) -> Vec<String> {
    leasehold_check::checker::check(h, &histories::cfg())
        .into_iter()
        .filter(|v| v.invariant == InvariantId::I4)
        .map(|v| v.message)
        .collect()
}

#[test]
fn i4_a_result_pruned_before_its_retention_is_lost() {
    let v = i4(&pruned_at(31 + 60_000 - 1));
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].contains("accepted at @1704067200031ms, but prune #8 by pruner-1 deleted the job at @1704067260030ms, 59999ms later, before its retention R = 60000ms"),
        "{}",
        v[0]
    );
}

#[test]
fn i4_a_result_pruned_after_its_retention_is_not_lost() {
    assert_eq!(i4(&pruned_at(31 + 60_000)), Vec::<String>::new());
}
