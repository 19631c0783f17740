//! `leasehold-sqlite` under simulation: a fresh database file per seed, in
//! its own temporary directory, removed at the end of the seed.
//!
//! Durability is `synchronous = NORMAL` (WAL): a commit survives a crash of
//! the process, which is the crash the simulator injects (it does not cut
//! the power), and the run does not wait for an `fsync` per operation.
//!
//! Each seed's file starts as a copy of one template the factory migrates
//! at its first seed (checkpointed and closed, so the file alone holds the
//! schema): opening a store, migrating it and closing it again per seed
//! cost more than many a short seed's operations. The migrations are fixed
//! SQL, the same for every policy, catalogue variant and pool size, so the
//! copy is the database a migration per seed made, row for row.

// The store traits return `impl Future + Send`; these bodies clone what they
// need before the `async` block, so the futures own it and can run on the
// driver thread: `async fn` would borrow the arguments instead.
#![allow(clippy::manual_async_fn)]

use super::{SeedContext, SetupError, SimStore, SimStoreClock, StoreFactory};
use leasehold_core::tx_faults::TxFaults;
use leasehold_core::{Event, StoreError};
use leasehold_model::catalogue::Variant;
use leasehold_sqlite::{Durability, SqliteStore};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Pooled connections per seed: the store host runs one operation at a time.
const POOL: u32 = 2;
/// Pooled connections per seed with interleaving: one per call of a
/// group, and one more.
const INTERLEAVED_POOL: u32 = super::interleave::MAX_GROUP as u32 + 1;

/// Makes a [`SqliteStore`] per seed.
#[derive(Clone, Debug, Default)]
pub struct SqliteFactory {
    dir: Option<PathBuf>,
    /// The migrated file each seed's database is a copy of, made at the
    /// first seed (shared by the factory's clones).
    template: Arc<tokio::sync::OnceCell<Template>>,
}

/// A migrated, checkpointed and closed database file, removed with the
/// factory's last clone.
#[derive(Debug)]
struct Template {
    dir: tempfile::TempDir,
}

impl Template {
    fn path(&self) -> PathBuf {
        self.dir.path().join("leasehold.db")
    }
}

impl SqliteFactory {
    /// Database files go into fresh directories under the system's
    /// temporary directory, or under `dir` when given.
    pub fn new(dir: Option<PathBuf>) -> Self {
        SqliteFactory {
            dir,
            template: Arc::default(),
        }
    }

    /// The directory given at construction, if any.
    pub fn dir(&self) -> Option<&std::path::Path> {
        self.dir.as_deref()
    }
}

/// One seed's database file (its directory is removed on drop).
pub struct SqliteDatabase {
    dir: tempfile::TempDir,
}

impl SqliteDatabase {
    fn path(&self) -> PathBuf {
        self.dir.path().join("leasehold.db")
    }
}

impl SimStore for SqliteStore {
    fn audit_log(&self) -> impl Future<Output = Result<Option<Vec<Event>>, StoreError>> + Send {
        async { self.events().await.map(Some) }
    }

    fn close(&self) -> impl Future<Output = ()> + Send {
        SqliteStore::close(self)
    }

    fn tx_faults(&self) -> Option<&TxFaults> {
        Some(SqliteStore::tx_faults(self))
    }

    fn settle(&self) -> impl Future<Output = Result<(), String>> + Send {
        // Writes have a pool of their own; a cancelled write leaves its
        // connection busy there. A connection the store keeps between
        // operations is at rest.
        let at_rest = self.connections_at_rest();
        async move { super::pool_settled(at_rest).await }
    }
}

fn setup(what: &str, e: impl std::fmt::Display) -> SetupError {
    SetupError::new(format!("sqlite: {what}: {e}"))
}

impl SqliteFactory {
    /// Migrates a fresh file in a directory of its own under `dir`, writes
    /// its WAL into it, and closes it: the file alone is the database.
    async fn make_template(dir: &Path, ctx: &SeedContext) -> Result<Template, SetupError> {
        let tmp = tempfile::Builder::new()
            .prefix("leasehold-sim-template-")
            .tempdir_in(dir)
            .map_err(|e| setup(&format!("cannot make a directory in {}", dir.display()), e))?;
        let template = Template { dir: tmp };
        let store = Self::open_at(template.path(), ctx, SimStoreClock::default()).await?;
        let migrated = store.migrate().await;
        let checkpointed = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(store.write_pool())
            .await;
        store.close().await;
        migrated.map_err(|e| setup("migration", e))?;
        checkpointed.map_err(|e| setup("checkpoint of the migrated template", e))?;
        let wal = template.dir.path().join("leasehold.db-wal");
        let left = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
        if left > 0 {
            return Err(setup(
                "template",
                format!(
                    "{} still holds {left} bytes after its checkpoint",
                    wal.display()
                ),
            ));
        }
        Ok(template)
    }

    async fn open_at(
        path: PathBuf,
        ctx: &SeedContext,
        clock: SimStoreClock,
    ) -> Result<SqliteStore, SetupError> {
        let builder = SqliteStore::builder(&path)
            .policy(ctx.policy.clone())
            .clock(clock)
            .durability(Durability::Normal)
            .max_connections(if ctx.interleave {
                INTERLEAVED_POOL
            } else {
                POOL
            });
        #[cfg(feature = "catalogue")]
        let builder = builder
            .variant(super::store_side(ctx.variant))
            .map_err(|e| setup("catalogue", e))?;
        builder
            .open()
            .await
            .map_err(|e| setup(&format!("cannot open {}", path.display()), e))
    }
}

impl StoreFactory for SqliteFactory {
    type Store = SqliteStore;
    type Database = SqliteDatabase;

    fn name(&self) -> String {
        "sqlite".into()
    }

    /// sqlx runs each SQLite connection on a thread of its own and
    /// answers over channels: no socket, so no reactor.
    fn driver_needs_io(&self) -> bool {
        false
    }

    fn carries_store_variant(&self, v: Variant) -> bool {
        #[cfg(feature = "catalogue")]
        {
            SqliteStore::carries_variant(v)
        }
        #[cfg(not(feature = "catalogue"))]
        match v {}
    }

    fn create(
        &self,
        ctx: &SeedContext,
    ) -> impl Future<Output = Result<Self::Database, SetupError>> + Send {
        let dir = self.dir.clone().unwrap_or_else(std::env::temp_dir);
        let (ctx, template) = (ctx.clone(), self.template.clone());
        // Before the first database this process opens.
        super::sqlite_memstatus::off();
        async move {
            let template = template
                .get_or_try_init(|| Self::make_template(&dir, &ctx))
                .await?;
            let tmp = tempfile::Builder::new()
                .prefix("leasehold-sim-")
                .tempdir_in(&dir)
                .map_err(|e| setup(&format!("cannot make a directory in {}", dir.display()), e))?;
            let db = SqliteDatabase { dir: tmp };
            std::fs::copy(template.path(), db.path()).map_err(|e| {
                setup(
                    &format!("cannot copy the template to {}", db.path().display()),
                    e,
                )
            })?;
            Ok(db)
        }
    }

    fn open(
        &self,
        db: &Self::Database,
        ctx: &SeedContext,
        clock: SimStoreClock,
    ) -> impl Future<Output = Result<Self::Store, SetupError>> + Send {
        let (path, ctx) = (db.path(), ctx.clone());
        async move { Self::open_at(path, &ctx, clock).await }
    }
}
