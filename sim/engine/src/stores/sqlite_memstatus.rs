//! SQLite's memory statistics, off in the simulator's process.
//!
//! With them on (SQLite's default), every allocation and free inside
//! SQLite takes one process-wide mutex to count bytes. The simulator runs
//! several SQL seeds at once, each with connections on threads of their
//! own, and they all queue on that one lock: a profile of the library on
//! SQLite showed `pthread_mutex_lock` at about 4 % of all samples, most of
//! it under `sqlite3Malloc`, and the waits for it besides. The counts
//! serve only `sqlite3_memory_used` and a soft heap limit, which the
//! adapter does not set, so no answer of the store can depend on them.
//!
//! SQLite accepts the setting only before it initializes; this runs before
//! the simulator opens its first SQLite database, and where something in
//! the process opened one first, SQLite refuses it and keeps counting
//! (only slower).

use std::sync::Once;

/// Turns SQLite's memory statistics off for this process, once, if
/// SQLite has not initialized yet.
pub(crate) fn off() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: SQLITE_CONFIG_MEMSTATUS takes one int argument; before
        // SQLite initializes, `sqlite3_config` only sets a global, and
        // afterwards it returns SQLITE_MISUSE without touching anything.
        // A refusal (SQLite initialized already) leaves the statistics on:
        // only slower, so it is not an error.
        let _ = unsafe {
            libsqlite3_sys::sqlite3_config(
                libsqlite3_sys::SQLITE_CONFIG_MEMSTATUS,
                0 as std::os::raw::c_int,
            )
        };
    });
}
