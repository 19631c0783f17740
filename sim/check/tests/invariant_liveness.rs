//! I6 on a hand-written history: a job still running long after the
//! faults healed.

mod histories;

use histories::{end, only, row, run_record, w1_holds_job_1};
use leasehold_core::JobState;
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
