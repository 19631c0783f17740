//! The bug catalogue's hooks: the one place the simulator touches the
//! deliberately broken protocol variants.
//!
//! The variants live in `leasehold-core`, `leasehold-memory` and the SQL
//! adapters behind their `buggy-variants` feature, which this crate turns on only with its own
//! `catalogue` feature (on in the `leasehold` command-line tool, off by
//! default; the engine's hooks into the memory store are in
//! `leasehold_sim::stores::memory`). Cargo unifies features across a build, so a user who depends
//! on `leasehold-sim` to simulate their own store keeps a core without the
//! buggy code paths. Without the feature [`Variant`] is an empty type: a
//! scenario naming a variant is refused at load, and every hook below is
//! the identity.

use leasehold_core::worker::WorkerConfigBuilder;

#[cfg(feature = "catalogue")]
pub use leasehold_core::variants::Variant;

/// No variants in this build (the `catalogue` feature is off).
#[cfg(not(feature = "catalogue"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Variant {}

#[cfg(not(feature = "catalogue"))]
impl Variant {
    /// Every variant: none in this build.
    pub const ALL: [Variant; 0] = [];

    /// Never parses: this build has no catalogue.
    pub fn parse(_name: &str) -> Option<Variant> {
        None
    }

    /// Explains why no name parses.
    pub fn names() -> String {
        "none in this build (the catalogue needs leasehold-sim's `catalogue` feature, \
         as in the `leasehold` command-line tool)"
            .into()
    }

    /// The variant's name.
    pub fn name(self) -> &'static str {
        match self {}
    }
}

#[cfg(not(feature = "catalogue"))]
impl std::fmt::Display for Variant {
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {}
    }
}

/// Whether the variant is a bug of the store rather than of the worker or
/// sweeper: the memory store carries every one but those planted in
/// PostgreSQL's own code ([`postgres_only`]), the SQL stores the few
/// their adapters plant (the pruning bugs), and a run on a store that does
/// not carry it is skipped (`StoreFactory::carries_store_variant` in the
/// engine says which).
pub fn is_store_side(v: Variant) -> bool {
    #[cfg(feature = "catalogue")]
    {
        matches!(
            v,
            Variant::ReleaseWithoutToken
                | Variant::SweepWithoutRecheck
                | Variant::SweeperOwnClock
                | Variant::ResultSecondStep
                | Variant::ClaimWithoutCas
                | Variant::LateCancelOverwrites
                | Variant::FireWithoutKey
                | Variant::PruneIgnoresRetention
                | Variant::PruneForgetsPlanTimeMark
                | Variant::PruneFreesUnprunedKeys
                | Variant::BatchAnswersInCompletionOrder
                | Variant::CoalescedAnswersReversed
                | Variant::ClaimReadsWithoutRowLocks
                | Variant::SweepUpdateWithoutVersionGuard
                | Variant::LimitCountedWithoutLock
                // Its worker reuses its name, but the bug that keeps a dead
                // lease alive is the store's liveness-by-name renewal.
                | Variant::RestartReusesIdentity
        )
    }
    #[cfg(not(feature = "catalogue"))]
    match v {}
}

/// Whether the variant is planted in PostgreSQL's own code
/// (`coalesced-answers-reversed`, in its `Coalescing` wrapper; the races of
/// concurrent transactions in its claim and sweep, which the simulator
/// meets only with `interleave`): no other store carries it, the memory
/// store included.
pub fn postgres_only(v: Variant) -> bool {
    #[cfg(feature = "catalogue")]
    {
        matches!(
            v,
            Variant::CoalescedAnswersReversed
                | Variant::ClaimReadsWithoutRowLocks
                | Variant::SweepUpdateWithoutVersionGuard
                | Variant::LimitCountedWithoutLock
        )
    }
    #[cfg(not(feature = "catalogue"))]
    match v {}
}

/// A restarted worker keeps its old identity (`restart-reuses-identity`).
pub fn reuses_identity(v: Option<Variant>) -> bool {
    #[cfg(feature = "catalogue")]
    {
        v == Some(Variant::RestartReusesIdentity)
    }
    #[cfg(not(feature = "catalogue"))]
    v.is_some()
}

/// Sweepers send their own wall clock (`sweeper-own-clock`).
pub fn sweeper_sends_wall(v: Option<Variant>) -> bool {
    #[cfg(feature = "catalogue")]
    {
        v == Some(Variant::SweeperOwnClock)
    }
    #[cfg(not(feature = "catalogue"))]
    v.is_some()
}

/// Puts a worker-side variant into a worker's configuration.
pub fn configure_worker(b: WorkerConfigBuilder, v: Option<Variant>) -> WorkerConfigBuilder {
    #[cfg(feature = "catalogue")]
    if let Some(v) = v {
        return b.variant(v);
    }
    let _ = v;
    b
}

/// Puts a sweeper-side variant (`sweeper-stops-on-conflict`) into a
/// sweeper.
pub fn configure_sweeper<S: leasehold_core::Store, R: leasehold_core::Runtime>(
    s: leasehold_core::worker::Sweeper<S, R>,
    v: Option<Variant>,
) -> leasehold_core::worker::Sweeper<S, R> {
    #[cfg(feature = "catalogue")]
    if v == Some(Variant::SweeperStopsOnConflict) {
        return s.with_variant(v);
    }
    let _ = v;
    s
}

/// Puts a scheduler-side variant into a scheduler's configuration.
pub fn configure_scheduler(
    b: leasehold_core::worker::SchedulerConfigBuilder,
    v: Option<Variant>,
) -> leasehold_core::worker::SchedulerConfigBuilder {
    #[cfg(feature = "catalogue")]
    if v == Some(Variant::SchedulerOwnClock) {
        return b.variant(Variant::SchedulerOwnClock);
    }
    let _ = v;
    b
}

/// Puts the merger-side variant (`merged-answers-misrouted`) into a
/// process's batch merger.
pub fn configure_merger(
    m: leasehold_core::BatchMerger,
    v: Option<Variant>,
) -> leasehold_core::BatchMerger {
    #[cfg(feature = "catalogue")]
    if v == Some(Variant::MergedAnswersMisrouted) {
        return m.with_variant(v);
    }
    let _ = v;
    m
}
