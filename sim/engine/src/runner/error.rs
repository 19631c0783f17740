//! What stops the harness from running a seed: a bug or misconfiguration
//! of the harness or the store, never an invariant violation (those are
//! the outcome's findings).

use std::time::Duration;

/// A bug or misconfiguration of the harness (never an invariant violation).
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The scenario is invalid.
    #[error("invalid scenario: {}", .0.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("; "))]
    Config(Vec<leasehold_model::config::ConfigProblem>),
    /// The variant name is unknown.
    #[error("unknown variant {name:?}; known variants: {known}")]
    UnknownVariant {
        /// The name given.
        name: String,
        /// The known names.
        known: String,
    },
    /// A host's software failed (for example its configuration was rejected).
    #[error("simulation failed: {0}")]
    Sim(String),
    /// Simulated code panicked.
    #[error("simulated code panicked: {0}")]
    Panic(String),
    /// The store could not be set up or read (bad URL, unreachable database,
    /// a schema that holds data, a variant the store does not carry).
    #[error("store: {0}")]
    Store(String),
    /// The run used up its wall-clock limit and was stopped between two
    /// steps: nothing was judged (it is neither a pass nor a violation).
    #[error(
        "stopped by the run timeout of {}s of wall time, after {} of {} simulated ({steps} steps); \
         raise --run-timeout or shorten the scenario",
        limit.as_secs_f64(),
        leasehold_model::duration::format_ms(*sim_ms),
        leasehold_model::duration::format_ms(*duration_ms)
    )]
    Timeout {
        /// The wall-clock limit.
        limit: Duration,
        /// Simulated time reached.
        sim_ms: u64,
        /// The scenario's duration.
        duration_ms: u64,
        /// Steps taken.
        steps: u64,
    },
}
