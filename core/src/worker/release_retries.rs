//! When a finished lease's release is sent again, and when it gives up: a
//! pure machine the lease task drives (see [`super::lease_machine`]).
//!
//! Invariants:
//! - a release is retried only while its outcome is unknown (or it met a
//!   conflict, which applied nothing), with the same outcome, so a repeat
//!   is idempotent;
//! - at most `release_tries` tries; the wait between two doubles from
//!   `release_retry_delay` up to the renew interval.

use super::config::WorkerConfig;
use super::quirks::{worth_retrying, Quirks};
use crate::error::StoreError;
use crate::job::Release;
use crate::time::Millis;

/// What to do after a try's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseStep {
    /// The store answered: done.
    Answered(Release),
    /// Outcome unknown (or a conflict): wait this long, then try again.
    RetryAfter(Millis),
    /// Outcome unknown and every try spent: give up.
    GiveUp,
    /// A definite rejection: give up.
    Rejected,
}

/// The tries of one release (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReleaseRetries {
    tries: u32,
    attempt: u32,
    delay: Millis,
    renew_interval: Millis,
    retry_conflicts: bool,
}

impl ReleaseRetries {
    /// The first try of a release under `cfg`.
    pub fn new(cfg: &WorkerConfig) -> Self {
        ReleaseRetries {
            tries: cfg.release_tries,
            attempt: 1,
            delay: cfg.release_retry_delay,
            renew_interval: cfg.renew_interval,
            retry_conflicts: Quirks::of(cfg).retry_conflicts,
        }
    }

    /// The try in progress, from 1.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The try in progress was answered with `answer`.
    pub fn on_answer(&mut self, answer: &Result<Release, StoreError>) -> ReleaseStep {
        match answer {
            Ok(a) => ReleaseStep::Answered(*a),
            Err(e) if worth_retrying(e, self.retry_conflicts) => {
                if self.attempt >= self.tries {
                    return ReleaseStep::GiveUp;
                }
                let wait = self.delay;
                self.delay = Millis(self.delay.0.saturating_mul(2)).min(self.renew_interval);
                self.attempt += 1;
                ReleaseStep::RetryAfter(wait)
            }
            Err(_) => ReleaseStep::Rejected,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(tries: u32) -> WorkerConfig {
        WorkerConfig::builder("w", "q")
            .renew_interval(Millis(3_000))
            .release_tries(tries)
            .release_retry_delay(Millis(1_000))
            .build()
            .expect("config")
    }

    fn unknown() -> Result<Release, StoreError> {
        Err(StoreError::Unavailable("lost".into()))
    }

    #[test]
    fn unknown_outcomes_are_retried_with_doubling_waits_up_to_the_interval() {
        let mut r = ReleaseRetries::new(&cfg(4));
        assert_eq!(
            r.on_answer(&unknown()),
            ReleaseStep::RetryAfter(Millis(1_000))
        );
        assert_eq!(
            r.on_answer(&unknown()),
            ReleaseStep::RetryAfter(Millis(2_000))
        );
        assert_eq!(
            r.on_answer(&unknown()),
            ReleaseStep::RetryAfter(Millis(3_000))
        );
        assert_eq!(r.attempt(), 4);
        assert_eq!(r.on_answer(&unknown()), ReleaseStep::GiveUp);
    }

    #[test]
    fn an_answer_or_a_rejection_ends_the_tries() {
        let mut r = ReleaseRetries::new(&cfg(3));
        assert_eq!(
            r.on_answer(&Err(StoreError::Conflict(crate::ids::JobId(1)))),
            ReleaseStep::RetryAfter(Millis(1_000)),
            "a conflict applied nothing: sent again"
        );
        assert_eq!(
            r.on_answer(&Ok(Release::Lost)),
            ReleaseStep::Answered(Release::Lost)
        );
        let mut r = ReleaseRetries::new(&cfg(3));
        assert_eq!(
            r.on_answer(&Err(StoreError::Corrupt("x".into()))),
            ReleaseStep::Rejected
        );
    }
}
