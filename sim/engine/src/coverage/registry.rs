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
                if cov.reached(name) || cov.len() < MAX_SITUATIONS_PER_RUN {
                    cov.mark(name);
                }
            }
        });
    }
    condition
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
