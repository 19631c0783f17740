//! Errors of a chaos run that stop it (as opposed to violations, which are
//! its findings). Each names what went wrong and where.

use std::path::{Path, PathBuf};

/// A chaos run could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum ChaosError {
    /// A bad argument.
    #[error("bad argument {flag}: {reason}")]
    BadArg {
        /// The flag.
        flag: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A file or process operation failed.
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// On which file or program.
        path: PathBuf,
        /// The operating system's answer.
        source: std::io::Error,
    },
    /// A side-effect log line that is not a log line.
    #[error("{}:{line}: {what}", path.display())]
    BadLog {
        /// The log.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        what: String,
    },
    /// The store refused or failed a harness operation.
    #[error("store: {what}: {error}")]
    Store {
        /// What the harness was doing.
        what: &'static str,
        /// The store's error.
        error: leasehold_core::StoreError,
    },
    /// The worker binary is missing.
    #[error("worker binary {} not found; build it with `cargo build --release -p leasehold-chaos` or pass --worker-bin", path.display())]
    NoWorkerBinary {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// A fault could not be injected (for example `pg_ctl` failed).
    #[error("nemesis: {0}")]
    Nemesis(String),
    /// Stopped by SIGINT or SIGTERM.
    #[error("interrupted; worker processes killed")]
    Interrupted,
}

impl ChaosError {
    /// An I/O error on `path` while doing `what`.
    pub fn io(what: &'static str, path: &Path, source: std::io::Error) -> ChaosError {
        ChaosError::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    }

    /// A store error while doing `what`.
    pub fn store(what: &'static str, error: leasehold_core::StoreError) -> ChaosError {
        ChaosError::Store { what, error }
    }
}
