//! The catalogue's races of concurrent SQL transactions (bugs 30 to 32,
//! issue 47), each a step of PostgreSQL's claim or sweep written the way
//! a new contributor might write it. Each function here answers the
//! correct store's step unless its variant is in force in the store's
//! [`VariantHook`]; PostgreSQL calls them where it scans and writes.
//! Without the `buggy-variants` feature each is the identity and no buggy
//! statement is compiled.
//!
//! - `claim-reads-without-row-locks`: the claim's candidate scan lost its
//!   `FOR UPDATE SKIP LOCKED` and its rows are written by id alone, so a
//!   claim that read a pending row before another transaction changed it
//!   writes it back running over that change (two claims at once: one
//!   lease granted twice; a cancel at once: a cancelled job run, I11);
//! - `sweep-update-without-version-guard` (I11): the sweep reads its
//!   expired leases without locks and writes each by id alone, so a sweep
//!   that read a row before another sweep reclaimed it (and a claim took
//!   it again) overwrites them, and reports the lease's crash twice;
//! - `limit-counted-without-lock` (I9): the claim of a queue with a
//!   parallelism limit counts the queue's running jobs and then scans up
//!   to the room it saw, without the advisory lock that serializes the
//!   claims of that queue, so two claims that both count before either
//!   commits both see room and together run the queue past its limit.
//!
//! Not on SQLite: each needs a read that holds no lock while another
//! transaction writes, and every SQLite write holds the database's write
//! lock from `BEGIN IMMEDIATE` to its commit. Only concurrent transactions
//! meet these bugs: run one at a time (the simulator without
//! `interleave`), every one of them answers as the correct store's.

use crate::variant_hook::VariantHook;
#[cfg(feature = "buggy-variants")]
use leasehold_core::variants::Variant;

/// The row locks a claim's or a sweep's candidate scan ends with.
#[cfg(feature = "buggy-variants")]
pub const ROW_LOCKS: &str = " FOR UPDATE SKIP LOCKED";

/// The version check of PostgreSQL's batch update: a row is written only
/// over the version it was read at.
#[cfg(feature = "buggy-variants")]
pub const VERSION_GUARD: &str = " AND j.version = u.old_version";

/// `sql` with the first `clause` taken out: the statement as the
/// contributor wrote it. Panics when `sql` lacks the clause, so a changed
/// correct statement never leaves a variant silently unplanted.
#[cfg(feature = "buggy-variants")]
pub fn without(sql: &str, clause: &str) -> String {
    assert!(
        sql.contains(clause),
        "the correct statement no longer holds {clause:?}: re-plant the variant"
    );
    sql.replacen(clause, "", 1)
}

/// A claim's candidate scan `sql`, without its row locks under
/// `claim-reads-without-row-locks`.
pub fn claim_scan(hook: VariantHook, sql: String) -> String {
    #[cfg(feature = "buggy-variants")]
    if hook.is(Variant::ClaimReadsWithoutRowLocks) {
        return without(&sql, ROW_LOCKS);
    }
    let _ = hook;
    sql
}

/// A sweep's scan `sql`, without its row locks under
/// `sweep-update-without-version-guard`.
pub fn sweep_scan(hook: VariantHook, sql: String) -> String {
    #[cfg(feature = "buggy-variants")]
    if hook.is(Variant::SweepUpdateWithoutVersionGuard) {
        return without(&sql, ROW_LOCKS);
    }
    let _ = hook;
    sql
}

/// Whether a claim's rows are written by id alone, without the version
/// check: under `claim-reads-without-row-locks` only.
pub fn claim_writes_by_id(hook: VariantHook) -> bool {
    #[cfg(feature = "buggy-variants")]
    if hook.is(Variant::ClaimReadsWithoutRowLocks) {
        return true;
    }
    let _ = hook;
    false
}

/// Whether a sweep's rows are written by id alone, without the version
/// check: under `sweep-update-without-version-guard` only.
pub fn sweep_writes_by_id(hook: VariantHook) -> bool {
    #[cfg(feature = "buggy-variants")]
    if hook.is(Variant::SweepUpdateWithoutVersionGuard) {
        return true;
    }
    let _ = hook;
    false
}

/// Whether a claim of a limited queue takes the queue's lock before it
/// counts the queue's running jobs: always, except under
/// `limit-counted-without-lock`, where the count and the scan after it
/// run unserialized against other claims of the queue.
pub fn claim_locks_limited_queue(hook: VariantHook) -> bool {
    #[cfg(feature = "buggy-variants")]
    if hook.is(Variant::LimitCountedWithoutLock) {
        return false;
    }
    let _ = hook;
    true
}

/// PostgreSQL's batch update `guarded` without its [`VERSION_GUARD`]: rows
/// matched by id alone. Derived once, from the one statement PostgreSQL
/// writes its rows with (a query's text must outlive the query).
#[cfg(feature = "buggy-variants")]
pub fn update_by_id(guarded: &'static str) -> &'static str {
    static BY_ID: std::sync::OnceLock<(&'static str, String)> = std::sync::OnceLock::new();
    let (from, by_id) = BY_ID.get_or_init(|| (guarded, without(guarded, VERSION_GUARD)));
    assert_eq!(*from, guarded, "one update statement is derived here");
    by_id
}

#[cfg(all(test, feature = "buggy-variants"))]
mod tests {
    use super::*;

    fn hook(v: Variant) -> VariantHook {
        VariantHook::for_postgres(Some(v)).unwrap()
    }

    /// Each variant changes its own step and no other; the correct store
    /// (no variant) changes none.
    #[test]
    fn each_race_changes_only_its_own_step() {
        let scan = "SELECT * FROM t LIMIT 2 FOR UPDATE SKIP LOCKED".to_string();
        let claim = hook(Variant::ClaimReadsWithoutRowLocks);
        let sweep = hook(Variant::SweepUpdateWithoutVersionGuard);
        assert_eq!(claim_scan(claim, scan.clone()), "SELECT * FROM t LIMIT 2");
        assert_eq!(sweep_scan(sweep, scan.clone()), "SELECT * FROM t LIMIT 2");
        for h in [VariantHook::NONE, sweep] {
            assert_eq!(claim_scan(h, scan.clone()), scan);
            assert!(!claim_writes_by_id(h));
        }
        for h in [VariantHook::NONE, claim] {
            assert_eq!(sweep_scan(h, scan.clone()), scan);
            assert!(!sweep_writes_by_id(h));
        }
        assert!(claim_writes_by_id(claim) && sweep_writes_by_id(sweep));
        let limit = hook(Variant::LimitCountedWithoutLock);
        assert!(!claim_locks_limited_queue(limit));
        for h in [VariantHook::NONE, claim, sweep] {
            assert!(claim_locks_limited_queue(h));
        }
        assert_eq!(claim_scan(limit, scan.clone()), scan);
        assert!(!claim_writes_by_id(limit) && !sweep_writes_by_id(limit));
    }

    /// The update by id is the guarded one less its version check, and
    /// nothing else.
    #[test]
    fn the_update_by_id_drops_only_the_version_check() {
        const GUARDED: &str = "UPDATE j SET v = u.v FROM u WHERE j.id = u.id AND j.version = u.old_version RETURNING j.id";
        assert_eq!(
            update_by_id(GUARDED),
            "UPDATE j SET v = u.v FROM u WHERE j.id = u.id RETURNING j.id"
        );
    }

    /// A correct statement that lost the clause a variant removes is
    /// refused, never run as if the bug were planted.
    #[test]
    #[should_panic(expected = "re-plant the variant")]
    fn a_statement_without_the_clause_is_refused() {
        without("SELECT 1", ROW_LOCKS);
    }
}
