//! Store time and durations, as integer milliseconds.
//!
//! [`StoreTime`] is a reading of the store's wall clock: the only clock that
//! decides lease validity (`expires_at`, `run_at`, sweeping). Workers never
//! send absolute timestamps; they send durations ([`Millis`]).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A duration in whole milliseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Millis(pub u64);

impl Millis {
    /// Zero milliseconds.
    pub const ZERO: Millis = Millis(0);

    /// `n` seconds.
    pub const fn from_secs(n: u64) -> Millis {
        Millis(n * 1000)
    }

    /// The duration as a `std::time::Duration` (for sleeping in runtimes).
    pub fn to_std(self) -> std::time::Duration {
        std::time::Duration::from_millis(self.0)
    }

    /// Saturating addition.
    pub fn saturating_add(self, other: Millis) -> Millis {
        Millis(self.0.saturating_add(other.0))
    }

    /// Saturating subtraction.
    pub fn saturating_sub(self, other: Millis) -> Millis {
        Millis(self.0.saturating_sub(other.0))
    }
}

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0)
    }
}

/// A reading of the store's clock: milliseconds since the Unix epoch.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct StoreTime(pub i64);

impl StoreTime {
    /// This instant plus a duration, saturating at the end of time.
    pub fn plus(self, d: Millis) -> StoreTime {
        let add = i64::try_from(d.0).unwrap_or(i64::MAX);
        StoreTime(self.0.saturating_add(add))
    }

    /// Milliseconds from `earlier` to `self`, zero if `earlier` is later.
    pub fn since(self, earlier: StoreTime) -> Millis {
        Millis(u64::try_from(self.0.saturating_sub(earlier.0)).unwrap_or(0))
    }
}

impl fmt::Display for StoreTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{}ms", self.0)
    }
}

#[cfg(test)]
mod display_tests {
    use super::*;

    #[test]
    fn a_store_time_displays_in_milliseconds() {
        assert_eq!(StoreTime(1_500).to_string(), "@1500ms");
        assert_eq!(StoreTime(-2).to_string(), "@-2ms");
    }

    #[test]
    fn seconds_are_a_thousand_milliseconds() {
        assert_eq!(Millis::from_secs(0), Millis::ZERO);
        assert_eq!(Millis::from_secs(3), Millis(3_000));
    }
}
