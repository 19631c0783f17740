//! One lease's decisions as a pure state machine: when to renew, when a
//! renew's answer moves the fence, when to stop the handler, and the
//! heartbeat that goes on while the release is retried.
//!
//! Sans-IO, as quinn-proto is to quinn: the machine never reads a clock,
//! sleeps, spawns or talks to a store. Its inputs are the local monotonic
//! clock's reading at a timer firing ([`LeaseMachine::poll`],
//! [`LeaseMachine::heartbeat_poll`]), renew answers, "shutdown requested"
//! and "the handler finished"; its outputs are a renew to send, the instant
//! to be woken at, and the stop signal for the handler. The worker's lease
//! task (`lease_task.rs`) drives it with real time and a real store; the
//! exhaustive checker drives the very same machine over every interleaving
//! of a small world.
//!
//! Invariants:
//! - the belief deadline moves only on a successful renew, computed from
//!   that renew's send time, and never backwards ([`Fence`]);
//! - at most one renew is in flight, and at most [`MAX_RENEWS_PER_LEASE`]
//!   are sent in all;
//! - a renew whose outcome is unknown never stops the heartbeat: only
//!   `Lost`, a definite rejection or the fence deadline end it. The retry
//!   comes after half the renew interval, but no later than halfway to the
//!   belief deadline and no sooner than [`MIN_RENEW_RETRY`]
//!   ([`renew_retry_at`]);
//! - while the release is retried the heartbeat goes on: its renews keep
//!   the lease but stop at the fence deadline, as the running loop would.

use super::config::{WorkerConfig, MAX_RENEWS_PER_LEASE};
use super::fence::Fence;
use super::handler::{HandlerError, StopReason};
use super::observer::BeliefEnd;
use super::quirks::{worth_retrying, Quirks};
use crate::error::StoreError;
use crate::job::{Outcome, Renewal};
use crate::time::{Millis, StoreTime};

/// Shortest wait before retrying a renew whose outcome was unknown: a store
/// that refuses at once is not hammered as the deadline nears (the renew
/// count is bounded by `MAX_RENEWS_PER_LEASE` as well).
pub const MIN_RENEW_RETRY: Millis = Millis(100);

/// When to retry a renew whose outcome was unknown at local time `now`,
/// with belief deadline `deadline`: after half the renew `interval`, or
/// halfway to the deadline if that is sooner, but never sooner than
/// [`MIN_RENEW_RETRY`].
pub fn renew_retry_at(now: Millis, deadline: Millis, interval: Millis) -> Millis {
    let half_left = deadline.saturating_sub(now).0 / 2;
    let wait = (interval.0 / 2).min(half_left).max(MIN_RENEW_RETRY.0);
    now.saturating_add(Millis(wait))
}

/// What a handler's result is released as, given the soft stop it was
/// asked for (a cancel or a shutdown turns an error into an acknowledgement).
pub fn outcome_of(result: Result<Vec<u8>, HandlerError>, soft: Option<StopReason>) -> Outcome {
    match (result, soft) {
        (Ok(r), _) => Outcome::Succeeded(r),
        (Err(_), Some(StopReason::Cancel)) => Outcome::Cancelled,
        (Err(_), Some(StopReason::Shutdown)) => Outcome::Returned,
        (Err(e), _) => Outcome::Failed {
            error: e.message,
            retryable: e.retryable,
        },
    }
}

/// How the running phase of a lease ended, other than by its handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ended {
    /// The belief is over (fenced, lost, rejected): stop the handler with
    /// [`Ended::stop_reason`] and release nothing.
    Abandoned(BeliefEnd),
    /// The renew bound was reached: stop the handler as fenced.
    RenewBound,
    /// The grace after a soft stop ran out: drop the handler and release
    /// `Cancelled` ([`BeliefEnd::CancelTimeout`]) or `Returned`
    /// ([`BeliefEnd::ShutdownTimeout`]).
    GraceOut(BeliefEnd),
}

impl Ended {
    /// Why the belief ended.
    pub fn belief_end(self) -> BeliefEnd {
        match self {
            Ended::Abandoned(why) | Ended::GraceOut(why) => why,
            Ended::RenewBound => BeliefEnd::Fenced,
        }
    }

    /// The signal sent to the handler as it is dropped (none when the
    /// grace ran out: it was told already).
    pub fn stop_reason(self) -> Option<StopReason> {
        match self {
            Ended::Abandoned(BeliefEnd::Lost) => Some(StopReason::Lost),
            Ended::Abandoned(_) | Ended::RenewBound => Some(StopReason::Fenced),
            Ended::GraceOut(_) => None,
        }
    }

    /// What is released after a grace ran out (`None`: nothing is).
    pub fn released(self) -> Option<Outcome> {
        match self {
            Ended::GraceOut(BeliefEnd::CancelTimeout) => Some(Outcome::Cancelled),
            Ended::GraceOut(_) => Some(Outcome::Returned),
            _ => None,
        }
    }
}

/// What to do after a timer fired or a new input arrived, in this order:
/// signal the handler, end the running phase, send a renew, sleep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Poll {
    /// A soft stop to signal to the handler (it keeps running).
    pub signal: Option<StopReason>,
    /// The running phase is over.
    pub end: Option<Ended>,
    /// Send a renew now.
    pub send_renew: bool,
    /// The local instant to be woken at if nothing else happens first.
    pub wake: Millis,
}

/// What a renew's answer did to the running lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Renewed {
    /// The belief now lasts until `believe_until`; `cancel` when a cancel
    /// was requested and is now signalled to the handler.
    Extended {
        /// Local belief deadline.
        believe_until: Millis,
        /// A soft stop (`Cancel`) signalled with this answer.
        cancel: bool,
    },
    /// `Lost`, and the handler keeps running (a buggy variant).
    LostIgnored,
    /// Not applied or outcome unknown: the heartbeat goes on.
    Unavailable,
    /// The running phase ends ([`Ended::Abandoned`] as lost).
    Ended(Ended),
}

/// What the heartbeat of a releasing lease does next, with no renew in
/// flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HeartbeatPoll {
    /// The heartbeat is over (nothing due, bound reached, or fenced).
    Stop,
    /// Sleep until this local instant, then poll again.
    SleepUntil(Millis),
    /// Send a renew now.
    SendRenew,
}

/// One lease's decisions (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LeaseMachine {
    quirks: Quirks,
    renew_interval: Millis,
    grace: Millis,
    fence: Fence,
    next_renew: Millis,
    /// Local send time of the renew in flight.
    renew_sent: Option<Millis>,
    soft: Option<(StopReason, Millis)>,
    shutdown_seen: bool,
    renews: u64,
}

impl LeaseMachine {
    /// The machine of a lease granted to a claim sent at local time
    /// `t_send`, started at local time `now` with wall clock `wall`; the
    /// store said it expires at `expires_at` (read only by a buggy variant).
    pub fn new(
        cfg: &WorkerConfig,
        t_send: Millis,
        now: Millis,
        wall: StoreTime,
        expires_at: StoreTime,
    ) -> Self {
        let quirks = Quirks::of(cfg);
        let fence = if quirks.wall_deadline {
            Fence::new(now, expires_at.since(wall))
        } else if quirks.fence {
            Fence::new(t_send, cfg.safe_lease)
        } else {
            Fence::new(Millis(u64::MAX), Millis::ZERO)
        };
        let next_renew = if quirks.heartbeat {
            t_send.saturating_add(cfg.renew_interval)
        } else {
            Millis(u64::MAX)
        };
        LeaseMachine {
            quirks,
            renew_interval: cfg.renew_interval,
            grace: cfg.grace,
            fence,
            next_renew,
            renew_sent: None,
            soft: None,
            shutdown_seen: false,
            renews: 0,
        }
    }

    /// The local instant at which the belief ends.
    pub fn believe_until(&self) -> Millis {
        self.fence.poll_deadline()
    }

    /// Whether the belief has ended at local time `now`: the handler must
    /// not be polled.
    pub fn is_fenced(&self, now: Millis) -> bool {
        self.fence.is_expired(now)
    }

    /// Local send time of the renew in flight.
    pub fn renew_sent(&self) -> Option<Millis> {
        self.renew_sent
    }

    /// The soft stop signalled to the handler, if any.
    pub fn soft_stop(&self) -> Option<StopReason> {
        self.soft.map(|s| s.0)
    }

    /// Whether a shutdown request has been seen.
    pub fn shutdown_seen(&self) -> bool {
        self.shutdown_seen
    }

    /// Renews sent so far.
    pub fn renews(&self) -> u64 {
        self.renews
    }

    /// The worker's shutdown was requested (acted on at the next poll).
    pub fn on_shutdown(&mut self) {
        self.shutdown_seen = true;
    }

    /// The running phase at local time `now`: see [`Poll`].
    pub fn poll(&mut self, now: Millis) -> Poll {
        let mut p = Poll {
            signal: None,
            end: None,
            send_renew: false,
            wake: Millis(u64::MAX),
        };
        if self.fence.is_expired(now) {
            p.end = Some(Ended::Abandoned(BeliefEnd::Fenced));
            return p;
        }
        if self.shutdown_seen && self.soft.is_none() {
            p.signal = Some(StopReason::Shutdown);
            self.soft = Some((StopReason::Shutdown, now.saturating_add(self.grace)));
        }
        if let Some((reason, until)) = self.soft {
            if now >= until {
                p.end = Some(Ended::GraceOut(match reason {
                    StopReason::Cancel => BeliefEnd::CancelTimeout,
                    _ => BeliefEnd::ShutdownTimeout,
                }));
                return p;
            }
        }
        if self.renew_sent.is_none() && now >= self.next_renew {
            if self.renews >= MAX_RENEWS_PER_LEASE {
                p.end = Some(Ended::RenewBound);
                return p;
            }
            self.renews += 1;
            self.renew_sent = Some(now);
            p.send_renew = true;
        }
        let mut wake = self.fence.poll_deadline();
        if self.renew_sent.is_none() {
            wake = wake.min(self.next_renew);
        }
        if let Some((_, until)) = self.soft {
            wake = wake.min(until);
        }
        p.wake = wake;
        p
    }

    /// The renew in flight was answered at local time `now` (wall clock
    /// `wall`) while the handler runs.
    pub fn on_renew_answer(
        &mut self,
        now: Millis,
        wall: StoreTime,
        answer: &Result<Renewal, StoreError>,
    ) -> Renewed {
        let sent = self.renew_sent.take().unwrap_or(now);
        match answer {
            Ok(Renewal::Renewed {
                cancel_requested,
                expires_at,
            }) => {
                if self.quirks.wall_deadline {
                    self.fence = Fence::new(now, expires_at.since(wall));
                } else if self.quirks.fence {
                    self.fence.handle_renewed(sent);
                }
                self.next_renew = sent.saturating_add(self.renew_interval);
                let cancel = *cancel_requested && self.soft.is_none();
                if cancel {
                    self.soft = Some((StopReason::Cancel, now.saturating_add(self.grace)));
                }
                Renewed::Extended {
                    believe_until: self.fence.poll_deadline(),
                    cancel,
                }
            }
            Ok(Renewal::Lost) if !self.quirks.stop_on_loss => {
                self.next_renew = Millis(u64::MAX);
                Renewed::LostIgnored
            }
            Ok(Renewal::Lost) => Renewed::Ended(Ended::Abandoned(BeliefEnd::Lost)),
            Err(e) if worth_retrying(e, self.quirks.retry_conflicts) => {
                self.next_renew = if self.quirks.heartbeat_survives_errors {
                    self.retry_at(now)
                } else {
                    Millis(u64::MAX)
                };
                Renewed::Unavailable
            }
            Err(_) => Renewed::Ended(Ended::Abandoned(BeliefEnd::Lost)),
        }
    }

    /// When to retry a renew that failed or whose outcome was unknown at
    /// local time `now` ([`renew_retry_at`]; a whole renew interval later
    /// under the catalogue's `renew-retry-waits-full-interval`).
    fn retry_at(&self, now: Millis) -> Millis {
        if self.quirks.retry_at_half_interval {
            renew_retry_at(now, self.fence.poll_deadline(), self.renew_interval)
        } else {
            now.saturating_add(self.renew_interval)
        }
    }

    /// The handler returned `result`: what to release.
    pub fn on_handler_done(&self, result: Result<Vec<u8>, HandlerError>) -> Outcome {
        outcome_of(result, self.soft_stop())
    }

    /// The handler is done and its release starts: the heartbeat goes on
    /// from where the running phase left off. Answers whether the renew in
    /// flight (if any) is still awaited; `false` drops it.
    pub fn start_releasing(&mut self) -> bool {
        if self.quirks.renew_while_releasing {
            true
        } else {
            self.next_renew = Millis(u64::MAX);
            self.renew_sent = None;
            false
        }
    }

    /// The releasing heartbeat at local time `now`, with no renew in flight.
    /// Past the fence no renew got through in time: the store may have let
    /// the lease go, as the running phase would have concluded.
    pub fn heartbeat_poll(&mut self, now: Millis) -> HeartbeatPoll {
        if self.next_renew == Millis(u64::MAX)
            || self.renews >= MAX_RENEWS_PER_LEASE
            || self.fence.is_expired(now)
        {
            return HeartbeatPoll::Stop;
        }
        if now < self.next_renew {
            return HeartbeatPoll::SleepUntil(self.next_renew);
        }
        self.renews += 1;
        self.renew_sent = Some(now);
        HeartbeatPoll::SendRenew
    }

    /// A renew of the releasing heartbeat was answered at local time `now`.
    /// Answers whether the heartbeat goes on. Renews sent now only keep the
    /// lease; the handler's belief ended with the handler.
    pub fn heartbeat_answer(&mut self, now: Millis, answer: &Result<Renewal, StoreError>) -> bool {
        let sent = self.renew_sent.take().unwrap_or(now);
        match answer {
            Ok(Renewal::Renewed { .. }) => {
                self.fence.handle_renewed(sent);
                self.next_renew = sent.saturating_add(self.renew_interval);
                true
            }
            Err(e)
                if self.quirks.heartbeat_survives_errors
                    && worth_retrying(e, self.quirks.retry_conflicts) =>
            {
                self.next_renew = self.retry_at(now);
                true
            }
            Ok(Renewal::Lost) | Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::JobId;

    fn cfg() -> WorkerConfig {
        WorkerConfig::builder("w", "q")
            .lease(Millis(10_000))
            .renew_interval(Millis(3_000))
            .max_drift_ppm(0)
            .fence_margin(Millis(0))
            .grace(Millis(1_000))
            .build()
            .expect("config")
    }

    fn machine() -> LeaseMachine {
        LeaseMachine::new(
            &cfg(),
            Millis(1_000),
            Millis(1_200),
            StoreTime(0),
            StoreTime(0),
        )
    }

    fn renewed() -> Result<Renewal, StoreError> {
        Ok(Renewal::Renewed {
            cancel_requested: false,
            expires_at: StoreTime(0),
        })
    }

    #[test]
    fn a_far_deadline_retries_after_half_the_interval() {
        assert_eq!(
            renew_retry_at(Millis(1_000), Millis(20_000), Millis(3_000)),
            Millis(2_500)
        );
    }

    #[test]
    fn a_near_deadline_retries_halfway_to_it_but_not_sooner_than_the_floor() {
        // The simulator's case: 1.5 s left, interval 3 s: retry at 0.75 s,
        // not at 1.5 s (a moment before the fence).
        assert_eq!(
            renew_retry_at(Millis(80_630), Millis(82_125), Millis(3_000)),
            Millis(80_630 + 747)
        );
        assert_eq!(
            renew_retry_at(Millis(10_000), Millis(10_050), Millis(3_000)),
            Millis(10_000).saturating_add(MIN_RENEW_RETRY)
        );
        assert_eq!(
            renew_retry_at(Millis(10_000), Millis(9_000), Millis(3_000)),
            Millis(10_000).saturating_add(MIN_RENEW_RETRY)
        );
    }

    /// The fence counts from the claim's send time, and the first renew is
    /// due one interval after it.
    #[test]
    fn the_first_renew_is_due_an_interval_after_the_claim_was_sent() {
        let mut m = machine();
        assert_eq!(m.believe_until(), Millis(11_000));
        let p = m.poll(Millis(1_200));
        assert!(!p.send_renew);
        assert_eq!(p.wake, Millis(4_000));
        let p = m.poll(Millis(4_000));
        assert!(p.send_renew);
        assert_eq!(p.wake, Millis(11_000), "in flight: only the fence wakes");
        assert_eq!(m.renew_sent(), Some(Millis(4_000)));
        assert!(!m.poll(Millis(4_500)).send_renew, "one renew in flight");
    }

    /// A renew's answer moves the fence from the renew's send time, not
    /// from the answer's arrival.
    #[test]
    fn a_renew_moves_the_fence_from_its_send_time() {
        let mut m = machine();
        m.poll(Millis(4_000));
        let r = m.on_renew_answer(Millis(9_000), StoreTime(0), &renewed());
        assert_eq!(
            r,
            Renewed::Extended {
                believe_until: Millis(14_000),
                cancel: false
            }
        );
        // The next renew is due an interval after the last one was sent.
        let p = m.poll(Millis(9_000));
        assert!(p.send_renew);
        assert_eq!(m.renew_sent(), Some(Millis(9_000)));
        // A late answer to an older renew never shortens the belief.
        m.on_renew_answer(Millis(9_100), StoreTime(0), &renewed());
        assert_eq!(m.believe_until(), Millis(19_000));
    }

    #[test]
    fn the_fence_deadline_abandons_the_lease() {
        let mut m = machine();
        m.poll(Millis(4_000));
        let p = m.poll(Millis(11_000));
        assert_eq!(p.end, Some(Ended::Abandoned(BeliefEnd::Fenced)));
        assert_eq!(p.end.and_then(Ended::stop_reason), Some(StopReason::Fenced));
        assert!(m.is_fenced(Millis(11_000)));
        assert!(!m.is_fenced(Millis(10_999)));
    }

    #[test]
    fn an_unknown_outcome_keeps_the_heartbeat_and_lost_ends_it() {
        let mut m = machine();
        m.poll(Millis(4_000));
        let r = m.on_renew_answer(
            Millis(4_100),
            StoreTime(0),
            &Err(StoreError::Unavailable("x".into())),
        );
        assert_eq!(r, Renewed::Unavailable);
        assert_eq!(m.poll(Millis(4_100)).wake, Millis(5_600));
        let r = m.on_renew_answer(
            Millis(4_200),
            StoreTime(0),
            &Err(StoreError::Conflict(JobId(1))),
        );
        assert_eq!(r, Renewed::Unavailable, "a conflict is retried too");
        m.poll(Millis(5_600));
        let r = m.on_renew_answer(Millis(5_700), StoreTime(0), &Ok(Renewal::Lost));
        assert_eq!(r, Renewed::Ended(Ended::Abandoned(BeliefEnd::Lost)));
    }

    #[test]
    fn shutdown_signals_then_returns_the_job_when_the_grace_runs_out() {
        let mut m = machine();
        m.on_shutdown();
        let p = m.poll(Millis(2_000));
        assert_eq!(p.signal, Some(StopReason::Shutdown));
        assert_eq!(p.end, None);
        let grace = cfg().grace;
        let p = m.poll(Millis(2_000).saturating_add(grace));
        assert_eq!(p.signal, None, "signalled once");
        assert_eq!(p.end, Some(Ended::GraceOut(BeliefEnd::ShutdownTimeout)));
        assert_eq!(p.end.and_then(Ended::released), Some(Outcome::Returned));
        assert_eq!(
            m.on_handler_done(Err(HandlerError::retryable("stopped"))),
            Outcome::Returned
        );
    }

    #[test]
    fn the_releasing_heartbeat_renews_until_the_fence() {
        let mut m = machine();
        assert!(m.start_releasing());
        assert_eq!(
            m.heartbeat_poll(Millis(2_000)),
            HeartbeatPoll::SleepUntil(Millis(4_000))
        );
        assert_eq!(m.heartbeat_poll(Millis(4_000)), HeartbeatPoll::SendRenew);
        assert!(m.heartbeat_answer(Millis(4_100), &renewed()));
        assert_eq!(m.believe_until(), Millis(14_000));
        assert_eq!(m.heartbeat_poll(Millis(14_000)), HeartbeatPoll::Stop);
        assert!(!m.heartbeat_answer(Millis(4_100), &Ok(Renewal::Lost)));
    }
}
