//! I4 on a hand-written history: a reader sees a succeeded job without
//! its result.

mod histories;

use histories::{
    answer_by, end, ok, only, release_of_w1, released, request, request_by, row, run_record,
    store_event, w1_holds_job_1,
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
