//! The renews a holder owes: the renew schedule of `docs/PROTOCOL.md` §3,
//! judged by the checker's own reading of that table (never the core's
//! lease machine), so that I5's excuse is honest: a lost message explains
//! a lease's reclaim only if its holder then still sent every renew it
//! owed.
//!
//! On the holder's clock, with `R` the renew interval, `D` the belief
//! deadline (§2: the send time of the claim or of the last renew answered
//! `Renewed`, plus `L·(1−ρ)/(1+ρ) − margin`, never moving back) and `MIN`
//! 100 ms, after an answer taken at local `a`:
//! - the grant, of a claim sent at `t`: the first renew by `max(t + R, a)`;
//! - `Renewed`, to a renew sent at `s`: the next by `max(s + R, a)`;
//! - `Unavailable` (a timeout is one, at `s + T`) or `Conflict`: the retry
//!   by `a + max(MIN, min(R/2, (D − a)/2))`;
//! - `Lost` or a rejection: nothing more.
//!
//! Nothing is owed at or past `D`, nor once the lease's task is over on its
//! holder (released, given up, stopped as lost or fenced, crashed).
//!
//! **Time.** A renew owed by local `x` is owed by the first true instant
//! at which the holder's clock reads `x` (`true_at`): a correct holder's
//! timer fires exactly there, and the world has that instant (it is the
//! timer's). A wrong holder's late timer may leave it out of the world's
//! instants; it need not be one: an obligation is judged missed at the
//! first instant after it with no renew sent ([`settle`], after every
//! step), and a reclaim, the only judgement that reads it, comes at one of
//! the world's instants, after that one or not past the due instant at all
//! (then nothing was owed yet). No slack is needed: the world's clocks and
//! deliveries are exact.

use crate::clock::true_at;
use crate::record::Ghost;
use crate::scope::Scope;
use crate::world::{RenewAns, State};
use leasehold_core::Token;

/// The protocol's shortest wait before a renew retry (§3, `MIN`).
pub const MIN_RETRY_MS: u64 = 100;

/// The schedule's constants of one scope, on a holder's clock (ms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// `R`.
    renew: u64,
    /// `L·(1−ρ)/(1+ρ) − margin` (the world's margin is 0).
    safe: u64,
}

impl Schedule {
    /// The schedule of `scope`'s workers.
    pub fn of(scope: &Scope) -> Self {
        let rho = u128::from(scope.drift_ppm);
        let lease = u128::from(scope.lease.0);
        Schedule {
            renew: scope.renew_interval.0,
            safe: (lease * (1_000_000 - rho) / (1_000_000 + rho)) as u64,
        }
    }

    /// The retry's due instant after a failed or unknown renew answered at
    /// `a` with belief deadline `d`.
    pub fn retry_by(&self, a: u64, d: u64) -> u64 {
        let half_left = d.saturating_sub(a) / 2;
        a + (self.renew / 2).min(half_left).max(MIN_RETRY_MS)
    }
}

/// What the holder learned about its renew.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The grant, of a claim sent at this local instant.
    Granted(u64),
    /// A renew's answer, the renew sent at this local instant.
    Renew(u64, RenewAns),
}

impl Ghost {
    /// The holder of `(j, token)` (clock drift `drift_ppm`) took `answer`
    /// at local `a`: record the renew it now owes.
    pub fn answered(
        &mut self,
        sched: &Schedule,
        j: usize,
        token: Token,
        drift_ppm: i32,
        a: u64,
        answer: Answer,
    ) {
        let Some(l) = self.jobs[j].leases.iter_mut().find(|l| l.token == token) else {
            return;
        };
        let due = match answer {
            Answer::Granted(t) => {
                l.believe_until = l.believe_until.max(t + sched.safe);
                Some((t + sched.renew).max(a))
            }
            Answer::Renew(s, RenewAns::Renewed { .. }) => {
                l.believe_until = l.believe_until.max(s + sched.safe);
                Some((s + sched.renew).max(a))
            }
            Answer::Renew(_, RenewAns::Unavailable | RenewAns::Conflict) => {
                Some(sched.retry_by(a, l.believe_until))
            }
            Answer::Renew(_, RenewAns::Lost | RenewAns::Rejected) => None,
        };
        l.owed = due
            .filter(|&x| x < l.believe_until)
            .map(|x| true_at(drift_ppm, x));
        if due.is_none() {
            // The lease is over for its holder: nothing more is owed.
            l.believe_until = 0;
        }
    }

    /// The holder of `(j, token)` sent a renew at true instant `now`: the
    /// renew owed is sent, on time or late.
    pub fn renew_sent(&mut self, j: usize, token: Token, now: u64) {
        if let Some(l) = self.jobs[j].leases.iter_mut().find(|l| l.token == token) {
            if let Some(due) = l.owed.take() {
                if now > due {
                    l.missed = l.missed.or(Some(due));
                }
            }
        }
    }
}

/// After every step: an obligation past its instant with no renew sent is
/// missed; one whose lease's task is over on its holder ends.
pub fn settle(s: &mut State) {
    let mut work = Vec::new();
    for (j, g) in s.ghost.jobs.iter().enumerate() {
        for (k, l) in g.leases.iter().enumerate() {
            if l.owed.is_none() && l.believe_until == 0 {
                continue;
            }
            let host = &s.hosts[l.holder.host as usize];
            let job = s.rows[j].id;
            let held = host.inc == l.holder.inc
                && host
                    .tasks
                    .iter()
                    .any(|t| t.job == job && t.token == l.token);
            if !held {
                work.push((j, k, None));
            } else if let Some(due) = l.owed.filter(|&due| s.now > due) {
                work.push((j, k, Some(due)));
            }
        }
    }
    // Only a state that changes copies its shared record.
    for (j, k, missed) in work {
        let l = &mut s.ghost.jobs[j].leases[k];
        l.owed = None;
        match missed {
            Some(due) => l.missed = l.missed.or(Some(due)),
            None => l.believe_until = 0,
        }
    }
}
