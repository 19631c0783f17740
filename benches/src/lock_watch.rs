//! Watches PostgreSQL's lock views while the bench runs: every
//! [`EVERY`], which sessions wait on another (`pg_blocking_pids`), whether
//! the pruner's session is the one they wait on, and which relation locks
//! the pruner holds (`pg_locks`). Read-only, on a connection of its own.

use sqlx::PgPool;
use std::collections::BTreeSet;
use std::time::Duration;

/// Interval between two looks.
pub const EVERY: Duration = Duration::from_millis(50);
/// Most distinct lock descriptions kept (the set is small in practice).
const MAX_KINDS: usize = 32;

/// Sessions of this database waiting on another, and who they wait on.
const BLOCKED: &str = "SELECT w.pid, bp.pid, left(w.query, 60) \
     FROM pg_stat_activity w \
     CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS bp(pid) \
     WHERE w.datname = current_database()";

/// The pruner session's relation locks.
const HELD: &str = "SELECT l.mode || ' on ' || COALESCE(c.relname, l.relation::text) \
     FROM pg_locks l LEFT JOIN pg_class c ON c.oid = l.relation \
     WHERE l.pid = $1 AND l.locktype = 'relation' AND l.granted";

/// What the looks of one interval saw.
#[derive(Clone, Debug, Default)]
pub struct Watched {
    /// Looks taken.
    pub looks: u64,
    /// Looks that found some session waiting on another.
    pub looks_with_waits: u64,
    /// Session waits on the pruner's session (summed over looks).
    pub waits_on_pruner: u64,
    /// Session waits on anything else (summed over looks).
    pub other_waits: u64,
    /// What the waiting sessions were running, when one waited on the
    /// pruner.
    pub waiting_on_pruner: BTreeSet<String>,
    /// The pruner's relation locks seen (mode on relation).
    pub pruner_locks: BTreeSet<String>,
    /// Looks that failed (the view query itself).
    pub failed: u64,
}

/// One look, added to `w`.
pub async fn look(pool: &PgPool, pruner_pid: i32, w: &mut Watched) {
    w.looks += 1;
    let blocked: Vec<(i32, i32, Option<String>)> =
        match sqlx::query_as(BLOCKED).fetch_all(pool).await {
            Ok(rows) => rows,
            Err(_) => {
                w.failed += 1;
                return;
            }
        };
    if !blocked.is_empty() {
        w.looks_with_waits += 1;
    }
    for (_, blocker, query) in blocked {
        if blocker == pruner_pid {
            w.waits_on_pruner += 1;
            if w.waiting_on_pruner.len() < MAX_KINDS {
                w.waiting_on_pruner.insert(query.unwrap_or_default());
            }
        } else {
            w.other_waits += 1;
        }
    }
    match sqlx::query_scalar::<_, String>(HELD)
        .bind(pruner_pid)
        .fetch_all(pool)
        .await
    {
        Ok(held) => {
            for h in held {
                if w.pruner_locks.len() < MAX_KINDS {
                    w.pruner_locks.insert(h);
                }
            }
        }
        Err(_) => w.failed += 1,
    }
}
