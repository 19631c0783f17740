//! `--run-timeout`: the wall-clock limit of one simulation run.
//!
//! A scenario's `duration` may be days of simulated time, and a store may
//! be slow; without a limit such a run prints nothing for hours. A run that
//! hits the limit is stopped between two steps and reported as an error
//! (exit status 2), never as a pass. The limit only aborts: it is read
//! outside the simulation and cannot change a history.

use leasehold_model::duration::Dur;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Default wall-clock limit of one run: far above any seed of the
/// scenario library (under 2 s on memory, well under a minute on
/// PostgreSQL), far below "forever".
pub const DEFAULT_RUN_TIMEOUT: RunTimeout = RunTimeout(Dur::secs(600));

/// A wall-clock limit, written like a scenario duration (`90s`, `10m`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunTimeout(pub Dur);

impl RunTimeout {
    /// As a standard duration.
    pub fn as_duration(self) -> Duration {
        Duration::from_millis(self.0.as_ms())
    }
}

impl FromStr for RunTimeout {
    type Err = String;
    fn from_str(s: &str) -> Result<RunTimeout, String> {
        let d: Dur = s.parse().map_err(|e| format!("{e}"))?;
        if d.as_ms() == 0 {
            return Err("the run timeout must be greater than zero".into());
        }
        Ok(RunTimeout(d))
    }
}

impl fmt::Display for RunTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_durations_and_refuses_zero_and_bare_numbers() {
        assert_eq!("90s".parse(), Ok(RunTimeout(Dur::secs(90))));
        assert_eq!(
            DEFAULT_RUN_TIMEOUT.to_string().parse(),
            Ok(DEFAULT_RUN_TIMEOUT)
        );
        assert!("0s".parse::<RunTimeout>().is_err());
        assert!("30".parse::<RunTimeout>().unwrap_err().contains("unit"));
    }
}
