//! Assembling the final history of a run.

use crate::history::{History, Record};
use crate::hosts::Shared;
use leasehold_core::{Event, JobRecord};

/// Builds the final history: the recorded records in true-time order, the
/// store's events placed at the true time of the request that committed
/// them, the final rows, and the end marker.
/// A store without an audit log gets its events from the checker's model
/// instead (the history then holds none).
pub(super) fn collect(
    shared: &Shared,
    now: u64,
    quiet: bool,
    rows: Vec<JobRecord>,
    events: Option<Vec<Event>>,
) -> History {
    let mut records = shared.take_records();
    let anchors = shared.take_anchors();
    let mut last = (0u64, None);
    for (seq, event) in events.unwrap_or_default().into_iter().enumerate() {
        let (t, req) = match anchors.get(&(event.job, event.version)) {
            Some(&(t, req)) => (t, Some(req)),
            None => last,
        };
        last = (t, req);
        records.push(Record::StoreEvent {
            t,
            seq: seq as u64,
            req,
            event,
        });
    }
    let (head, mut timed): (Vec<Record>, Vec<Record>) =
        records.into_iter().partition(|r| r.time().is_none());
    timed.sort_by_key(|r| r.time().unwrap_or(0));
    let mut out = head;
    out.extend(timed);
    out.extend(rows.into_iter().map(|row| Record::Final { row }));
    out.push(Record::End { t: now, quiet });
    History { records: out }
}
