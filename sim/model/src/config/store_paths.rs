//! The store paths a scenario opts into, in its `[faults]` table: how a
//! batch's parts finish (`batch_parts`), cancellation of single requests
//! at the commit point (`single_cancel`), and which writes the store may
//! answer `Conflict` (`conflict_on`).
//!
//! Each is off by default and draws from a generator of its own only when
//! on, so a scenario written before they existed runs exactly as before.

use serde::{Deserialize, Serialize};

/// The order in which the parts of a batch finish, for a store whose
/// `batch` runs its parts as separate concurrent calls (the trait's
/// default, a user's async store).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BatchParts {
    /// In list order, each part finishing before the next is polled (what
    /// a store answering in one poll does).
    #[default]
    List,
    /// In an order drawn from the seed, per phase (releases, then claims):
    /// code that collects answers in the order parts finish, instead of
    /// the order they were asked in, is then exercised.
    Drawn,
}

impl BatchParts {
    /// Whether this is the default (nothing to write in a scenario file).
    pub fn is_list(&self) -> bool {
        *self == BatchParts::List
    }
}

/// Which writes the store may answer `Conflict` at the `store_conflict`
/// rate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConflictOn {
    /// A renew, release or cancel sent alone, and a batch as a whole.
    #[default]
    RowWrites,
    /// Also a claim sent alone, a sweep, an enqueue, and (on a store whose
    /// batch runs its parts as separate calls) one part of a batch.
    EveryWrite,
}

impl ConflictOn {
    /// Whether this is the default (nothing to write in a scenario file).
    pub fn is_row_writes(&self) -> bool {
        *self == ConflictOn::RowWrites
    }
}
