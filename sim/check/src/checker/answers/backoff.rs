//! The retry window: the one free choice a correct store makes.
//!
//! After a retryable failure with budget left, the protocol lets the store
//! pick `run_at = now + delay` for any delay in a window around the
//! exponential backoff of the failed attempt. The model does not reproduce
//! the store's jitter (that would share its hash); it only knows the window
//! and learns the actual `run_at` from the row image.

use leasehold_core::{StoreTime, DEFAULT_JITTER_PERMILLE};

/// Backoff parameters of a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Backoff {
    /// Delay of the first retry, ms.
    pub base: u64,
    /// Largest delay, ms.
    pub cap: u64,
    /// Jitter span in thousandths of the raw delay.
    pub jitter_permille: u64,
}

impl Backoff {
    /// The backoff of a scenario with the core's default jitter.
    pub fn new(base: u64, cap: u64) -> Self {
        Backoff {
            base,
            cap,
            jitter_permille: u64::from(DEFAULT_JITTER_PERMILLE),
        }
    }

    /// The allowed delays after attempt `attempt` (1-based) failed, both
    /// ends inclusive: `raw = min(base·2^(attempt−1), cap)`,
    /// `span = raw·jitter/1000`, delay in `[raw − span, min(raw + span, cap)]`.
    pub fn delays(&self, attempt: u32) -> (u64, u64) {
        let doublings = attempt.saturating_sub(1);
        // u128 and a shift below 128 so a large attempt saturates at the
        // cap instead of overflowing.
        let raw = if doublings >= 64 {
            self.cap
        } else {
            (u128::from(self.base) << doublings).min(u128::from(self.cap)) as u64
        };
        let span = (u128::from(raw) * u128::from(self.jitter_permille) / 1000) as u64;
        let lo = raw - span.min(raw);
        let hi = raw.saturating_add(span).min(self.cap);
        (lo, hi.max(lo))
    }

    /// The allowed `run_at` after attempt `attempt` failed at `now`.
    pub fn window(&self, now: StoreTime, attempt: u32) -> (StoreTime, StoreTime) {
        let (lo, hi) = self.delays(attempt);
        (later(now, lo), later(now, hi))
    }
}

/// `t + ms`, saturating.
pub(crate) fn later(t: StoreTime, ms: u64) -> StoreTime {
    StoreTime(t.0.saturating_add(i64::try_from(ms).unwrap_or(i64::MAX)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The backoff of `base` and `cap` with `jitter_permille` instead of
    /// the default jitter.
    fn jittered(base: u64, cap: u64, jitter_permille: u64) -> Backoff {
        Backoff {
            jitter_permille,
            ..Backoff::new(base, cap)
        }
    }

    #[test]
    fn window_doubles_per_attempt_with_jitter_and_stops_at_the_cap() {
        let b = jittered(1000, 10_000, 200);
        assert_eq!(b.delays(1), (800, 1200));
        assert_eq!(b.delays(2), (1600, 2400));
        assert_eq!(b.delays(3), (3200, 4800));
        assert_eq!(b.delays(4), (6400, 9600));
        // 16000 is capped to 10000; the upper end never passes the cap.
        assert_eq!(b.delays(5), (8000, 10_000));
        assert_eq!(b.delays(200), (8000, 10_000));
        assert_eq!(b.delays(u32::MAX), (8000, 10_000));
        // attempt 0 cannot fail, but is treated like the first.
        assert_eq!(b.delays(0), (800, 1200));
    }

    #[test]
    fn window_is_relative_to_now() {
        let b = Backoff::new(1000, 60_000);
        let (lo, hi) = b.window(StoreTime(5_000), 1);
        let span = 1000 * u64::from(DEFAULT_JITTER_PERMILLE) / 1000;
        assert_eq!(lo, StoreTime(5_000 + 1000 - span as i64));
        assert_eq!(hi, StoreTime(5_000 + 1000 + span as i64));
    }

    #[test]
    fn no_jitter_is_a_single_point() {
        let b = jittered(500, 500, 0);
        assert_eq!(b.delays(3), (500, 500));
    }
}
