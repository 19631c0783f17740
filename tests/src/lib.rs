//! # leasehold-tests
//!
//! Harnesses that run the conformance suite (`leasehold_conformance`)
//! against every adapter, shared by the integration tests in `tests/`:
//! - [`MemoryHarness`]: the reference store on a manual clock;
//! - [`SqliteHarness`]: a real database file in a fresh temp directory per
//!   store, on a manual clock;
//! - [`PgHarness`]: a fresh schema per store in the database named by
//!   `DATABASE_URL`, on the database clock ([`PgClock::Database`]: time
//!   cases wait for real) or on a manual clock override ([`PgClock::Manual`]);
//! - [`PgCoalescingHarness`]: the same, with claims and releases answered
//!   in batches by [`Coalescing`] (manual clock).
//!
//! [`small_disk::SmallDisk`] is a `tmpfs` a test fills up and frees;
//! [`requests`] holds requests several tests send alike;
//! [`write_lock`] two processes on one SQLite file, one holding the
//! write lock; [`table_lock`] another PostgreSQL session holding a
//! store's job table.
//!
//! Postgres tests call [`database_url`]: without `DATABASE_URL` they print a
//! loud SKIP and pass, unless `CI` is set, in which case they fail.
//!
//! ## Depends on
//! `leasehold-core`, the conformance suite and every adapter: it is where
//! they meet. Nothing may depend on it.

#![warn(missing_docs)]

pub mod backends;
mod guarded;
mod lock_hold;
pub mod requests;
pub mod small_disk;
pub mod table_lock;
pub mod write_lock;

pub use guarded::Guarded;

use leasehold_conformance::{Fixture, Harness, TimeControl};
use leasehold_core::{Event, ManualStoreClock, Policy, StoreTime};
use leasehold_memory::MemoryStore;
use leasehold_postgres::{Coalescing, PgStore};
use leasehold_sqlite::{Durability, SqliteStore};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Store time at which manual clocks start (2023-11-14, any fixed value works).
pub const MANUAL_EPOCH: StoreTime = StoreTime(1_700_000_000_000);

/// Jobs raced over by the concurrent-claimers case on Postgres.
pub const PG_RACE_JOBS: usize = 10_000;

/// The reference memory store on a manual clock.
pub struct MemoryHarness;

impl Harness for MemoryHarness {
    type Store = MemoryStore;

    fn name(&self) -> String {
        "memory".into()
    }

    async fn fresh(&self, policy: Policy) -> Fixture<MemoryStore> {
        let clock = ManualStoreClock::new(MANUAL_EPOCH);
        Fixture {
            store: Arc::new(MemoryStore::with_clock(policy, clock.clone())),
            time: TimeControl::Manual(clock),
        }
    }

    async fn events(&self, store: &MemoryStore) -> Option<Vec<Event>> {
        Some(store.events())
    }
}

/// A memory harness for [`leasehold_conformance::conformance_tests!`].
pub async fn memory_harness() -> Option<MemoryHarness> {
    Some(MemoryHarness)
}

/// SQLite on a fresh file per store, manual clock.
pub struct SqliteHarness;

/// Opens a migrated SQLite store on a new file in a new temp directory,
/// deleted when the store is dropped.
pub async fn sqlite_store(
    policy: Policy,
    clock: ManualStoreClock,
) -> Guarded<SqliteStore, tempfile::TempDir> {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::builder(dir.path().join("jobs.db"))
        .policy(policy)
        .clock(clock)
        // Tests need crash safety, not power-loss safety.
        .durability(Durability::Normal)
        .open()
        .await
        .expect("open sqlite");
    store.migrate().await.expect("migrate sqlite");
    Guarded::new(store, dir)
}

impl Harness for SqliteHarness {
    type Store = Guarded<SqliteStore, tempfile::TempDir>;

    fn name(&self) -> String {
        "sqlite".into()
    }

    async fn fresh(&self, policy: Policy) -> Fixture<Self::Store> {
        let clock = ManualStoreClock::new(MANUAL_EPOCH);
        Fixture {
            store: Arc::new(sqlite_store(policy, clock.clone()).await),
            time: TimeControl::Manual(clock),
        }
    }

    async fn events(&self, store: &Self::Store) -> Option<Vec<Event>> {
        Some(store.inner().events().await.expect("sqlite events"))
    }
}

/// A SQLite harness for [`leasehold_conformance::conformance_tests!`].
pub async fn sqlite_harness() -> Option<SqliteHarness> {
    Some(SqliteHarness)
}

/// `DATABASE_URL`, or `None` after a loud SKIP message.
///
/// # Panics
/// When `DATABASE_URL` is unset and `CI` is set: Postgres tests must run in CI.
pub fn database_url() -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            let ci = std::env::var("CI").map(|v| !v.is_empty()).unwrap_or(false);
            assert!(
                !ci,
                "DATABASE_URL is not set but CI is: the Postgres tests must run in CI. \
                 Run them under scripts/with-postgres.sh"
            );
            // Straight to the stderr handle: the test harness captures
            // `eprintln!` of passing tests, and this must be seen. Once per
            // test binary.
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "\n\
                     ********************************************************************\n\
                     *** SKIP: DATABASE_URL is not set, Postgres tests did NOT run.     ***\n\
                     *** Run: scripts/with-postgres.sh cargo test -p leasehold-tests    ***\n\
                     ********************************************************************\n"
                );
            });
            None
        }
    }
}

/// Where a [`PgHarness`] store takes its time from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PgClock {
    /// The database's own clock: time cases wait for real.
    Database,
    /// A manual clock override (tests only): time cases step it.
    Manual,
}

/// Postgres, a fresh schema per store.
pub struct PgHarness {
    url: String,
    clock: PgClock,
}

static SCHEMA_SEQ: AtomicU64 = AtomicU64::new(0);

/// A schema name unique to this process and call.
pub fn unique_schema() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "lh_t_{}_{}_{}",
        std::process::id(),
        SCHEMA_SEQ.fetch_add(1, Ordering::Relaxed),
        nanos
    )
}

/// Drops its schema (in a thread of its own, since drop cannot await).
pub struct SchemaGuard {
    url: String,
    schema: String,
}

impl SchemaGuard {
    /// Drops `schema` of the database at `url` when it goes out of scope.
    pub fn new(url: impl Into<String>, schema: impl Into<String>) -> Self {
        SchemaGuard {
            url: url.into(),
            schema: schema.into(),
        }
    }
}

impl Drop for SchemaGuard {
    fn drop(&mut self) {
        let (url, schema) = (self.url.clone(), self.schema.clone());
        let cleanup = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                use sqlx::Connection;
                if let Ok(mut c) = sqlx::PgConnection::connect(&url).await {
                    let _ = sqlx::query(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                        .execute(&mut c)
                        .await;
                    let _ = c.close().await;
                }
            });
        });
        let _ = cleanup.join();
    }
}

/// Connects a migrated store in a fresh schema of `url`, dropped with it.
pub async fn pg_store(
    url: &str,
    policy: Policy,
    clock: Option<ManualStoreClock>,
) -> Guarded<PgStore, SchemaGuard> {
    let schema = unique_schema();
    let mut b = PgStore::builder(url)
        .schema(schema.clone())
        .application_name(schema.clone())
        .policy(policy)
        .max_connections(8);
    if let Some(c) = clock {
        b = b.clock_override(c);
    }
    let store = b.connect().await.expect("connect postgres");
    store.migrate().await.expect("migrate postgres");
    Guarded::new(store, SchemaGuard::new(url, schema))
}

impl Harness for PgHarness {
    type Store = Guarded<PgStore, SchemaGuard>;

    fn name(&self) -> String {
        match self.clock {
            PgClock::Database => "postgres(db clock)".into(),
            PgClock::Manual => "postgres(manual clock)".into(),
        }
    }

    async fn fresh(&self, policy: Policy) -> Fixture<Self::Store> {
        match self.clock {
            PgClock::Database => Fixture {
                store: Arc::new(pg_store(&self.url, policy, None).await),
                time: TimeControl::Real,
            },
            PgClock::Manual => {
                let clock = ManualStoreClock::new(MANUAL_EPOCH);
                Fixture {
                    store: Arc::new(pg_store(&self.url, policy, Some(clock.clone())).await),
                    time: TimeControl::Manual(clock),
                }
            }
        }
    }

    fn race_jobs(&self) -> usize {
        PG_RACE_JOBS
    }

    async fn events(&self, store: &Self::Store) -> Option<Vec<Event>> {
        Some(store.inner().events().await.expect("postgres events"))
    }
}

/// A Postgres harness on the database clock, or `None` (skip).
pub async fn pg_db_clock_harness() -> Option<PgHarness> {
    database_url().map(|url| PgHarness {
        url,
        clock: PgClock::Database,
    })
}

/// A Postgres harness on a manual clock override, or `None` (skip).
pub async fn pg_manual_clock_harness() -> Option<PgHarness> {
    database_url().map(|url| PgHarness {
        url,
        clock: PgClock::Manual,
    })
}

/// Postgres through [`Coalescing`] (batched claims and releases), a fresh
/// schema per store, manual clock.
pub struct PgCoalescingHarness {
    url: String,
}

impl Harness for PgCoalescingHarness {
    type Store = Guarded<Coalescing, SchemaGuard>;

    fn name(&self) -> String {
        "postgres(coalescing)".into()
    }

    async fn fresh(&self, policy: Policy) -> Fixture<Self::Store> {
        let clock = ManualStoreClock::new(MANUAL_EPOCH);
        let Guarded { store, _guard } = pg_store(&self.url, policy, Some(clock.clone())).await;
        let coalescing = Coalescing::new(Arc::new(store), 64, 2);
        Fixture {
            store: Arc::new(Guarded::new(coalescing, _guard)),
            time: TimeControl::Manual(clock),
        }
    }

    fn race_jobs(&self) -> usize {
        PG_RACE_JOBS
    }

    async fn events(&self, store: &Self::Store) -> Option<Vec<Event>> {
        Some(
            store
                .inner()
                .inner()
                .events()
                .await
                .expect("postgres events"),
        )
    }
}

/// A coalescing Postgres harness, or `None` (skip).
pub async fn pg_coalescing_harness() -> Option<PgCoalescingHarness> {
    database_url().map(|url| PgCoalescingHarness { url })
}

/// A poll of `queue` by worker `w`: up to 4 jobs on a 30 s lease (the
/// idle-claim tests of both SQL stores).
pub fn poll(queue: &str) -> leasehold_core::ClaimRequest {
    leasehold_core::ClaimRequest {
        worker: leasehold_core::WorkerId::new("w"),
        queue: queue.into(),
        lease: leasehold_core::Millis(30_000),
        max: 4,
    }
}
