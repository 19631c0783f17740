//! The per-run registry of [`sometimes`]: the coverage of the run the
//! calling thread is simulating, installed by the runner for the length of
//! one run (the world's time, executor and network are installed the same
//! way). A BTreeMap, so what it holds never depends on hashing order.

use super::Coverage;
use std::cell::RefCell;

/// Most distinct situations [`sometimes`] records in one run; names past
/// it are not recorded (a harness naming situations from data would
/// otherwise grow the map without bound).
pub const MAX_SITUATIONS_PER_RUN: usize = 1_024;

thread_local! {
    static CURRENT: RefCell<Option<Coverage>> = const { RefCell::new(None) };
}

/// Marks that the current run reached situation `name` when `condition`
/// holds; a "sometimes" assertion: some run should reach it, none has to.
/// Call it from simulated code (a handler, or a store the simulation
/// polls on its own thread); outside a run, or from another thread (a
/// store on a driver of its own), it does nothing. It changes nothing the
/// run does, and it answers `condition`, so it can wrap a test in place.
///
/// ```
/// use leasehold_sim::coverage::sometimes;
/// let retried = true;
/// if sometimes("my-store-retried-a-deadlock", retried) {
///     // ... the retry path ...
/// }
/// ```
pub fn sometimes(name: &str, condition: bool) -> bool {
    if condition {
        CURRENT.with(|c| {
            if let Some(cov) = c.borrow_mut().as_mut() {
                if cov.holds(name) || cov.names() < MAX_SITUATIONS_PER_RUN {
                    cov.mark(name);
                }
            }
        });
    }
    condition
}

/// Records that the current run came within `distance` of situation
/// `name` (in a unit of the caller's choosing, the same at every call:
/// milliseconds to a deadline, retries short of a count, ...); the
/// smallest distance of the run is kept, and 0 marks it reached, as
/// [`sometimes`] does. A near miss is what guides `leasehold explore
/// --guided` toward a situation no run reached yet. Like [`sometimes`],
/// it records nothing outside a run or from another thread, changes
/// nothing the run does, and answers whether it reached the situation.
///
/// ```
/// use leasehold_sim::coverage::nearly;
/// let (deadline_ms, answered_ms) = (1_000u64, 985u64);
/// // Reached when the answer came within 10 ms of the deadline.
/// let reached = nearly(
///     "my-answer-at-the-deadline",
///     deadline_ms.saturating_sub(answered_ms).saturating_sub(10),
/// );
/// assert!(!reached, "missed by 5 ms");
/// ```
pub fn nearly(name: &str, distance: u64) -> bool {
    CURRENT.with(|c| {
        if let Some(cov) = c.borrow_mut().as_mut() {
            if cov.holds(name) || cov.names() < MAX_SITUATIONS_PER_RUN {
                cov.near_miss(name, distance);
            }
        }
    });
    distance == 0
}

/// A run's registry, installed on this thread until [`Entered::finish`]
/// or drop (which puts back whatever was installed before).
pub(crate) struct Entered {
    prev: Option<Option<Coverage>>,
}

/// Installs a fresh registry for one run on this thread.
pub(crate) fn enter() -> Entered {
    let prev = CURRENT.with(|c| c.replace(Some(Coverage::default())));
    Entered { prev: Some(prev) }
}

impl Entered {
    /// What the run marked; the previous registry is back.
    pub(crate) fn finish(mut self) -> Coverage {
        let prev = self.prev.take().unwrap_or_default();
        CURRENT.with(|c| c.replace(prev)).unwrap_or_default()
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        if let Some(prev) = self.prev.take() {
            CURRENT.with(|c| c.replace(prev));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_only_inside_a_run_and_only_when_the_condition_holds() {
        assert!(sometimes("outside", true), "answers its condition");
        let run = enter();
        assert!(!sometimes("never", false));
        sometimes("twice", true);
        sometimes("twice", true);
        let inner = enter();
        sometimes("inner", true);
        assert_eq!(inner.finish().times("inner"), 1);
        let got = run.finish();
        assert_eq!(got.times("twice"), 2);
        assert!(!got.reached("never") && !got.reached("inner") && !got.reached("outside"));
        let after = enter().finish();
        assert!(after.is_empty(), "a new run starts empty");
    }

    #[test]
    fn a_near_miss_keeps_its_smallest_distance_and_zero_is_a_reach() {
        assert!(!nearly("outside", 3), "answers whether it reached");
        let run = enter();
        assert!(!nearly("close", 40));
        assert!(!nearly("close", 7));
        assert!(!nearly("close", 90));
        assert!(nearly("hit", 0));
        nearly("hit-later", 5);
        sometimes("hit-later", true);
        let got = run.finish();
        assert_eq!(got.distance("close"), Some(7), "the smallest miss");
        assert!(!got.reached("close"));
        assert_eq!(got.times("hit"), 1, "a distance of 0 is a reach");
        assert_eq!(got.distance("hit"), Some(0));
        assert_eq!(got.distance("hit-later"), Some(0), "reached: 0");
        assert_eq!(got.distance("never"), None);
        let misses: Vec<_> = got.misses().collect();
        assert_eq!(misses, vec![("close", 7)], "misses leave out the reached");
        // Merged, the smaller distance and the reach win.
        let mut other = Coverage::default();
        other.near_miss("close", 3);
        other.near_miss("hit", 9);
        let mut all = got.clone();
        all.merge(&other);
        assert_eq!(all.distance("close"), Some(3));
        assert_eq!(all.distance("hit"), Some(0));
        // The counts alone are serialized: a report's `coverage` is unchanged.
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            r#"{"hit":1,"hit-later":1}"#
        );
    }

    #[test]
    fn distinct_names_are_bounded() {
        let run = enter();
        for i in 0..MAX_SITUATIONS_PER_RUN + 10 {
            sometimes(&format!("s{i}"), true);
        }
        sometimes("s0", true);
        let got = run.finish();
        assert_eq!(got.len(), MAX_SITUATIONS_PER_RUN);
        assert_eq!(got.times("s0"), 2, "a known name still counts");
    }
}
