//! Keeps one SQL seed's threads on one CPU while the seed runs.
//!
//! A seed on a SQL store is one logical thread: the simulation thread runs
//! each store call to its end on the seed's driver (`driver.rs`) before it
//! goes on, and SQLite's driver (`sqlx`) runs every connection on a thread
//! of its own, so each statement is a hand-off to that thread and back. On
//! separate CPUs each hand-off wakes another CPU (or waits for a busy one);
//! on one CPU the waker blocks and the wakee runs at once. Issue 46
//! measured 8 scenarios of the library on SQLite, one seed at a time, 1.4-1.7x
//! as fast pinned to one CPU as unpinned, on a loaded machine
//! (docs/PERFORMANCE.md).
//!
//! Threads started while the seed's thread is pinned (the connection
//! threads) inherit its CPU. Seeds running on different threads are spread
//! over the CPUs the process may use, one CPU per thread in turn. Where the
//! thread runs never reaches the simulation: only how fast.

/// Pins the calling thread to one CPU until the guard is dropped (then it
/// may run where it could before). Does nothing where the process may use
/// only one CPU, or off Linux.
pub(crate) fn this_thread() -> Pinned {
    #[cfg(target_os = "linux")]
    {
        linux::pin()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Pinned(())
    }
}

/// A thread pinned by [`this_thread`]; its CPUs come back on drop.
pub(crate) struct Pinned(
    #[cfg(target_os = "linux")] Option<libc::cpu_set_t>,
    #[cfg(not(target_os = "linux"))] (),
);

#[cfg(target_os = "linux")]
mod linux {
    use super::Pinned;
    use std::cell::Cell;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The next thread's turn among the CPUs.
    static NEXT: AtomicUsize = AtomicUsize::new(0);

    thread_local! {
        /// This thread's turn, taken at its first seed.
        static TURN: Cell<Option<usize>> = const { Cell::new(None) };
    }

    fn current() -> Option<libc::cpu_set_t> {
        // SAFETY: a zeroed cpu_set_t is a valid empty set, and the kernel
        // writes at most its size.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0)
                .then_some(set)
        }
    }

    fn set(s: &libc::cpu_set_t) {
        // SAFETY: `s` is a valid set of the size given. A failure leaves
        // the thread where it was, which is only slower.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), s);
        }
    }

    pub(super) fn pin() -> Pinned {
        let Some(before) = current() else {
            return Pinned(None);
        };
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `c` is below the set's size.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &before) })
            .collect();
        if cpus.len() < 2 {
            return Pinned(None);
        }
        let turn = TURN.with(|t| {
            let turn = t
                .get()
                .unwrap_or_else(|| NEXT.fetch_add(1, Ordering::Relaxed));
            t.set(Some(turn));
            turn
        });
        // SAFETY: as in `current`; the CPU index is one the set held.
        let one = unsafe {
            let mut one: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpus[turn % cpus.len()], &mut one);
            one
        };
        set(&one);
        Pinned(Some(before))
    }

    impl Drop for Pinned {
        fn drop(&mut self) {
            if let Some(before) = self.0.take() {
                set(&before);
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    fn cpus() -> usize {
        // SAFETY: as in `linux::current`.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
                0
            );
            libc::CPU_COUNT(&set) as usize
        }
    }

    #[test]
    fn a_seed_and_the_threads_it_starts_share_one_cpu_and_the_thread_gets_its_cpus_back() {
        std::thread::spawn(|| {
            let before = cpus();
            {
                let _pinned = super::this_thread();
                let want = if before < 2 { before } else { 1 };
                assert_eq!(cpus(), want, "pinned to one CPU");
                let child = std::thread::spawn(cpus).join().unwrap();
                assert_eq!(child, want, "a thread it starts inherits the CPU");
            }
            assert_eq!(cpus(), before, "the thread may run where it could before");
        })
        .join()
        .unwrap();
    }
}
