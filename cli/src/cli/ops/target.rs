//! Which store an operator's command talks to: `--store-url` (or
//! `LEASEHOLD_DATABASE_URL`), a PostgreSQL URL or a SQLite path, opened
//! and its schema checked before anything else happens.

use clap::Args;
use leasehold_postgres::PgStore;
use leasehold_sql::schema_state::SchemaState;
use leasehold_sqlite::SqliteStore;
use std::path::PathBuf;
use std::time::Duration;

/// How long a command waits to reach PostgreSQL before it gives up.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The store flags every operator command takes.
#[derive(Clone, Debug, Args)]
pub struct TargetArgs {
    /// The store: `postgres://…` (or `postgresql://…`), `sqlite://PATH`,
    /// or a SQLite file's path.
    #[arg(
        long,
        value_name = "URL",
        env = "LEASEHOLD_DATABASE_URL",
        hide_env_values = true
    )]
    pub store_url: Option<String>,
    /// PostgreSQL only: the schema holding leasehold's tables (default:
    /// the connection's search path).
    #[arg(long, value_name = "NAME")]
    pub schema: Option<String>,
}

/// A parsed `--store-url`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL database.
    Postgres(String),
}

impl Target {
    /// Parses a URL: `postgres://`/`postgresql://`, `sqlite://PATH` or
    /// `sqlite:PATH`, any other `scheme://` refused, else a file path.
    pub fn parse(url: &str) -> Result<Target, String> {
        let url = url.trim();
        if url.is_empty() {
            return Err("the store URL is empty".into());
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Target::Postgres(url.to_string()));
        }
        if let Some(path) = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
        {
            if path.is_empty() {
                return Err("sqlite:// needs a file path".into());
            }
            return Ok(Target::Sqlite(PathBuf::from(path)));
        }
        if let Some((scheme, _)) = url.split_once("://") {
            return Err(format!(
                "unsupported store URL scheme {scheme:?}: use postgres://… or a SQLite path"
            ));
        }
        Ok(Target::Sqlite(PathBuf::from(url)))
    }

    /// The target for messages, a password replaced by `***`.
    pub fn shown(&self) -> String {
        match self {
            Target::Sqlite(p) => format!("sqlite:{}", p.display()),
            Target::Postgres(url) => redact(url),
        }
    }
}

/// `url` with the password of its user info replaced by `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split(':').next().unwrap_or("");
            let masked = if user_info.contains(':') {
                format!("{user}:***")
            } else {
                user.to_string()
            };
            format!("{scheme}://{masked}@{host}{tail}")
        }
        None => url.to_string(),
    }
}

/// An open store of either kind (one per command, so the variants' sizes
/// do not matter).
#[allow(clippy::large_enum_variant)]
pub enum OpsStore {
    /// SQLite.
    Sqlite(SqliteStore),
    /// PostgreSQL.
    Postgres(PgStore),
}

/// Whether opening may create what is missing (`migrate` only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Open {
    /// The store must exist already: a missing SQLite file is an error,
    /// never created.
    Existing,
    /// `migrate`: a missing SQLite file is created (in an existing
    /// directory).
    CreateFile,
}

impl TargetArgs {
    /// The parsed target, or what is wrong.
    pub fn target(&self) -> Result<Target, String> {
        let url = self.store_url.as_deref().ok_or(
            "no store given: pass --store-url URL (postgres://… or a SQLite path) \
             or set LEASEHOLD_DATABASE_URL",
        )?;
        let target = Target::parse(url)?;
        if self.schema.is_some() && matches!(target, Target::Sqlite(_)) {
            return Err("--schema is for PostgreSQL; a SQLite file has no schemas".into());
        }
        Ok(target)
    }
}

impl OpsStore {
    /// Opens `target` (nothing is migrated).
    pub async fn open(target: &Target, schema: Option<&str>, mode: Open) -> Result<Self, String> {
        match target {
            Target::Sqlite(path) => {
                if mode == Open::Existing && !path.is_file() {
                    return Err(format!(
                        "no SQLite database at {} (create one with `leasehold migrate`)",
                        path.display()
                    ));
                }
                SqliteStore::builder(path)
                    .busy_timeout(CONNECT_TIMEOUT)
                    .open()
                    .await
                    .map(OpsStore::Sqlite)
                    .map_err(|e| format!("cannot open {}: {e}", target.shown()))
            }
            Target::Postgres(url) => {
                let mut b = PgStore::builder(url.clone())
                    .max_connections(2)
                    .acquire_timeout(CONNECT_TIMEOUT)
                    .application_name("leasehold-ops");
                if let Some(s) = schema {
                    b = b.schema(s);
                }
                b.connect()
                    .await
                    .map(OpsStore::Postgres)
                    .map_err(|e| format!("cannot reach the database at {}: {e}", target.shown()))
            }
        }
    }

    /// The schema's state against this binary's migrations.
    pub async fn schema_state(&self) -> Result<SchemaState, String> {
        let state = match self {
            OpsStore::Sqlite(s) => s.schema_state().await,
            OpsStore::Postgres(s) => s.schema_state().await,
        };
        state.map_err(|e| format!("cannot read the schema version: {e}"))
    }

    /// Refuses a store whose schema is not exactly this binary's: missing,
    /// behind (migrate first) or newer (a newer binary migrated it).
    pub async fn require_current_schema(&self) -> Result<i64, String> {
        match self.schema_state().await? {
            SchemaState::Current { version } => Ok(version),
            other => Err(other.to_string()),
        }
    }

    /// Closes the pools, so a SQLite file is left with no connection.
    pub async fn close(&self) {
        match self {
            OpsStore::Sqlite(s) => s.close().await,
            OpsStore::Postgres(s) => s.close().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_pick_the_store() {
        let named = [
            (
                "postgres://u@h/db",
                Target::Postgres("postgres://u@h/db".into()),
            ),
            ("sqlite:///tmp/x.db", Target::Sqlite("/tmp/x.db".into())),
            ("sqlite:jobs.db", Target::Sqlite("jobs.db".into())),
            ("./jobs.db", Target::Sqlite("./jobs.db".into())),
        ];
        for (url, want) in named {
            assert_eq!(Target::parse(url), Ok(want), "{url}");
        }
        let bad = Target::parse("mysql://h/db").unwrap_err();
        assert!(
            bad.contains("unsupported store URL scheme \"mysql\""),
            "{bad}"
        );
        assert!(Target::parse("  ").is_err());
        assert!(Target::parse("sqlite://").is_err());
    }

    #[test]
    fn passwords_stay_out_of_messages() {
        assert_eq!(
            redact("postgres://me:secret@db:5432/jobs"),
            "postgres://me:***@db:5432/jobs"
        );
        assert_eq!(redact("postgres://me@db/jobs"), "postgres://me@db/jobs");
        assert_eq!(redact("postgres://db/jobs"), "postgres://db/jobs");
    }
}
