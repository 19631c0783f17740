//! When a finished lease's release is sent again, and when it gives up: a
//! pure machine the lease task drives (see [`super::lease_machine`]).
//!
//! Invariants:
//! - a release is retried only while its outcome is unknown (or it met a
//!   conflict, which applied nothing), with the same outcome, so a repeat
//!   is idempotent;
//! - it is never given up on a transient answer while the lease is kept
//!   (its heartbeat still renews it): a conflict or an unknown outcome
//!   explains no reclaim and must not lose the result (the brief's
//!   "transient errors never become crash reports or lost results"). Past
//!   `release_tries` tries it goes on at the renew interval until the
//!   heartbeat stops (the lease fenced, lost or at its renew bound), and
//!   then gives up at the next transient answer; the heartbeat's own bound
//!   (`MAX_RENEWS_PER_LEASE`) so bounds the tries too;
//! - the wait between two tries doubles from `release_retry_delay` up to
//!   the renew interval;
//! - the try count stops at `release_tries`, so the machine's state stays
//!   finite however long the lease is kept (the exhaustive checker visits
//!   every state once).

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
    /// Outcome unknown (or a conflict), every try spent and the lease no
    /// longer kept: give up.
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

    /// The try in progress, from 1; tries past `release_tries` count as the
    /// last.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The try in progress was answered with `answer`; `lease_kept` says
    /// whether the lease's heartbeat still renews it (see the module docs).
    pub fn on_answer(
        &mut self,
        answer: &Result<Release, StoreError>,
        lease_kept: bool,
    ) -> ReleaseStep {
        match answer {
            Ok(a) => ReleaseStep::Answered(*a),
            Err(e) if worth_retrying(e, self.retry_conflicts) => {
                if self.attempt >= self.tries && !lease_kept {
                    return ReleaseStep::GiveUp;
                }
                let wait = self.delay;
                self.delay = Millis(self.delay.0.saturating_mul(2)).min(self.renew_interval);
                self.attempt = (self.attempt + 1).min(self.tries);
                debug_assert!(self.attempt <= self.tries && self.delay <= self.renew_interval);
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
            r.on_answer(&unknown(), false),
            ReleaseStep::RetryAfter(Millis(1_000))
        );
        assert_eq!(
            r.on_answer(&unknown(), false),
            ReleaseStep::RetryAfter(Millis(2_000))
        );
        assert_eq!(
            r.on_answer(&unknown(), false),
            ReleaseStep::RetryAfter(Millis(3_000))
        );
        assert_eq!(r.attempt(), 4);
        assert_eq!(r.on_answer(&unknown(), false), ReleaseStep::GiveUp);
    }

    #[test]
    fn transient_answers_are_never_given_up_while_the_lease_is_kept() {
        // The sweep's finding (seeds 1001479, 1001627 and 1003331 of
        // `conflicts_on_every_write_are_retried_and_apply_nothing`): ten
        // conflicts in a row gave a renewed lease up, and the job ran again.
        let conflict = Err(StoreError::Conflict(crate::ids::JobId(1)));
        let mut r = ReleaseRetries::new(&cfg(2));
        for wait in [1_000, 2_000, 3_000, 3_000, 3_000] {
            assert_eq!(
                r.on_answer(&conflict, true),
                ReleaseStep::RetryAfter(Millis(wait))
            );
        }
        assert_eq!(r.attempt(), 2, "the count stops at the last try");
        assert_eq!(
            r.on_answer(&unknown(), true),
            ReleaseStep::RetryAfter(Millis(3_000))
        );
        assert_eq!(
            r.on_answer(&Ok(Release::Committed), true),
            ReleaseStep::Answered(Release::Committed),
            "still answered after the tries are spent"
        );
        let mut r = ReleaseRetries::new(&cfg(2));
        assert_eq!(
            r.on_answer(&conflict, true),
            ReleaseStep::RetryAfter(Millis(1_000))
        );
        assert_eq!(
            r.on_answer(&conflict, false),
            ReleaseStep::GiveUp,
            "the heartbeat stopped: the lease is no longer kept"
        );
    }

    #[test]
    fn an_answer_or_a_rejection_ends_the_tries() {
        let mut r = ReleaseRetries::new(&cfg(3));
        assert_eq!(
            r.on_answer(&Err(StoreError::Conflict(crate::ids::JobId(1))), true),
            ReleaseStep::RetryAfter(Millis(1_000)),
            "a conflict applied nothing: sent again"
        );
        assert_eq!(
            r.on_answer(&Ok(Release::Lost), true),
            ReleaseStep::Answered(Release::Lost)
        );
        let mut r = ReleaseRetries::new(&cfg(3));
        assert_eq!(
            r.on_answer(&Err(StoreError::Corrupt("x".into())), true),
            ReleaseStep::Rejected
        );
    }
}
