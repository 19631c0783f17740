//! The search's reductions: states the breadth-first search need not
//! visit because every violation reachable through them is reachable
//! without them. Each is argued here and checked by `tests/reduced.rs`
//! (on small scopes, with each planted wrong transition, the reduced and
//! the whole world agree on whether an invariant breaks).
//!
//! Every reduced run is a run of the whole world (a reduction only
//! disables actions), so the reduced search never reports a violation the
//! world does not have. What each argument shows is the converse: a
//! violation of the whole world is still found.
//!
//! ## A crash only where its host would act ([`World::crash_instant`])
//!
//! A crash of host `h` changes only `h` (its tasks vanish, its identity is
//! dead, its next incarnation may claim) and the checker's list of crashed
//! identities. Take a run of the whole world in which `h` crashes at a
//! state `c`, and let `u` be the first state from `c` on where `h` (old or
//! new incarnation) takes part in a step: a message to `h` delivered
//! (dropped, to a dead identity), `h`'s new incarnation claiming (a job is
//! pending), or time reaching `faults_until` (the last instant a crash may
//! strike). Move the crash from `c` to `u`. In between:
//!
//! - every other step is enabled as before and does the same: the store,
//!   the sweeper, the network and the other hosts never read `h`'s state
//!   (a request `h` sent before it crashed reaches the store either way);
//!   a loss of `h`'s messages is not allowed after its crash, so none is
//!   moved;
//! - the alive `h` is never forced to act before `u`: what would force it
//!   (a due timer, an answer at the end of its window, a handler at its
//!   last instant, a claim when a job is pending) is a condition under
//!   which the crash is enabled, so `u` comes no later than that;
//! - time stops at no fewer instants (the alive `h`'s timers may add
//!   stops; an action enabled at one instant stays enabled at a later
//!   stop up to the end of its window, which is a stop of both runs);
//! - the invariants judged before the crash are as strict or stricter:
//!   with `h` alive, a handler of `h` still runs (I3) and a reclaim of its
//!   lease is not excused by the crash (I5). If one breaks, the reduced
//!   search has found a violation of the world (possibly another
//!   invariant than the original run's, the world has both).
//!
//! At `u` the state after the crash equals the original run's state at
//! `u` (the new incarnation's claim due time differs, `local(c)` against
//! `local(u)`, but both are past and a past claim due time is hashed as
//! the present one, `hash.rs`). So the original run's violation is
//! reached.
//!
//! Cost: a crash used to be enabled in every state where its host was
//! busy; now only at the instants where the host acts.

use crate::clock::local_at;
use crate::model::World;
use crate::world::{Phase, State};
use leasehold_core::JobState;

impl World {
    /// Whether host `h` may crash in `s` under the reduction (see the
    /// module docs): at an instant where it, or its next incarnation,
    /// would act, or at the last instant a fault may strike.
    pub fn crash_instant(&self, s: &State, h: usize) -> bool {
        if s.now == self.scope.faults_until.0 {
            return true;
        }
        if s.rows.iter().any(|r| r.state == JobState::Pending) {
            return true;
        }
        let deliverable = s.net.iter().any(|m| {
            !m.body.to_store()
                && m.who.host as usize == h
                && (s.now == m.not_before || s.now >= m.deadline)
        });
        if deliverable {
            return true;
        }
        let host = &s.hosts[h];
        let local = local_at(host.drift_ppm, s.now);
        let last_instant = host.tasks.iter().any(|t| {
            matches!(t.phase, Phase::Running { handler_by, .. } if handler_by <= s.now)
                && self.runnable(t, local)
        });
        if last_instant {
            return true;
        }
        let mut timers = Vec::new();
        self.due_timers(s, &mut timers);
        timers
            .iter()
            .any(|a| matches!(a, crate::model::Action::Timer(x, ..) if *x as usize == h))
    }
}
