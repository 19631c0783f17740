//! Assembling the final history of a run.

use super::store_view;
use crate::history::{History, Record};
use crate::hosts::Shared;

/// Builds the final history: the recorded records in true-time order, the
/// store's events placed at the true time of the request that committed
/// them, the final rows, and the end marker.
pub(super) fn collect(shared: &Shared, now: u64, quiet: bool) -> History {
    let mut records = shared.take_records();
    let anchors = shared.take_anchors();
    let view = store_view(shared);
    let mut last = (0u64, None);
    for (seq, event) in view.events().into_iter().enumerate() {
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
    out.extend(view.rows().into_iter().map(|row| Record::Final { row }));
    out.push(Record::End { t: now, quiet });
    History { records: out }
}
