//! A release applied to a job's current row, as both SQL stores apply
//! the releases of one transaction in order: the core decides
//! ([`transition::release`]); this keeps the row and answers.

use leasehold_core::transition::{self, ReleasePlan};
use leasehold_core::{Event, JobRecord, Policy, Release, ReleaseRequest, StoreError, StoreTime};

/// The answers to many releases: each its own, or its own input error.
pub type ReleaseAnswers = Vec<Result<Release, StoreError>>;

/// What release `req` answers on `row`, the job's current row at store
/// time `now`. An accepted release changes `row` in place and hands its
/// audit event to `log`; a repeat of it answers `Committed` again and
/// changes nothing.
pub fn apply_release(
    row: &mut JobRecord,
    req: &ReleaseRequest,
    policy: &Policy,
    now: StoreTime,
    log: impl FnOnce(Event),
) -> Result<Release, StoreError> {
    match transition::release(row, req.token, &req.outcome, policy, now) {
        Ok(ReleasePlan::Apply(a)) => {
            *row = a.record;
            log(a.event);
            Ok(Release::Committed)
        }
        Ok(ReleasePlan::Repeat) => Ok(Release::Committed),
        Ok(ReleasePlan::Lost) => Ok(Release::Lost),
        Err(e) => Err(StoreError::Input(e)),
    }
}
