//! The catalogue's prune bugs on the SQL stores (bugs 23 to 25), each one
//! step of prune done the way a new contributor might write it. Each
//! function here is the correct step unless its variant is in force in the
//! store's [`VariantHook`]; both stores call them at the three steps of
//! their prune (the scan's instant, the marks, the keys), so the rest of
//! prune (the deletes, the largest pruned id, the audit) stays the correct
//! store's. Without the `buggy-variants` feature each is the identity and
//! no buggy statement is compiled.
//!
//! - `prune-ignores-retention` (I4): ages are judged at `now + R` instead
//!   of `now`, so every finished job looks old enough and goes at once;
//! - `prune-forgets-plan-time-mark` (I12): the jobs are deleted but the
//!   schedules' pruned marks are never raised;
//! - `prune-frees-unpruned-keys` (I11): after the deletes, the
//!   idempotency keys of every finished job are cleared, deleted or not
//!   ("finished jobs need no dedup"), so a retried enqueue within `R`
//!   makes a second job.

use crate::dialect::Dialect;
use crate::variant_hook::VariantHook;
use leasehold_core::{PruneRequest, StoreError, StoreTime};
use sqlx::{Database, Encode, Executor, IntoArguments, Type};

/// The instant a prune judges ages at: `now`, or `now + R` under
/// `prune-ignores-retention`.
pub fn judged_at(hook: VariantHook, req: &PruneRequest, now: StoreTime) -> StoreTime {
    #[cfg(feature = "buggy-variants")]
    if hook.is(leasehold_core::variants::Variant::PruneIgnoresRetention) {
        let r = i64::try_from(req.retention.0).unwrap_or(i64::MAX);
        return StoreTime(now.0.saturating_add(r));
    }
    let _ = (hook, req);
    now
}

/// Whether a prune raises the pruned plan times' marks: always, except
/// under `prune-forgets-plan-time-mark`.
pub fn raises_marks(hook: VariantHook) -> bool {
    #[cfg(feature = "buggy-variants")]
    if hook.is(leasehold_core::variants::Variant::PruneForgetsPlanTimeMark) {
        return false;
    }
    let _ = hook;
    true
}

/// `prune-frees-unpruned-keys`'s statement: clears the idempotency key of
/// the oldest finished jobs (the finish cutoff bound first, then the
/// limit), pruned or not.
#[cfg(feature = "buggy-variants")]
pub fn free_finished_keys(d: Dialect) -> String {
    format!(
        "UPDATE leasehold_jobs SET idempotency_key = NULL WHERE id IN (\
         SELECT id FROM leasehold_jobs WHERE {} AND idempotency_key IS NOT NULL \
         ORDER BY updated_at, id LIMIT {})",
        crate::prune_sql::prunable_filter(d, 1),
        d.placeholder(2)
    )
}

/// The last step of prune under `prune-frees-unpruned-keys`: the keys of
/// every job finished by `now` cleared, at most the prune cap of them.
/// Nothing under any other variant, and nothing without the feature.
pub async fn free_unpruned_keys<'c, DB>(
    hook: VariantHook,
    e: impl Executor<'c, Database = DB>,
    d: Dialect,
    now: StoreTime,
    map: fn(sqlx::Error) -> StoreError,
) -> Result<(), StoreError>
where
    DB: Database,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
{
    #[cfg(feature = "buggy-variants")]
    if hook.is(leasehold_core::variants::Variant::PruneFreesUnprunedKeys) {
        sqlx::query(&free_finished_keys(d))
            .bind(now.0)
            .bind(i64::from(leasehold_core::MAX_PRUNE_LIMIT))
            .execute(e)
            .await
            .map_err(map)?;
        return Ok(());
    }
    let _ = (hook, e, d, now, map);
    Ok(())
}

#[cfg(all(test, feature = "buggy-variants"))]
mod tests {
    use super::*;
    use crate::dialect::{POSTGRES, SQLITE};
    use leasehold_core::variants::Variant;
    use leasehold_core::Millis;

    fn hook(v: Variant) -> VariantHook {
        VariantHook::new(Some(v)).unwrap()
    }

    #[test]
    fn each_step_departs_only_under_its_own_variant() {
        let req = PruneRequest::new(Millis::from_secs(60), 10).unwrap();
        let now = StoreTime(1_000_000);
        assert_eq!(judged_at(VariantHook::NONE, &req, now), now);
        assert_eq!(
            judged_at(hook(Variant::PruneFreesUnprunedKeys), &req, now),
            now
        );
        assert_eq!(
            judged_at(hook(Variant::PruneIgnoresRetention), &req, now),
            StoreTime(1_060_000)
        );
        assert!(raises_marks(VariantHook::NONE));
        assert!(raises_marks(hook(Variant::PruneIgnoresRetention)));
        assert!(!raises_marks(hook(Variant::PruneForgetsPlanTimeMark)));
    }

    #[test]
    fn the_key_freeing_statement_reads_the_finished_rows_in_each_dialect() {
        let filter = "state IN ('succeeded', 'dead', 'cancelled') AND updated_at <=";
        assert_eq!(
            free_finished_keys(POSTGRES),
            format!(
                "UPDATE leasehold_jobs SET idempotency_key = NULL WHERE id IN (\
                 SELECT id FROM leasehold_jobs WHERE {filter} $1 AND idempotency_key \
                 IS NOT NULL ORDER BY updated_at, id LIMIT $2)"
            )
        );
        assert!(free_finished_keys(SQLITE).ends_with("LIMIT ?)"));
    }
}
