//! The reference model as a library, for a caller that drives a store
//! itself (the memory adapter's property test in `leasehold-tests`) rather
//! than record a simulated run: one request at a time, the same judgement
//! I11 gives every answer of a run (see the parent module).
//!
//! The caller says what it asked, at which store time, what the store
//! answered and what the store's rows are now; the model says where the
//! store and the spec disagree. Nothing here tells the store what to do:
//! the caller runs the store, the model only judges.

use super::{Replay, Served};
use crate::checker::Violation;
use leasehold_core::StoreTime;
use leasehold_model::config::SimConfig;
use leasehold_model::history::{Op, ReadRow, Reply};

/// The host name the judged requests carry in a violation.
const CALLER: &str = "caller";

/// The reference model of a store, fed one executed request at a time.
///
/// Build it with the scenario whose `[protocol]` the store runs under
/// (limits, backoff, parallelism over the workload's queues: the store's
/// policy must be `leasehold_model::protocol::policy_of` of the same
/// config), then call [`Reference::judge`] after every request, in the
/// order the store executed them.
pub struct Reference {
    replay: Replay,
    /// Requests judged so far: each one's id and true time in a violation.
    served: u64,
}

impl Reference {
    /// The model of an empty store under `cfg`'s rules.
    pub fn new(cfg: &SimConfig) -> Reference {
        Reference {
            replay: Replay::new(cfg),
            served: 0,
        }
    }

    /// Judges one executed request: `op` served at store time `now`,
    /// answered `reply`, after which the store shows `rows` (every row it
    /// holds, or at least each row the request touched). Returns the
    /// disagreements (I11), none when the store answered as the spec
    /// allows and every row equals the model's; then advances the model to
    /// the store's state (after a disagreement, the store's rows are taken
    /// as the truth, as in a recorded run).
    ///
    /// A request the store rejected for a reason of its own (`Conflict`,
    /// `Unavailable`) is treated as the history check treats it.
    pub fn judge(
        &mut self,
        op: &Op,
        now: StoreTime,
        reply: &Reply,
        rows: &[ReadRow],
    ) -> Vec<Violation> {
        self.served += 1;
        let before = self.replay.violations.len();
        self.replay.serve(&Served {
            t: self.served,
            store_time: now,
            id: self.served,
            host: CALLER,
            op,
            reply,
            after: rows,
        });
        // The derived store events are for a run's other checks; a caller
        // judging request by request has no use for them, and dropping them
        // keeps the model's memory bounded by the store's rows.
        self.replay.events.clear();
        self.replay.violations.split_off(before)
    }
}
