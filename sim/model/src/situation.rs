//! The named situations ("sometimes" points) the simulator knows: states a
//! run should reach at least once for the library to test what it was
//! built to test. Antithesis calls these "sometimes" assertions; their
//! absence is a test gap, not a bug.
//!
//! This is the list and its meanings only, as [`crate::config::InvariantId`]
//! is for invariants: the engine's observer (`leasehold_sim::coverage`)
//! marks each one when a run reaches it, reading the recorded history; a
//! scenario's `[coverage] expects` names them and is validated against
//! [`BUILTIN`]. Reaching a situation changes nothing a run does.

/// A window of "within a tick", in milliseconds: the stepped engine's
/// tick, which the scenario files written for it still set. Situations
/// named "within a tick" use it.
pub const EDGE_MS: u64 = 10;

/// One built-in situation: its name and what reaching it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Situation {
    /// The name a scenario declares and a report prints.
    pub name: &'static str,
    /// What the run did when it reached it, in one sentence.
    pub meaning: &'static str,
}

const fn s(name: &'static str, meaning: &'static str) -> Situation {
    Situation { name, meaning }
}

/// Every built-in situation, grouped by what it is about; the reports
/// print them in name order.
pub const BUILTIN: &[Situation] = &[
    // Renews and beliefs.
    s("renew-answered-within-a-tick-of-the-fence", "a renew's answer extended a worker's belief within a tick (EDGE_MS) before the belief would have ended"),
    s("renew-committed-after-self-fencing", "the store committed a renew after its worker had already fenced itself on that lease"),
    s("renew-answer-lost", "the store renewed a lease and the answer was lost on the way back"),
    s("owed-renew-sent-after-unavailable", "a worker whose renew's outcome was unknown sent the renew it owes on the same lease"),
    s("renew-answered-lost", "a renew was answered: lease lost"),
    s("drift-at-the-bound-with-a-renew-near-the-fence", "a worker whose clock drifts at exactly the declared bound had a renew answered within its fence margin of its belief deadline"),
    s("worker-fenced-while-partitioned", "a worker fenced itself on a lease while a partition cut it off the store"),
    s("two-workers-believe-one-job-within-a-tick", "one worker's belief in a job ended within a tick of another worker's claim of it"),
    // Releases.
    s("release-retried-after-conflict-near-expiry", "a release answered Conflict while its lease had less than a renew interval left was tried again"),
    s("release-retried-past-its-tries-while-its-lease-was-kept", "a worker sent one lease's release more times than its release_tries, the lease still renewed: a transient answer is not given up while the lease is kept"),
    s("release-answer-lost-and-retried", "the store committed a release whose answer was lost, and the worker sent it again"),
    s("release-answered-lost", "a release was answered: lease lost (a late commit refused)"),
    s("release-waiting-behind-a-merged-batch-lost-in-a-partition", "a merged batch of a worker process was lost to a partition while a release of that process waited behind it"),
    s("token-granted-while-a-stale-release-is-in-flight", "a claim granted a job a new token while a release of an older token of the job was sent and not yet answered"),
    s("lease-returned-at-shutdown", "a worker shutting down gracefully returned a lease"),
    // Claims, sweeps and cancels.
    s("claim-answer-lost-and-the-job-swept", "a claim's grant was lost on the way back and a sweep reclaimed that lease"),
    s("sweep-within-a-tick-of-expiry", "a sweep reclaimed a lease within a tick (EDGE_MS) of store time after it expired"),
    s("swept-while-the-holder-still-believes", "a sweep reclaimed a lease while its holder still believed it (paused, cut off or drifting)"),
    s("swept-job-claimed-by-another-worker", "a job reclaimed by a sweep was claimed again by another worker"),
    s("cancelled-batch-whose-claim-committed", "a worker's batch was cancelled inside the store's transaction after a claim of it had committed"),
    s("cancel-racing-a-claim", "a cancel of a job was sent before a claim of that job was served and answered after"),
    s("cancel-requested-on-a-running-job", "a cancel reached a running job (answered: cancel requested)"),
    s("job-died-at-its-retry-budget", "a job ended dead after using its whole attempt budget"),
    s("handler-running-past-its-belief-deadline", "a handler was still running after its worker's belief deadline for the lease had passed"),
    s("cancel-of-a-job-that-already-succeeded", "a cancel reached a job that had already succeeded (answered: already terminal)"),
    s("claims-of-two-workers-served-within-a-tick", "the store served claims of two workers on one queue within a tick of each other while jobs were waiting"),
    s("merged-batch-carried-claims-of-two-workers", "one merged batch of a worker process carried the claims of two of its workers"),
    s("worker-at-its-limit-on-one-queue-claims-another", "a worker holding as many leases of one queue as its limit for that queue claimed on another queue"),
    // The store host.
    s("store-restart-just-before-a-lease-deadline", "the store host crashed while a lease had less than a renew interval left before its expiry"),
    s("store-crash-with-a-request-in-flight", "a request sent before the store host crashed got an unknown outcome after it"),
    s("store-conflict-answered", "the store answered a write Conflict"),
    s("success-committed-shortly-before-a-store-crash", "a release with a success committed less than a lease before the store host crashed"),
    s("wake-up-lost", "a wake-up datagram to a worker was lost (marked by the engine where it drops it)"),
    s("enqueue-retried-after-a-lost-answer", "an enqueue with a key whose answer was lost was sent again and answered with the same job"),
    s("queue-limit-reached-while-another-queue-has-room", "a claim was granted on one queue while another queue had as many running jobs as its limit"),
    // Workers' hosts.
    s("worker-paused-across-its-belief-deadline-and-resumed", "a worker's process was paused across its belief deadline and then resumed"),
    s("worker-crashed-holding-a-lease", "a worker's process crashed while it believed it held a lease"),
    s("worker-clock-drift-beyond-the-bound", "a worker whose clock drifts beyond the declared bound held a lease"),
    s("one-way-partition", "a link dropped messages in one direction only"),
    // Schedules.
    s("plan-time-inside-a-store-clock-step", "a plan time that a store clock step jumped over or repeated was fired"),
    s("catch-up-at-its-bound", "a restarted scheduler fired as many late plan times of one schedule as its catch-up bound"),
    s("one-plan-time-fired-by-two-schedulers", "two schedulers fired the same plan time of one schedule"),
    s("scheduler-clock-stepped-while-firing", "a scheduler whose wall clock was stepped away from the store's fired a plan time"),
    s("fire-answered-plan-time-pruned", "a fire was answered PlanTimePruned: the plan time lies at or before the pruned mark"),
    // Pruning.
    s("prune-deleted-a-job", "a prune deleted at least one finished job"),
    s("prune-answered-unavailable", "a prune's outcome was unknown (its answer or request lost, or the store down)"),
    s("enqueue-under-a-pruned-key", "an enqueue under the key of a pruned job made a new job"),
    s("enqueue-under-the-key-of-a-finished-job", "an enqueue under the key of a finished job that was not pruned arrived after a prune had run"),
];

/// The built-in situation called `name`, if there is one.
pub fn builtin(name: &str) -> Option<&'static Situation> {
    BUILTIN.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_kebab_case_and_meant() {
        let mut names: Vec<&str> = BUILTIN.iter().map(|s| s.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "a situation name appears twice");
        for s in BUILTIN {
            assert!(
                s.name.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                "{} is not kebab-case",
                s.name
            );
            assert!(!s.meaning.is_empty(), "{} has no meaning", s.name);
        }
        assert!(BUILTIN.len() >= 30, "at least 30 situations");
        assert_eq!(
            builtin("one-way-partition").map(|s| s.name),
            Some("one-way-partition")
        );
        assert!(builtin("no-such-situation").is_none());
    }
}
