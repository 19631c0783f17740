//! What a PostgreSQL run wrote to the write-ahead log, and whether the
//! server had to create WAL segment files for it.
//!
//! A freshly initialised cluster has few WAL segment files; until it has
//! written about `max_wal_size` of WAL it creates (and, with the default
//! `wal_init_zero = on`, zero-fills) a new 16 MB file every 16 MB instead
//! of recycling an old one. Measured here, that costs a fresh cluster a
//! fifth of its throughput, so a figure taken while files were created is
//! not the steady state a long-running server gives, and the report says
//! so next to it. Nothing here changes a server setting.
//!
//! Reading `pg_stat_wal` needs no privilege; listing `pg_wal`
//! (`pg_ls_waldir`) needs superuser or `pg_monitor`, so the file count is
//! `None` for other roles.

use serde_json::{json, Value};
use sqlx::PgPool;

/// The server's WAL counters at one moment.
#[derive(Clone, Copy, Debug)]
pub struct WalSample {
    /// `pg_stat_wal.wal_bytes` (cumulative since the last reset).
    bytes: u64,
    /// Files in `pg_wal`, when the role may list them.
    files: Option<u64>,
}

/// WAL written between two samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WalUse {
    /// Bytes of WAL written (by every session on the server).
    pub bytes: u64,
    /// WAL segment files that appeared (created, not recycled); `None`
    /// when `pg_wal` could not be listed.
    pub new_files: Option<u64>,
}

impl WalSample {
    /// Samples the server; `None` when `pg_stat_wal` cannot be read
    /// (PostgreSQL before 14).
    pub async fn now(pool: &PgPool) -> Option<WalSample> {
        let bytes: i64 = sqlx::query_scalar("SELECT wal_bytes::bigint FROM pg_stat_wal")
            .fetch_one(pool)
            .await
            .ok()?;
        let files: Option<i64> = sqlx::query_scalar("SELECT count(*) FROM pg_ls_waldir()")
            .fetch_one(pool)
            .await
            .ok();
        Some(WalSample {
            bytes: u64::try_from(bytes).unwrap_or(0),
            files: files.and_then(|f| u64::try_from(f).ok()),
        })
    }

    /// What was written from `self` to `later`.
    pub fn until(&self, later: &WalSample) -> WalUse {
        WalUse {
            bytes: later.bytes.saturating_sub(self.bytes),
            // A checkpoint may remove files too: a net growth is a lower
            // bound on the files created.
            new_files: self
                .files
                .zip(later.files)
                .map(|(a, b)| b.saturating_sub(a)),
        }
    }
}

/// The report line for a run of `jobs` jobs (each drained twice in worker
/// mode: `drains` drains).
pub fn line(wal: WalUse, jobs: u64, drains: u64) -> String {
    let per_job = wal.bytes as f64 / (jobs.max(1) * drains.max(1)) as f64;
    let files = match wal.new_files {
        Some(0) => "no new WAL segment files (the server recycled old ones: steady state)".into(),
        Some(n) => format!(
            "{n} new WAL segment files created during the run (a cluster still growing its \
             pg_wal to max_wal_size; expect lower throughput than on a warm one)"
        ),
        None => "WAL segment files not listed (needs superuser or pg_monitor)".into(),
    };
    format!(
        "WAL: {:.1} MB written, {per_job:.0} bytes per drained job; {files}",
        wal.bytes as f64 / 1e6
    )
}

/// The JSON form.
pub fn json(wal: Option<WalUse>) -> Value {
    match wal {
        Some(w) => json!({ "bytes": w.bytes, "new_segment_files": w.new_files }),
        None => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_grew_pg_wal_says_so() {
        let a = WalSample {
            bytes: 1_000,
            files: Some(10),
        };
        let b = WalSample {
            bytes: 2_001_000,
            files: Some(13),
        };
        let w = a.until(&b);
        assert_eq!(
            w,
            WalUse {
                bytes: 2_000_000,
                new_files: Some(3)
            }
        );
        let l = line(w, 500, 2);
        assert!(l.contains("2000 bytes per drained job"), "{l}");
        assert!(l.contains("3 new WAL segment files"), "{l}");
        let steady = line(a.until(&a), 1, 1);
        assert!(steady.contains("steady state"), "{steady}");
        let unlisted = line(
            WalSample {
                bytes: 0,
                files: None,
            }
            .until(&b),
            1,
            1,
        );
        assert!(unlisted.contains("not listed"), "{unlisted}");
        assert_eq!(json(Some(w))["new_segment_files"], 3);
        assert!(json(None).is_null());
    }
}
