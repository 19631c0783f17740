//! What a failed prune wake-up reports: the jobs its earlier calls pruned
//! as well as the error that ended it.
//!
//! Why: each call commits on its own, so when the third call of a wake-up
//! fails, the jobs of the first two are already gone. A caller that was
//! told only the error could not account for them (issue 44's soak found
//! 61,000 deleted jobs that no answer named).

use crate::error::StoreError;
use crate::ids::JobId;
use std::fmt;

/// A prune wake-up that ended in an error after pruning `pruned`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PruneFailure {
    /// The jobs the wake-up's earlier calls pruned (committed: they are
    /// gone), in the order the store answered them.
    pub pruned: Vec<JobId>,
    /// The error of the call that ended the wake-up (its own outcome is
    /// unknown when it is `Unavailable`, as for any store call).
    pub error: StoreError,
}

impl fmt::Display for PruneFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (after {} jobs pruned in this wake-up)",
            self.error,
            self.pruned.len()
        )
    }
}

impl std::error::Error for PruneFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}
