//! The `[coverage]` table: the named situations a scenario exists to reach
//! (`expects = ["situation", ...]`, names from
//! [`crate::situation::BUILTIN`]). A run where a declared situation is
//! reached on none of the scenario's seeds fails like an invariant.

use serde::{Deserialize, Serialize};

/// What a scenario declares about coverage.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoverageSpec {
    /// Situations at least one of the scenario's seeds must reach.
    pub expects: Vec<String>,
}

impl CoverageSpec {
    /// Whether the scenario declares nothing (the table is then left out
    /// of a written scenario and of the plan fingerprint, as before it
    /// existed).
    pub fn is_empty(&self) -> bool {
        self.expects.is_empty()
    }
}
