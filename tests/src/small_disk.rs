//! A directory whose files a test can make unwritable as a full disk does,
//! and writable again.
//!
//! Where the test may mount (root), it is a small `tmpfs`: [`SmallDisk::fill`]
//! takes every free byte with a filler file, so SQLite's writes fail with
//! `ENOSPC` (`SQLITE_FULL`), and [`SmallDisk::free`] removes the filler.
//! Elsewhere (or with `LEASEHOLD_SMALL_DISK=limit`) it is a temp directory
//! and a file-size limit: `fill` lowers this process's `RLIMIT_FSIZE` to
//! the size of the largest file there, so that file cannot grow (for a
//! SQLite store that has written, its WAL: every commit appends to it) and
//! SQLite's writes fail with `EFBIG` (`SQLITE_IOERR_WRITE`), and `free`
//! restores the limit. Smaller files may still grow up to that size. The limit holds for the whole process: use it only in a test
//! binary with one test.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Bytes a filler write adds at a time.
const FILL_CHUNK: usize = 64 * 1024;
/// The environment variable that forces the file-size limit.
pub const FORCE_LIMIT: &str = "LEASEHOLD_SMALL_DISK";

/// How the disk is made full.
enum Kind {
    /// A mounted `tmpfs` of this many bytes.
    Tmpfs(u64),
    /// This process's file-size limit as it was before the test.
    SizeLimit(libc::rlimit),
}

/// See the module docs. Dropping it frees the disk and unmounts (lazily,
/// so open files cannot stop it) before the temp directory is removed.
pub struct SmallDisk {
    dir: tempfile::TempDir,
    kind: Kind,
}

impl SmallDisk {
    /// A `tmpfs` of `bytes` if this process may mount one, else a
    /// directory under a file-size limit.
    pub fn new(bytes: u64) -> Result<SmallDisk, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
        if std::env::var_os(FORCE_LIMIT).is_some_and(|v| v == "limit") || !mount(&dir, bytes) {
            return Ok(SmallDisk {
                dir,
                kind: Kind::SizeLimit(size_limit_mode()?),
            });
        }
        Ok(SmallDisk {
            dir,
            kind: Kind::Tmpfs(bytes),
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// What the store's error must say once the disk is full: SQLite
    /// reports `ENOSPC` as `SQLITE_FULL` and `EFBIG` as `SQLITE_IOERR_WRITE`.
    pub fn cause(&self) -> &'static str {
        match self.kind {
            Kind::Tmpfs(_) => "disk full (SQLITE_FULL)",
            Kind::SizeLimit(_) => "disk I/O error (SQLITE_IOERR",
        }
    }

    /// Whether the disk fills by a file-size limit (not a `tmpfs`).
    pub fn uses_size_limit(&self) -> bool {
        matches!(self.kind, Kind::SizeLimit(_))
    }

    /// Which way the disk fills, for the test's output.
    pub fn describe(&self) -> &'static str {
        match self.kind {
            Kind::Tmpfs(_) => "a tmpfs filled by a filler file",
            Kind::SizeLimit(_) => "a file-size limit (RLIMIT_FSIZE)",
        }
    }

    /// Makes the disk full, as another program filling it would.
    pub fn fill(&self) -> Result<(), String> {
        match self.kind {
            Kind::Tmpfs(bytes) => fill_tmpfs(&self.filler(), bytes),
            Kind::SizeLimit(saved) => {
                let largest = largest_file(self.path())?;
                set_limit(libc::rlimit {
                    rlim_cur: largest,
                    rlim_max: saved.rlim_max,
                })
            }
        }
    }

    /// Frees the space [`SmallDisk::fill`] took.
    pub fn free(&self) -> Result<(), String> {
        match self.kind {
            Kind::Tmpfs(_) => {
                std::fs::remove_file(self.filler()).map_err(|e| format!("remove filler: {e}"))
            }
            Kind::SizeLimit(saved) => set_limit(saved),
        }
    }

    fn filler(&self) -> PathBuf {
        self.path().join("filler")
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        match self.kind {
            Kind::Tmpfs(_) => {
                let unmounted = Command::new("umount")
                    .arg("-l")
                    .arg(self.dir.path())
                    .status()
                    .is_ok_and(|s| s.success());
                if !unmounted {
                    eprintln!("could not unmount {}", self.dir.path().display());
                }
            }
            Kind::SizeLimit(saved) => {
                if let Err(e) = set_limit(saved) {
                    eprintln!("could not restore the file-size limit: {e}");
                }
            }
        }
    }
}

/// Mounts a `tmpfs` of `bytes` on `dir`; false if this process may not.
fn mount(dir: &tempfile::TempDir, bytes: u64) -> bool {
    Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
        .arg(dir.path())
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Writes a filler file until the file system says it has no space left.
fn fill_tmpfs(filler: &Path, bytes: u64) -> Result<(), String> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(filler)
        .map_err(|e| format!("open filler: {e}"))?;
    let chunk = vec![0xA5u8; FILL_CHUNK];
    // The disk holds at most `bytes`: a bound on the chunks.
    for _ in 0..=bytes / FILL_CHUNK as u64 + 1 {
        match file.write(&chunk) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::StorageFull => return Ok(()),
            Err(e) => return Err(format!("filling: {e}")),
        }
    }
    Err(format!("a {bytes} byte disk did not fill"))
}

/// The size of the largest file directly in `dir`.
fn largest_file(dir: &Path) -> Result<u64, String> {
    let mut largest = 0;
    for entry in std::fs::read_dir(dir).map_err(|e| format!("read {}: {e}", dir.display()))? {
        let meta = entry
            .and_then(|e| e.metadata())
            .map_err(|e| format!("stat: {e}"))?;
        largest = largest.max(meta.len());
    }
    Ok(largest)
}

/// Ignores `SIGXFSZ`, so a write past the limit fails with `EFBIG` instead
/// of killing the process, and answers the current limit.
fn size_limit_mode() -> Result<libc::rlimit, String> {
    // SAFETY: setting a signal's disposition to SIG_IGN installs no
    // handler code; it only changes what the kernel does on SIGXFSZ.
    if unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) } == libc::SIG_ERR {
        return Err(format!(
            "ignore SIGXFSZ: {}",
            std::io::Error::last_os_error()
        ));
    }
    let mut saved = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `saved` is a valid, writable rlimit for the call's duration.
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut saved) } != 0 {
        return Err(format!("getrlimit: {}", std::io::Error::last_os_error()));
    }
    Ok(saved)
}

fn set_limit(limit: libc::rlimit) -> Result<(), String> {
    // SAFETY: `limit` is a valid rlimit, read only for the call's duration.
    if unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &limit) } != 0 {
        return Err(format!("setrlimit: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}
