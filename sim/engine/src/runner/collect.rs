//! Assembling the final history of a run.

use crate::machine::recorder::Recorder;
use leasehold_core::{Event, JobRecord};
use leasehold_model::config::SimConfig;
use leasehold_model::history::History;

/// A store event with the true time and request that committed it.
type Placed = (u64, Option<u64>, Event);

/// Builds the final history: the recorded records in true-time order, the
/// store's events placed at the true time of the request that committed
/// them, the final rows, and the end marker.
///
/// A store that keeps no audit log (`events` is `None`, as for most users'
/// own stores) gets the transitions the checker's reference model derives
/// from the store's answers instead; the answers themselves are judged
/// against that model (I11), so nothing the store did goes unexamined.
pub(super) fn collect(
    recorder: &Recorder,
    cfg: &SimConfig,
    now: u64,
    quiet: bool,
    rows: Vec<JobRecord>,
    events: Option<Vec<Event>>,
) -> History {
    let records = recorder.take_records();
    let anchors = recorder.take_anchors();
    let placed: Vec<Placed> = match events {
        Some(events) => {
            let mut last = (0u64, None);
            events
                .into_iter()
                .map(|event| {
                    let (t, req) = match anchors.get(&(event.job, event.version)) {
                        Some(&(t, req)) => (t, Some(req)),
                        None => last,
                    };
                    last = (t, req);
                    (t, req, event)
                })
                .collect()
        }
        None => {
            let bare = History::assemble(records.clone(), Vec::new(), Vec::new(), now, quiet);
            let mut last = 0u64;
            leasehold_check::checker::answers::model_events(&bare, cfg)
                .into_iter()
                .map(|(t, req, event)| {
                    let t = t.unwrap_or(last);
                    last = t;
                    (t, req, event)
                })
                .collect()
        }
    };
    History::assemble(records, placed, rows, now, quiet)
}
