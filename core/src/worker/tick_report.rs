//! What one scheduler tick did: the [`super::Scheduler`]'s answer, and
//! what its metrics record.

use crate::ids::JobId;
use crate::time::StoreTime;

/// What one tick did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TickReport {
    /// The store time the tick judged by.
    pub now: Option<StoreTime>,
    /// Plan times fired with a definite answer: (schedule, plan time, job).
    pub fired: Vec<(String, StoreTime, JobId)>,
    /// Fires whose outcome was unknown (retried next tick).
    pub unknown: u32,
    /// Fires the store refused (the schedule was removed or replaced meanwhile).
    pub refused: u32,
}
