//! Runs one SQL seed's threads under Linux's batch scheduling policy
//! (`SCHED_BATCH`) while the seed runs.
//!
//! SQLite's driver (`sqlx`) answers a statement over a channel, one
//! message per row and one for the result, from the connection's own
//! thread; the seed's thread waits for them on the same CPU (`pin.rs`).
//! Under the default policy each message wakes the waiting thread and it
//! preempts the connection's thread at once, takes that one message and
//! waits again: two switches a row. A thread under `SCHED_BATCH` is never
//! preempted for by a wake-up, so the connection's thread sends the whole
//! answer (up to its channel's bound) before the seed's thread runs and
//! takes it all. Measured on one scenario of the library (3 seeds, one
//! at a time): 31,637 context switches under the default policy, 17,896
//! under this one.
//!
//! Threads started while the policy is on (the connection threads)
//! inherit it; the seed's thread gets its policy back when the seed ends.
//! Which thread runs when never reaches the simulation: only how fast.

/// Puts the calling thread under `SCHED_BATCH` until the guard is
/// dropped. Does nothing off Linux, or where the thread is not under the
/// default policy (a real-time thread keeps its own).
pub(crate) fn this_thread() -> Batched {
    #[cfg(target_os = "linux")]
    {
        Batched(linux::batch())
    }
    #[cfg(not(target_os = "linux"))]
    {
        Batched(false)
    }
}

/// A thread put under `SCHED_BATCH` by [`this_thread`] (when `.0`); its
/// default policy comes back on drop.
pub(crate) struct Batched(bool);

#[cfg(target_os = "linux")]
mod linux {
    fn set(policy: libc::c_int) -> bool {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 is the calling thread; `param` is a valid
        // parameter block for a non-real-time policy. A failure leaves the
        // thread under its policy, which is only slower.
        unsafe { libc::sched_setscheduler(0, policy, &param) == 0 }
    }

    pub(super) fn batch() -> bool {
        // SAFETY: pid 0 is the calling thread.
        let before = unsafe { libc::sched_getscheduler(0) };
        before == libc::SCHED_OTHER && set(libc::SCHED_BATCH)
    }

    impl Drop for super::Batched {
        fn drop(&mut self) {
            if self.0 {
                set(libc::SCHED_OTHER);
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    fn policy() -> libc::c_int {
        // SAFETY: pid 0 is the calling thread.
        unsafe { libc::sched_getscheduler(0) }
    }

    #[test]
    fn a_seed_and_the_threads_it_starts_run_as_a_batch_and_the_thread_gets_its_policy_back() {
        std::thread::spawn(|| {
            let before = policy();
            if before != libc::SCHED_OTHER {
                let _batched = super::this_thread();
                assert_eq!(policy(), before, "a policy of its own is kept");
                return;
            }
            {
                let _batched = super::this_thread();
                assert_eq!(policy(), libc::SCHED_BATCH, "the seed's thread");
                let child = std::thread::spawn(policy).join().unwrap();
                assert_eq!(child, libc::SCHED_BATCH, "a thread it starts inherits it");
            }
            assert_eq!(policy(), libc::SCHED_OTHER, "the policy comes back");
        })
        .join()
        .unwrap();
    }
}
