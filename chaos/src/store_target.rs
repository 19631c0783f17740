//! The store a chaos run uses, and how to restart its PostgreSQL server.

use std::path::PathBuf;

/// How to restart the PostgreSQL server (`pg_ctl restart -m immediate`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgControl {
    /// The `pg_ctl` program.
    pub pg_ctl: PathBuf,
    /// The cluster's data directory.
    pub data: PathBuf,
    /// The server log file `pg_ctl -l` writes to.
    pub log: Option<PathBuf>,
    /// The user the server runs as (`runuser -u USER`), when we are root.
    pub user: Option<String>,
}

/// The store the run uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreTarget {
    /// A PostgreSQL database (a fresh schema per run).
    Postgres {
        /// The connection URL.
        url: String,
        /// Server control for the restart fault, when known.
        control: Option<PgControl>,
    },
    /// A SQLite file shared by the worker processes.
    Sqlite,
}

impl StoreTarget {
    /// `postgres` or `sqlite`.
    pub fn name(&self) -> &'static str {
        match self {
            StoreTarget::Postgres { .. } => "postgres",
            StoreTarget::Sqlite => "sqlite",
        }
    }
}
