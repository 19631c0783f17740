//! The statements of prune both stores send alike, in a [`Dialect`]'s
//! placeholder style: the per-schedule mark of the latest pruned plan time
//! (table `leasehold_pruned_plan_times`, a migration of each store), and
//! the scan's filter.
//!
//! Why a mark: a plan time's job holds the key that makes a second fire of
//! it answer that job; once the job is pruned the key is gone, and the
//! mark is what refuses the fire instead
//! (`leasehold_core::transition::refuse_pruned_plan_time`).

use crate::dialect::Dialect;

/// The states a prune may delete, as an SQL list.
pub const TERMINAL_STATES: &str = "('succeeded', 'dead', 'cancelled')";

/// The latest pruned plan time of a schedule (`name` bound first).
pub fn pruned_plan_time(d: Dialect) -> String {
    format!(
        "SELECT plan_time FROM leasehold_pruned_plan_times WHERE name = {}",
        d.placeholder(1)
    )
}

/// Raises a schedule's mark to a plan time (`name`, then `plan_time`);
/// never lowers it.
pub fn raise_plan_time(d: Dialect) -> String {
    format!(
        "INSERT INTO leasehold_pruned_plan_times (name, plan_time) VALUES ({}) \
         ON CONFLICT (name) DO UPDATE SET plan_time = excluded.plan_time \
         WHERE excluded.plan_time > leasehold_pruned_plan_times.plan_time",
        d.placeholders(1, 2)
    )
}

/// The filter of the prune scan: terminal, finished at or before the
/// cutoff (bound at `n`).
pub fn prunable_filter(d: Dialect, n: usize) -> String {
    format!(
        "state IN {TERMINAL_STATES} AND updated_at <= {}",
        d.placeholder(n)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{POSTGRES, SQLITE};

    /// The text each store sends: a change here is a change to both.
    #[test]
    fn each_dialect_gets_its_placeholders() {
        assert_eq!(
            pruned_plan_time(POSTGRES),
            "SELECT plan_time FROM leasehold_pruned_plan_times WHERE name = $1"
        );
        assert!(pruned_plan_time(SQLITE).ends_with("name = ?"));
        assert!(raise_plan_time(POSTGRES).contains("VALUES ($1, $2)"));
        assert!(raise_plan_time(SQLITE).contains("VALUES (?, ?)"));
        assert_eq!(
            prunable_filter(POSTGRES, 1),
            "state IN ('succeeded', 'dead', 'cancelled') AND updated_at <= $1"
        );
    }
}
