//! Identifiers: jobs, workers and fencing tokens.
//!
//! A [`Token`] is the fencing token of one lease on one job. Tokens of a job
//! strictly increase with every claim and are never reused, so a holder with
//! an older token can always be told apart from the current one.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Stable identifier of a job, assigned by the store at enqueue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobId(pub u64);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "job-{}", self.0)
    }
}

/// Fencing token of a lease: strictly increasing per job, never reused.
///
/// `Token(0)` means "never claimed".
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Token(pub u64);

impl Token {
    /// The token of a job that was never claimed.
    pub const NONE: Token = Token(0);

    /// The token the next claim of this job receives.
    pub fn next(self) -> Token {
        let next = Token(self.0 + 1);
        debug_assert!(next > self, "tokens strictly increase");
        next
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t{}", self.0)
    }
}

/// Identity of one worker process incarnation.
///
/// A restarted process must use a new identity (for example by appending an
/// incarnation number); the identity alone never authorizes anything, the
/// token does.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WorkerId(pub String);

impl WorkerId {
    /// Builds a worker id from anything string-like.
    pub fn new(id: impl Into<String>) -> Self {
        WorkerId(id.into())
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for WorkerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Logs, error messages and crash reports name jobs, tokens and
    /// workers by these forms.
    #[test]
    fn ids_display_in_their_logged_forms() {
        assert_eq!(JobId(42).to_string(), "job-42");
        assert_eq!(Token(7).to_string(), "t7");
        assert_eq!(WorkerId::new("w-1").to_string(), "w-1");
    }
}
