//! The invariant ids (`I1` … `I12`) a scenario may expect a violation of,
//! with the spec's name for each.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An invariant id, `I1` … `I10`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum InvariantId {
    /// Single grant.
    I1,
    /// Single winner.
    I2,
    /// Exclusive belief.
    I3,
    /// No lost results.
    I4,
    /// No false crash reports.
    I5,
    /// Liveness.
    I6,
    /// Cancel.
    I7,
    /// Retry budget.
    I8,
    /// Parallelism.
    I9,
    /// Determinism.
    I10,
    /// Answers: every store answer equals the reference model's.
    I11,
    /// Schedules: at most one job per plan time; exactly one once healed.
    I12,
}

impl InvariantId {
    /// Every invariant, in order.
    pub const ALL: [InvariantId; 12] = [
        InvariantId::I1,
        InvariantId::I2,
        InvariantId::I3,
        InvariantId::I4,
        InvariantId::I5,
        InvariantId::I6,
        InvariantId::I7,
        InvariantId::I8,
        InvariantId::I9,
        InvariantId::I10,
        InvariantId::I11,
        InvariantId::I12,
    ];

    /// The spec's name for it.
    pub fn name(self) -> &'static str {
        match self {
            InvariantId::I1 => "single grant",
            InvariantId::I2 => "single winner",
            InvariantId::I3 => "exclusive belief",
            InvariantId::I4 => "no lost results",
            InvariantId::I5 => "no false crash reports",
            InvariantId::I6 => "liveness",
            InvariantId::I7 => "cancel",
            InvariantId::I8 => "retry budget",
            InvariantId::I9 => "parallelism",
            InvariantId::I10 => "determinism",
            InvariantId::I11 => "answers",
            InvariantId::I12 => "schedules",
        }
    }
}

impl fmt::Display for InvariantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}
