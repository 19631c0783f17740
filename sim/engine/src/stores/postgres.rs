//! `leasehold-postgres` under simulation: a fresh schema per seed in the
//! database at the given URL, dropped at the end of the seed.
//!
//! Schema names are `<prefix>_<n>`, with a per-process counter `n`; the
//! default prefix carries the process id, so concurrent runs on one server
//! never meet. A schema that already exists and holds tables is refused
//! rather than reused or dropped: it is somebody's data.
//!
//! Every connection the simulator opens sets `synchronous_commit = off`
//! for its own session ([`SIM_SESSION_OPTIONS`]): a commit is visible to
//! every other session at once either way, and only a crash of the
//! *server* could lose the last ones, which the simulator never causes (its
//! store crash closes the client's connections; the server and its page
//! cache live on). Without it every write transaction waited for a WAL
//! flush, which was a third of a PostgreSQL seed's time (issue 46).

// The store traits return `impl Future + Send`; these bodies clone what they
// need before the `async` block, so the futures own it and can run on the
// driver thread: `async fn` would borrow the arguments instead.
#![allow(clippy::manual_async_fn)]

use super::{SeedContext, SetupError, SimStore, SimStoreClock, StoreFactory};
use leasehold_core::tx_faults::TxFaults;
use leasehold_core::{Event, StoreError};
use leasehold_model::catalogue::Variant;
use leasehold_postgres::PgStore;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Default schema prefix (the process id is appended).
pub const DEFAULT_SCHEMA_PREFIX: &str = "leasehold_sim";
/// Longest schema prefix (PostgreSQL identifiers have at most 63 bytes).
const MAX_PREFIX_LEN: usize = 40;
/// Pooled connections per seed: the store host runs one operation at a time.
const POOL: u32 = 2;
/// Pooled connections per seed with interleaving: one per transaction of
/// a group, one for the reads of a call that committed while the next
/// one runs, and one for the scheduler's lock queries.
const INTERLEAVED_POOL: u32 = super::interleave::MAX_GROUP as u32 + 2;
/// How long connecting may take before the database counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

static NEXT_SCHEMA: AtomicU64 = AtomicU64::new(0);

/// What every simulator session sets, as `sqlx` reads it from a URL's
/// query (`options[name]=value`, passed as `-c name=value` at connect).
pub const SIM_SESSION_OPTIONS: &str = "options[synchronous_commit]=off";

/// `url` with [`SIM_SESSION_OPTIONS`] added to its query.
fn with_sim_options(url: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{SIM_SESSION_OPTIONS}")
}

/// Makes a [`PgStore`] per seed.
#[derive(Clone, Debug)]
pub struct PostgresFactory {
    url: String,
    prefix: String,
}

impl PostgresFactory {
    /// A factory on the database at `url`; schemas are named
    /// `<prefix>_<n>` (default prefix: `leasehold_sim_<pid>`).
    pub fn new(url: impl Into<String>, prefix: Option<String>) -> Result<Self, SetupError> {
        let url = url.into();
        if url.trim().is_empty() {
            return Err(SetupError::new(
                "postgres: the database URL is empty (give --database-url or DATABASE_URL)",
            ));
        }
        let prefix =
            prefix.unwrap_or_else(|| format!("{DEFAULT_SCHEMA_PREFIX}_{}", std::process::id()));
        let ok = !prefix.is_empty()
            && prefix.len() <= MAX_PREFIX_LEN
            && prefix
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && !prefix.starts_with(|c: char| c.is_ascii_digit());
        if !ok {
            return Err(SetupError::new(format!(
                "postgres: bad schema prefix {prefix:?}: 1 to {MAX_PREFIX_LEN} characters of a-z, 0-9 and _, not starting with a digit"
            )));
        }
        Ok(PostgresFactory {
            url: with_sim_options(&url),
            prefix,
        })
    }

    fn admin(&self) -> impl Future<Output = Result<PgStore, SetupError>> + Send {
        let url = self.url.clone();
        async move {
            PgStore::builder(&url)
                .max_connections(1)
                .acquire_timeout(CONNECT_TIMEOUT)
                .application_name("leasehold-sim")
                .connect()
                .await
                .map_err(|e| {
                    SetupError::new(format!(
                        "postgres: cannot reach the database at {}: {e}",
                        redact(&url)
                    ))
                })
        }
    }

    /// Whether the PostgreSQL store carries the catalogue's store-side bug
    /// `v` (the same without a factory, for a command deciding what it
    /// skips before it has a database URL).
    pub fn carries(v: Variant) -> bool {
        #[cfg(feature = "catalogue")]
        {
            PgStore::carries_variant(v)
        }
        #[cfg(not(feature = "catalogue"))]
        match v {}
    }

    /// Connects once and reports whether the server is reachable.
    pub fn probe(&self) -> impl Future<Output = Result<(), SetupError>> + Send {
        let admin = self.admin();
        async move {
            let a = admin.await?;
            a.close().await;
            Ok(())
        }
    }
}

/// The URL without its password, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

impl SimStore for PgStore {
    fn audit_log(&self) -> impl Future<Output = Result<Option<Vec<Event>>, StoreError>> + Send {
        async { self.events().await.map(Some) }
    }

    fn close(&self) -> impl Future<Output = ()> + Send {
        PgStore::close(self)
    }

    fn tx_faults(&self) -> Option<&TxFaults> {
        Some(PgStore::tx_faults(self))
    }

    fn settle(&self) -> impl Future<Output = Result<(), String>> + Send {
        // A connection the store keeps between reads is at rest.
        let at_rest = self.connections_at_rest();
        async move { super::pool_settled(at_rest).await }
    }

    fn raises_injected_failures(&self) -> bool {
        true
    }

    fn coalesces_in_one_tx(&self) -> bool {
        true
    }

    /// Built with the default flushers (`open` below sets none), so two
    /// workers' batches of one instant run as two claim transactions.
    fn concurrent_batches(&self) -> usize {
        leasehold_core::DEFAULT_MERGE_FLUSHERS
    }

    fn coalesced_claims(
        self: std::sync::Arc<Self>,
        reqs: Vec<leasehold_core::ClaimRequest>,
    ) -> impl Future<Output = Vec<Result<Vec<leasehold_core::Lease>, StoreError>>> + Send {
        super::coalesced::through_coalescing(self, reqs, super::coalesced::claim)
    }

    fn coalesced_releases(
        self: std::sync::Arc<Self>,
        reqs: Vec<leasehold_core::ReleaseRequest>,
    ) -> impl Future<Output = Vec<Result<leasehold_core::Release, StoreError>>> + Send {
        super::coalesced::through_coalescing(self, reqs, super::coalesced::release)
    }

    fn lock_waiters(&self, session: i64) -> impl Future<Output = Result<Vec<i64>, String>> + Send {
        let pool = self.pool().clone();
        async move {
            let pid = i32::try_from(session).map_err(|_| format!("bad backend pid {session}"))?;
            // Asked on a connection of its own: the session asked about
            // is busy with its statement.
            let holders: Vec<i32> = sqlx::query_scalar("SELECT pg_blocking_pids($1)")
                .bind(pid)
                .fetch_one(&pool)
                .await
                .map_err(|e| format!("postgres: cannot read the lock waits of {pid}: {e}"))?;
            Ok(holders.into_iter().map(i64::from).collect())
        }
    }
}

impl StoreFactory for PostgresFactory {
    type Store = PgStore;
    type Database = String;

    fn name(&self) -> String {
        "postgres".into()
    }

    fn carries_store_variant(&self, v: Variant) -> bool {
        Self::carries(v)
    }

    fn create(
        &self,
        ctx: &SeedContext,
    ) -> impl Future<Output = Result<Self::Database, SetupError>> + Send {
        let schema = format!(
            "{}_{}",
            self.prefix,
            NEXT_SCHEMA.fetch_add(1, Ordering::Relaxed)
        );
        let admin = self.admin();
        let (url, ctx) = (self.url.clone(), ctx.clone());
        async move {
            let a = admin.await?;
            let tables: Result<i64, _> = sqlx::query_scalar(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1",
            )
            .bind(&schema)
            .fetch_one(a.pool())
            .await;
            a.close().await;
            let tables = tables.map_err(|e| SetupError::new(format!("postgres: {e}")))?;
            if tables > 0 {
                return Err(SetupError::new(format!(
                    "postgres: schema {schema:?} already exists and holds {tables} table(s); \
                     the simulator needs a fresh schema per seed and never reuses or drops \
                     data it did not make: drop it (DROP SCHEMA {schema} CASCADE) or choose \
                     another --pg-schema-prefix"
                )));
            }
            let store = PgStore::builder(&url)
                .schema(schema.clone())
                .policy(ctx.policy.clone())
                .max_connections(1)
                .acquire_timeout(CONNECT_TIMEOUT)
                .connect()
                .await
                .map_err(|e| SetupError::new(format!("postgres: {e}")))?;
            let migrated = store.migrate().await;
            store.close().await;
            migrated.map_err(|e| SetupError::new(format!("postgres: schema {schema}: {e}")))?;
            Ok(schema)
        }
    }

    fn open(
        &self,
        db: &Self::Database,
        ctx: &SeedContext,
        clock: SimStoreClock,
    ) -> impl Future<Output = Result<Self::Store, SetupError>> + Send {
        let (url, schema, policy) = (self.url.clone(), db.clone(), ctx.policy.clone());
        let variant = ctx.variant;
        let pool = if ctx.interleave {
            INTERLEAVED_POOL
        } else {
            POOL
        };
        async move {
            let builder = PgStore::builder(&url)
                .schema(schema.clone())
                .policy(policy)
                .clock_override(clock)
                .max_connections(pool)
                .acquire_timeout(CONNECT_TIMEOUT)
                .application_name("leasehold-sim");
            #[cfg(feature = "catalogue")]
            let builder = builder
                .variant(super::store_side(variant))
                .map_err(|e| SetupError::new(format!("postgres: catalogue: {e}")))?;
            let _ = variant;
            builder
                .connect()
                .await
                .map_err(|e| SetupError::new(format!("postgres: schema {schema}: {e}")))
        }
    }

    fn destroy(&self, db: Self::Database) -> impl Future<Output = ()> + Send {
        let admin = self.admin();
        async move {
            if let Ok(a) = admin.await {
                // The name was made here from a checked prefix and a number.
                let _ = sqlx::query(&format!("DROP SCHEMA IF EXISTS \"{db}\" CASCADE"))
                    .execute(a.pool())
                    .await;
                a.close().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_password_in_messages() {
        assert_eq!(
            redact("postgres://u:secret@h:5/db"),
            "postgres://u:***@h:5/db"
        );
        assert_eq!(redact("postgres://h/db"), "postgres://h/db");
    }

    #[test]
    fn simulator_sessions_commit_without_waiting_for_the_wal_flush() {
        assert_eq!(
            with_sim_options("postgres://h/db"),
            "postgres://h/db?options[synchronous_commit]=off"
        );
        assert_eq!(
            with_sim_options("postgres://h/db?sslmode=disable"),
            "postgres://h/db?sslmode=disable&options[synchronous_commit]=off"
        );
    }

    #[test]
    fn bad_prefixes_and_empty_urls_are_refused() {
        assert!(PostgresFactory::new("", None).is_err());
        assert!(PostgresFactory::new("postgres://h/db", Some("Bad-Name".into())).is_err());
        assert!(PostgresFactory::new("postgres://h/db", Some("9x".into())).is_err());
        assert!(PostgresFactory::new("postgres://h/db", Some("ok_prefix".into())).is_ok());
    }
}
