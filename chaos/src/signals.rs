//! Real signals to real processes (`kill(2)`), and who holds SQLite's
//! write lock (`/proc/locks`).

use std::io;

/// The signals the nemesis and the orchestrator send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGKILL: die now, mid-whatever.
    Kill,
    /// SIGSTOP: freeze (the GC-pause story).
    Stop,
    /// SIGCONT: resume after SIGSTOP.
    Cont,
    /// SIGTERM: graceful shutdown.
    Term,
}

impl Signal {
    fn raw(self) -> libc::c_int {
        match self {
            Signal::Kill => libc::SIGKILL,
            Signal::Stop => libc::SIGSTOP,
            Signal::Cont => libc::SIGCONT,
            Signal::Term => libc::SIGTERM,
        }
    }
}

/// Sends `sig` to process `pid`.
pub fn send(pid: u32, sig: Signal) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    if pid <= 0 {
        // kill(0 or negative) would signal process groups: never.
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "pid must be positive",
        ));
    }
    // SAFETY: kill(2) with a positive pid signals exactly that process.
    if unsafe { libc::kill(pid, sig.raw()) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// SQLite's WAL write lock is an exclusive POSIX lock on byte 120 of the
/// `-shm` file (`UNIX_SHM_BASE + WAL_WRITE_LOCK` in `os_unix.c`): whoever
/// holds it is inside a write transaction.
pub const WAL_WRITE_LOCK_BYTE: u64 = 120;

/// Whether process `pid` holds the WAL write lock of the `-shm` file with
/// inode `shm_inode`, according to `/proc/locks`.
pub fn holds_wal_write_lock(pid: u32, shm_inode: u64) -> io::Result<bool> {
    let text = std::fs::read_to_string("/proc/locks")?;
    Ok(text
        .lines()
        .any(|l| lock_line_is_write_lock(l, pid, shm_inode)))
}

/// One `/proc/locks` line, e.g. `3: POSIX  ADVISORY  WRITE 4242 08:01:1234 120 120`;
/// lines of waiters (`3: -> POSIX ...`) hold nothing.
fn lock_line_is_write_lock(line: &str, pid: u32, inode: u64) -> bool {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 8 || f[1] != "POSIX" || f[3] != "WRITE" {
        return false;
    }
    let pid_ok = f[4].parse::<u32>().ok() == Some(pid);
    let inode_ok = f[5].rsplit(':').next().and_then(|i| i.parse::<u64>().ok()) == Some(inode);
    let start = f[6].parse::<u64>().unwrap_or(u64::MAX);
    // "EOF" means to the end of the file.
    let end = if f[7] == "EOF" {
        u64::MAX
    } else {
        f[7].parse::<u64>().unwrap_or(0)
    };
    pid_ok && inode_ok && start <= WAL_WRITE_LOCK_BYTE && WAL_WRITE_LOCK_BYTE <= end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_locks_lines_are_read_as_the_kernel_writes_them() {
        let held = "1: POSIX  ADVISORY  WRITE 4242 08:01:99 120 120";
        assert!(lock_line_is_write_lock(held, 4242, 99));
        assert!(!lock_line_is_write_lock(held, 4243, 99), "another process");
        assert!(!lock_line_is_write_lock(held, 4242, 98), "another file");
        let read = "1: POSIX  ADVISORY  READ 4242 08:01:99 120 120";
        assert!(!lock_line_is_write_lock(read, 4242, 99));
        let other_byte = "1: POSIX  ADVISORY  WRITE 4242 08:01:99 128 128";
        assert!(!lock_line_is_write_lock(other_byte, 4242, 99));
        let waiter = "1: -> POSIX  ADVISORY  WRITE 4242 08:01:99 120 120";
        assert!(!lock_line_is_write_lock(waiter, 4242, 99));
        assert!(lock_line_is_write_lock(
            "2: POSIX  ADVISORY  WRITE 4242 fd:00:99 0 EOF",
            4242,
            99
        ));
    }

    #[test]
    fn signals_refuse_process_groups() {
        assert!(send(0, Signal::Cont).is_err());
        // Our own process exists: SIGCONT to a running process is harmless.
        assert!(send(std::process::id(), Signal::Cont).is_ok());
    }
}
