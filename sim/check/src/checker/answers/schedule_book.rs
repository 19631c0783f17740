//! The reference model's schedules as state: what the model holds of the
//! store's schedules, the change an agreeing answer makes, and the names
//! and limits spec §3 "Schedules" sets. Its own file so that the model
//! (which holds this state) and `schedules` (which plans the schedule
//! operations over the model) each depend on it, not on each other.

use leasehold_core::StoreTime;
use leasehold_model::history::ScheduleView;
use std::collections::BTreeMap;

/// Keys of fires live under this prefix; an enqueue may not use it.
pub(crate) const FIRE_KEY_PREFIX: &str = "leasehold:schedule:";
/// Longest schedule name, bytes.
pub(super) const MAX_NAME: usize = 128;
/// Largest catch-up bound.
pub(super) const MAX_CATCH_UP: u32 = 1000;
/// Largest jitter, ms.
pub(super) const MAX_JITTER_MS: u64 = 3_600_000;

/// The key of the job of `name`'s `plan_time`.
pub(crate) fn fire_key(name: &str, plan_time: StoreTime) -> String {
    format!("{FIRE_KEY_PREFIX}{name}@{}", plan_time.0)
}

/// The schedule and plan time a fire's key names, if it is one.
pub(crate) fn parse_fire_key(key: &str) -> Option<(&str, StoreTime)> {
    let (name, t) = key.strip_prefix(FIRE_KEY_PREFIX)?.rsplit_once('@')?;
    Some((name, StoreTime(t.parse().ok()?)))
}

/// The model's schedules.
#[derive(Clone, Debug, Default)]
pub(crate) struct Schedules {
    /// By name.
    pub by_name: BTreeMap<String, ScheduleView>,
    /// The model lost track (an answer it could not judge or that differed).
    pub blind: bool,
    /// Per schedule name, the latest plan time whose job the store pruned
    /// (spec §3 "Retention": a fire at or before it with no job is
    /// refused). Kept across removals, as the store keeps it.
    pub pruned_through: BTreeMap<String, StoreTime>,
    /// The same for prunes of unknown outcome: a fire at or before it with
    /// no job is not judged.
    pub maybe_through: BTreeMap<String, StoreTime>,
}

/// Raises `marks[name]` to at least `t`.
pub(crate) fn raise(marks: &mut BTreeMap<String, StoreTime>, name: &str, t: StoreTime) {
    let m = marks.entry(name.to_string()).or_insert(t);
    *m = (*m).max(t);
}

/// A change to the schedules an agreeing answer makes.
#[derive(Clone, Debug)]
pub(crate) enum SchedChange {
    /// Stored as this.
    Put(ScheduleView),
    /// Removed.
    Remove(String),
}

/// Whether a schedule name is acceptable: non-empty, bounded, no control
/// or whitespace characters (spec §3).
pub(super) fn name_ok(n: &str) -> bool {
    !n.is_empty() && n.len() <= MAX_NAME && !n.chars().any(|c| c.is_control() || c.is_whitespace())
}
