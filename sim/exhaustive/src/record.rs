//! The checker's own record of what the store did (`Ghost`), the steps
//! it records and the invariants (`Inv`) it names. What it judges from
//! them is in `ghost`.

use crate::ident::Ident;
use leasehold_core::Token;
use std::fmt;

/// An invariant of `PROTOCOL.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Inv {
    /// Single grant.
    I1,
    /// Single winner.
    I2,
    /// Exclusive belief: no handler runs past the store's expiry while
    /// another holder exists; none runs after `Lost`; two never at once.
    I3,
    /// No lost results.
    I4,
    /// No false crash reports.
    I5,
    /// Liveness: every job is terminal at the horizon.
    I6,
    /// Cancel.
    I7,
    /// Retry budget.
    I8,
    /// Parallelism.
    I9,
}

impl Inv {
    /// Every invariant checked here, in order.
    pub const ALL: [Inv; 9] = [
        Inv::I1,
        Inv::I2,
        Inv::I3,
        Inv::I4,
        Inv::I5,
        Inv::I6,
        Inv::I7,
        Inv::I8,
        Inv::I9,
    ];

    /// Its name, as the simulator's reports spell it.
    pub fn name(self) -> &'static str {
        match self {
            Inv::I1 => "I1",
            Inv::I2 => "I2",
            Inv::I3 => "I3",
            Inv::I4 => "I4",
            Inv::I5 => "I5",
            Inv::I6 => "I6",
            Inv::I7 => "I7",
            Inv::I8 => "I8",
            Inv::I9 => "I9",
        }
    }
}

impl fmt::Display for Inv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One lease as the store granted it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GLease {
    /// Its token.
    pub token: Token,
    /// Who it was granted to.
    pub holder: Ident,
    /// Its store expiry (ms of store time).
    pub expires_at: i64,
    /// Released or reclaimed.
    pub ended: bool,
    /// A message about it was lost: a reclaim is explained, unless its
    /// holder missed a renew it owed (`missed`).
    pub explained: bool,
    /// The belief deadline on the holder's clock as the checker computes
    /// it (`owed.rs`); 0 once the holder owes nothing more.
    pub believe_until: u64,
    /// The true instant by which the holder owes its next renew, while it
    /// owes one (`owed.rs`).
    pub owed: Option<u64>,
    /// The true instant by which a renew was owed and not sent: a lost
    /// message no longer explains the lease's reclaim.
    pub missed: Option<u64>,
}

/// What the checker knows of one job.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GJob {
    /// Every lease granted, in order.
    pub leases: Vec<GLease>,
    /// Terminal transitions accepted.
    pub terminal_steps: u8,
    /// The token whose release was answered `Committed`.
    pub committed: Option<Token>,
    /// A cancel was applied while the job was pending.
    pub cancelled_pending: bool,
}

/// The checker's record (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ghost {
    /// Per job index.
    pub jobs: Vec<GJob>,
    /// Identities that crashed.
    pub crashed: Vec<Ident>,
    /// The first invariant a step broke, and how.
    pub violation: Option<(Inv, String)>,
}

/// A store step, as the checker sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A claim granted `token` to `who`, expiring at `expires_at`.
    Claim {
        /// Grantee.
        who: Ident,
        /// Token.
        token: Token,
        /// Store expiry.
        expires_at: i64,
    },
    /// A renew of `token` answered `Renewed` until `expires_at`.
    Renew {
        /// Token.
        token: Token,
        /// Store expiry.
        expires_at: i64,
    },
    /// A release of `token`, answered `committed` (or `Lost`).
    Release {
        /// Token.
        token: Token,
        /// Answered `Committed`.
        committed: bool,
    },
    /// A sweep reclaimed the lease.
    Sweep,
    /// A client cancel.
    Cancel,
}
