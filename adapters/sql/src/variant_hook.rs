//! The bug catalogue's hook into the SQL stores: which deliberately broken
//! variant, if any, a store runs with (the simulator's catalogue only).
//!
//! A store holds one [`VariantHook`], set by its builder and never changed.
//! An operation with a planted bug asks the hook at its call site
//! (`if let Some(v) = hook.in_force()`, or [`VariantHook::is`]) and takes
//! the alternative statements of its own `*_variants.rs` file only then;
//! every other path is the correct store's. To plant another bug: add its
//! variant to [`CARRIED`], its statements to a `*_variants.rs` file, and
//! one such branch where the operation runs.
//!
//! Without this crate's `buggy-variants` feature (off by default, on only
//! through the simulator's `catalogue` feature) a hook holds nothing and
//! answers nothing: a shipped store cannot run a variant, and the
//! variants' statements are not compiled.

#[cfg(feature = "buggy-variants")]
use leasehold_core::variants::Variant;

/// The catalogue variants the SQL stores carry: each has alternative
/// statements here or in an adapter. A store refuses to be built with any
/// other ([`NotCarried`]); the simulator reports the others as skipped on
/// SQL.
#[cfg(feature = "buggy-variants")]
pub const CARRIED: [Variant; 3] = [
    Variant::PruneIgnoresRetention,
    Variant::PruneForgetsPlanTimeMark,
    Variant::PruneFreesUnprunedKeys,
];

/// Whether the SQL stores carry `v` (it is in [`CARRIED`]).
#[cfg(feature = "buggy-variants")]
pub fn carries(v: Variant) -> bool {
    CARRIED.contains(&v)
}

/// The catalogue variants PostgreSQL alone carries, besides [`CARRIED`]:
/// planted in its own code. Its `Coalescing` wrapper, which SQLite has no
/// counterpart of; and the races of concurrent transactions
/// (`race_variants`), which need a read that holds no lock: every SQLite
/// write holds the database's write lock from `BEGIN IMMEDIATE` to its
/// commit, so its reads and writes never meet another write's.
#[cfg(feature = "buggy-variants")]
pub const POSTGRES_ONLY: [Variant; 4] = [
    Variant::CoalescedAnswersReversed,
    Variant::ClaimReadsWithoutRowLocks,
    Variant::SweepUpdateWithoutVersionGuard,
    Variant::LimitCountedWithoutLock,
];

/// A store was asked to run a variant the SQL stores do not carry.
#[cfg(feature = "buggy-variants")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotCarried(pub Variant);

#[cfg(feature = "buggy-variants")]
impl std::fmt::Display for NotCarried {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let carried: Vec<&str> = CARRIED.iter().map(|v| v.name()).collect();
        write!(
            f,
            "the SQL stores do not carry the catalogue variant {}: they carry {}",
            self.0,
            carried.join(", ")
        )
    }
}

#[cfg(feature = "buggy-variants")]
impl std::error::Error for NotCarried {}

/// The catalogue variant a SQL store runs with: none by default, and none
/// ever without the `buggy-variants` feature.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VariantHook {
    #[cfg(feature = "buggy-variants")]
    variant: Option<Variant>,
}

impl VariantHook {
    /// No variant: the correct store.
    pub const NONE: VariantHook = VariantHook {
        #[cfg(feature = "buggy-variants")]
        variant: None,
    };

    /// A hook with `v` in force; refused when the SQL stores do not carry
    /// it, so a run never believes it tests a bug the store does not have.
    #[cfg(feature = "buggy-variants")]
    pub fn new(v: Option<Variant>) -> Result<VariantHook, NotCarried> {
        match v {
            Some(v) if !carries(v) => Err(NotCarried(v)),
            variant => Ok(VariantHook { variant }),
        }
    }

    /// A hook for a PostgreSQL store: as [`VariantHook::new`], and also
    /// a variant of [`POSTGRES_ONLY`].
    #[cfg(feature = "buggy-variants")]
    pub fn for_postgres(v: Option<Variant>) -> Result<VariantHook, NotCarried> {
        match v {
            Some(v) if POSTGRES_ONLY.contains(&v) => Ok(VariantHook { variant: Some(v) }),
            v => VariantHook::new(v),
        }
    }

    /// The variant in force, if any.
    #[cfg(feature = "buggy-variants")]
    pub fn in_force(self) -> Option<Variant> {
        self.variant
    }

    /// Whether `v` is the variant in force.
    #[cfg(feature = "buggy-variants")]
    pub fn is(self, v: Variant) -> bool {
        self.variant == Some(v)
    }
}

#[cfg(all(test, feature = "buggy-variants"))]
mod tests {
    use super::*;

    #[test]
    fn a_hook_holds_only_a_carried_variant() {
        assert_eq!(VariantHook::NONE.in_force(), None);
        assert_eq!(VariantHook::new(None), Ok(VariantHook::NONE));
        let hook = VariantHook::new(Some(Variant::PruneFreesUnprunedKeys)).unwrap();
        assert!(hook.is(Variant::PruneFreesUnprunedKeys));
        assert!(!hook.is(Variant::PruneIgnoresRetention));
        let refused = VariantHook::new(Some(Variant::ClaimWithoutCas)).unwrap_err();
        assert_eq!(refused, NotCarried(Variant::ClaimWithoutCas));
        assert!(
            refused.to_string().contains("claim-without-cas"),
            "{refused}"
        );
        assert!(refused.to_string().contains("prune-ignores-retention"));
    }

    /// A PostgreSQL-only variant is refused by SQLite's hook and held by
    /// PostgreSQL's, which still refuses what neither carries.
    #[test]
    fn a_postgres_only_variant_is_held_by_postgres_alone() {
        let v = Variant::CoalescedAnswersReversed;
        assert!(!carries(v));
        assert_eq!(VariantHook::new(Some(v)), Err(NotCarried(v)));
        assert!(VariantHook::for_postgres(Some(v)).unwrap().is(v));
        let pruning = Variant::PruneFreesUnprunedKeys;
        assert!(VariantHook::for_postgres(Some(pruning))
            .unwrap()
            .is(pruning));
        assert_eq!(
            VariantHook::for_postgres(Some(Variant::ClaimWithoutCas)),
            Err(NotCarried(Variant::ClaimWithoutCas))
        );
    }

    /// The transaction races are PostgreSQL's alone: SQLite's hook
    /// refuses each, PostgreSQL's holds it.
    #[test]
    fn the_transaction_races_are_held_by_postgres_alone() {
        for v in [
            Variant::ClaimReadsWithoutRowLocks,
            Variant::SweepUpdateWithoutVersionGuard,
            Variant::LimitCountedWithoutLock,
        ] {
            assert_eq!(VariantHook::new(Some(v)), Err(NotCarried(v)));
            assert!(VariantHook::for_postgres(Some(v)).unwrap().is(v), "{v}");
        }
    }
}
