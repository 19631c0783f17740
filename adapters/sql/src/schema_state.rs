//! Where a database's schema stands against the migrations a build carries:
//! what an operator's tool checks before it touches a store, so that a
//! database without the schema, or with a schema newer than the binary,
//! is refused with a clear message instead of failing mid-command.

use crate::job_sql::MapError;
use leasehold_core::StoreError;
use sqlx::{Database, Executor, FromRow, IntoArguments, Pool};
use std::fmt;

/// The successful migration versions a database records, in order (run
/// once the `_sqlx_migrations` table is known to exist).
pub const APPLIED_VERSIONS_SQL: &str =
    "SELECT version FROM _sqlx_migrations WHERE success ORDER BY version";

/// The migration versions applied to the database `pool` reaches
/// (successful ones, in order); empty when it was never migrated.
/// `has_table` is the store's own statement answering whether the
/// `_sqlx_migrations` table exists, as a truth value or a count (a `T`).
pub async fn applied_versions<DB, T>(
    pool: &Pool<DB>,
    has_table: &str,
    map: MapError,
) -> Result<Vec<i64>, StoreError>
where
    DB: Database,
    T: Into<i64> + Send + Unpin,
    for<'r> (T,): FromRow<'r, DB::Row>,
    for<'r> (i64,): FromRow<'r, DB::Row>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
{
    let exists: T = sqlx::query_scalar(has_table)
        .fetch_one(pool)
        .await
        .map_err(map)?;
    if exists.into() == 0 {
        return Ok(Vec::new());
    }
    sqlx::query_scalar(APPLIED_VERSIONS_SQL)
        .fetch_all(pool)
        .await
        .map_err(map)
}

/// The migrations an embedded `sqlx::migrate!` carries, in version order.
pub fn migrations_of(migrator: &sqlx::migrate::Migrator) -> Vec<Migration> {
    migrator
        .iter()
        .map(|m| Migration {
            version: m.version,
            description: m.description.to_string(),
            sql: m.sql.to_string(),
        })
        .collect()
}

/// One migration this build carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Migration {
    /// Its version (the file's number).
    pub version: i64,
    /// Its description (the file's name after the number).
    pub description: String,
    /// The SQL it applies.
    pub sql: String,
}

/// A database's schema against the migrations of this build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaState {
    /// No migration was ever applied (no migrations table, or it is empty).
    Missing,
    /// Some of this build's migrations are applied, and these are not yet.
    Behind {
        /// The latest version applied.
        applied: i64,
        /// The versions still to apply, in order.
        pending: Vec<i64>,
    },
    /// Every migration of this build is applied, and nothing else.
    Current {
        /// The latest version.
        version: i64,
    },
    /// The database holds migrations this build does not know: a newer
    /// binary migrated it.
    Newer {
        /// The applied versions this build does not carry.
        unknown: Vec<i64>,
        /// The latest version this build carries.
        known_latest: i64,
    },
}

impl SchemaState {
    /// Judges the `applied` versions against `known` migrations.
    pub fn of(applied: &[i64], known: &[Migration]) -> SchemaState {
        let versions: Vec<i64> = known.iter().map(|m| m.version).collect();
        SchemaState::judge(applied, &versions)
    }

    /// Judges the `applied` versions (successful ones, any order) against
    /// the `known` versions of this build.
    pub fn judge(applied: &[i64], known: &[i64]) -> SchemaState {
        let known_latest = known.iter().copied().max().unwrap_or(0);
        let mut unknown = not_in(applied, known);
        unknown.dedup();
        if !unknown.is_empty() {
            return SchemaState::Newer {
                unknown,
                known_latest,
            };
        }
        let Some(latest) = applied.iter().copied().max() else {
            return SchemaState::Missing;
        };
        let pending = not_in(known, applied);
        if pending.is_empty() {
            SchemaState::Current { version: latest }
        } else {
            SchemaState::Behind {
                applied: latest,
                pending,
            }
        }
    }
}

/// The versions of `these` that `others` lacks, in order.
fn not_in(these: &[i64], others: &[i64]) -> Vec<i64> {
    let mut out: Vec<i64> = these
        .iter()
        .copied()
        .filter(|v| !others.contains(v))
        .collect();
    out.sort_unstable();
    out
}

impl fmt::Display for SchemaState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaState::Missing => f.write_str("no leasehold schema (run `leasehold migrate`)"),
            SchemaState::Behind { applied, pending } => write!(
                f,
                "schema version {applied}, {} migration(s) behind this binary (run `leasehold migrate`)",
                pending.len()
            ),
            SchemaState::Current { version } => write!(f, "schema version {version}"),
            SchemaState::Newer {
                unknown,
                known_latest,
            } => write!(
                f,
                "the schema is newer than this binary: migration(s) {unknown:?} are applied, \
                 this binary knows up to {known_latest} (use a newer leasehold)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_is_told_apart() {
        let known = [1, 2, 3];
        assert_eq!(SchemaState::judge(&[], &known), SchemaState::Missing);
        assert_eq!(
            SchemaState::judge(&[2, 1], &known),
            SchemaState::Behind {
                applied: 2,
                pending: vec![3]
            }
        );
        assert_eq!(
            SchemaState::judge(&[1, 2, 3], &known),
            SchemaState::Current { version: 3 }
        );
        assert_eq!(
            SchemaState::judge(&[1, 2, 3, 4], &known),
            SchemaState::Newer {
                unknown: vec![4],
                known_latest: 3
            }
        );
    }

    #[test]
    fn messages_name_the_problem() {
        assert!(SchemaState::Missing
            .to_string()
            .contains("no leasehold schema"));
        let newer = SchemaState::judge(&[1, 9], &[1]).to_string();
        assert!(newer.contains("newer than this binary"), "{newer}");
        assert!(newer.contains("[9]"), "{newer}");
    }
}
