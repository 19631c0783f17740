//! Deliberately broken protocol variants: the catalogue of real lease bugs.
//!
//! Compiled only with the `buggy-variants` feature, which the simulator
//! enables to prove its checker catches each bug. Shipped builds of the core
//! never contain them. Each variant names the invariant it is expected to
//! break and where the bug was seen.

use std::fmt;

/// One catalogued bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Variant {
    /// 1. Release matched by job id only, no token (Oban #1496; seed 002 H1).
    ReleaseWithoutToken,
    /// 2. Sweeper reclaims by id from an earlier scan without re-checking
    ///    state or expiry at write time (River #1302).
    SweepWithoutRecheck,
    /// 3. Sweeper decides expiry with its own clock (River's rescuer).
    SweeperOwnClock,
    /// 4. Worker computes its lease deadline from its own wall clock.
    WorkerWallClockDeadline,
    /// 5. Heartbeat stops after a transient error while the job runs (seed 000).
    HeartbeatStopsOnError,
    /// 6. Result written in a second step after the terminal state (seed 000).
    ResultSecondStep,
    /// 7. Fixed lock time shorter than the job, no heartbeat (graphile-worker #169).
    FixedLockNoHeartbeat,
    /// 8. Claim by read-then-write without a compare-and-set (two winners).
    ClaimWithoutCas,
    /// 9. Restarted worker reuses its identity and the old lease looks alive
    ///    (procrastinate #1518).
    RestartReusesIdentity,
    /// 10. Late cancel overwrites a success (seed 002 M2).
    LateCancelOverwrites,
    /// 11. Heartbeat interval too close to the lease under latency (pgqueuer #430).
    HeartbeatTooClose,
    /// 12. Expiry does not stop the running handler (pg-boss #581).
    ExpiryDoesNotStopHandler,
    /// 13. A scheduler decides which plan times are due from its own wall
    ///     clock instead of the store's (seed 004's reason for reading the
    ///     database clock): a scheduler behind the store fires late and
    ///     leaves plan times unfired.
    SchedulerOwnClock,
    /// 14. Firing without the unique key: the store enqueues a plan time's
    ///     job without looking for the one it already has, so a re-fire
    ///     after a restart, or two schedulers racing, make two jobs
    ///     (periodic jobs emitted twice after a leader change, River #1087).
    FireWithoutKey,
    /// 15. A renew or release answered `Conflict` is given up: PostgreSQL
    ///     answers it after its own retries, and a merged batch hands one
    ///     batch's error to every worker in it, so the finished lease stays
    ///     running until the sweeper reclaims it as a crash and the job runs
    ///     again (heartbeat writes that fail and get a live worker rescued,
    ///     as Oban and pg-boss users report).
    ConflictAbandonsLease,
    /// 16. A merger of concurrent batches hands one worker the claim
    ///     answers of another: both run leases the store granted to the
    ///     other (the checker must tell which worker got which answer).
    MergedAnswersMisrouted,
    /// 17. A limited queue's slot is freed twice when its handler ends, so
    ///     the worker runs more of that queue at once than its limit.
    QueueSlotFreedTwice,
    /// 18. An idle worker waits only for wake-ups and never polls: a lost
    ///     notification (a LISTEN connection that never comes back,
    ///     pgqueuer's and pg-boss's missed wake-ups) leaves work unclaimed.
    WaitsOnlyForWakeUps,
    /// 19. The worker counts its fence from when a claim's answer arrived
    ///     instead of from when it sent the claim: an answer held in the
    ///     network makes it believe past the store's expiry.
    FenceFromAnswer,
    /// 20. The heartbeat stops when the handler returns, while the release
    ///     is still being retried: releases slowed by store errors (batches
    ///     cancelled mid-transaction, answers lost) let the finished lease
    ///     lapse, and the sweeper reports a live worker as crashed (found by
    ///     the simulator once it cancelled batches).
    HeartbeatStopsAtRelease,
    /// 21. A worker serving several queues applies its first queue's limit
    ///     to every queue it serves (one limit read where each queue has
    ///     its own): a queue limited below the first runs past its limit.
    FirstQueueLimitForAll,
    /// 22. The worker's fence is computed from the lease alone,
    ///     `L - margin`, instead of `L·(1−ρ)/(1+ρ) - margin`: with clocks at
    ///     the declared drift bound (the worker's slow, the store's fast) it
    ///     believes past the store's expiry, while another worker may
    ///     already hold the lease.
    FenceIgnoresDrift,
    /// 23. A prune that ignores the retention: the store judges a finished
    ///     job's age against the wrong instant and deletes it as soon as it
    ///     finished, with the result a caller was just told was committed
    ///     (I4; the "delete at once" cleanup that graphile-worker users
    ///     asked to make a retention, #174).
    PruneIgnoresRetention,
    /// 24. A prune that deletes a fired plan time's job without keeping the
    ///     schedule's pruned mark: the key that made a re-fire answer the
    ///     old job is gone, so a scheduler catching up fires that plan time
    ///     again and a second job runs for it (I12).
    PruneForgetsPlanTimeMark,
    /// 25. A prune that frees the idempotency keys of every finished job it
    ///     scanned, not only of the jobs it deleted: an enqueue retried
    ///     within the retention makes a second job for its key (I11).
    PruneFreesUnprunedKeys,
    /// 26. After a renew that failed or whose outcome is unknown, the worker
    ///     waits a whole renew interval before it renews again instead of
    ///     half of one (no later than halfway to its belief deadline): it
    ///     keeps renewing, but a renew that times out leaves no time for
    ///     another before the fence, so the lease lapses under a live
    ///     worker that a correct one would have kept (issue 48, class 1:
    ///     renews the protocol owes).
    RenewRetryWaitsFullInterval,
    /// 27. A store whose `batch` runs its parts concurrently collects their
    ///     answers in the order the parts finished instead of the order
    ///     they were asked in: when parts finish out of order, a claim gets
    ///     another claim's leases and a release another release's answer
    ///     (issue 48, class 3: answers that finish out of order; a user's
    ///     async store that pushes answers as its futures complete).
    BatchAnswersInCompletionOrder,
    /// 28. The sweeper takes a sweep answered `Conflict` for a refusal that
    ///     will not change and stops sweeping for good: once a store's
    ///     contention reaches a sweep, the leases of workers that crash
    ///     later are never reclaimed and their jobs never finish (issue 48,
    ///     class 5: `Conflict` on a sweep).
    SweeperStopsOnConflict,
    /// 29. PostgreSQL's `Coalescing` hands the answers of a merged batch of
    ///     single claims or releases back in reverse order (a flusher that
    ///     pops its callers off a stack): when two callers' claims are
    ///     answered by one transaction, each runs the leases the store
    ///     granted to the other's request, and releases get each other's
    ///     answers (issue 48, class 5: `Coalescing`'s queues).
    CoalescedAnswersReversed,
    /// 30. A claim that reads its candidates without row locks (its scan
    ///     lost `FOR UPDATE SKIP LOCKED`) and writes them back by id alone
    ///     (`UPDATE ... WHERE id = ...`, no version check): a transaction
    ///     that changes a candidate after the claim read it is overwritten.
    ///     Two claims at once lease one job twice (awa #134's double
    ///     claim); a cancel at once sees its cancelled job run anyway
    ///     (I11). Only concurrent SQL transactions meet it: the
    ///     simulator's statement-level interleaving (issue 47).
    ClaimReadsWithoutRowLocks,
    /// 31. A sweep that reads its expired leases without row locks and
    ///     writes each reclaimed row by id alone, forgetting the version
    ///     check after reading it: a sweep that read a row before another
    ///     sweep reclaimed it (and a claim took it again) overwrites them,
    ///     and one expired lease is reclaimed twice (River #1302: the
    ///     rescuer updated by id and overwrote a job changed meanwhile).
    SweepUpdateWithoutVersionGuard,
    /// 32. A claim of a queue with a parallelism limit that counts the
    ///     queue's running jobs in one statement and claims up to the room
    ///     it saw in another, without the lock that serializes the claims
    ///     of that queue (PostgreSQL's advisory lock): two claims at once
    ///     both count before either commits, both see room, and together
    ///     run the queue past its limit (I9). Only concurrent SQL
    ///     transactions meet it: the simulator's statement-level
    ///     interleaving (issue 47).
    LimitCountedWithoutLock,
}

impl Variant {
    /// Every variant, in catalogue order.
    pub const ALL: [Variant; 32] = [
        Variant::ReleaseWithoutToken,
        Variant::SweepWithoutRecheck,
        Variant::SweeperOwnClock,
        Variant::WorkerWallClockDeadline,
        Variant::HeartbeatStopsOnError,
        Variant::ResultSecondStep,
        Variant::FixedLockNoHeartbeat,
        Variant::ClaimWithoutCas,
        Variant::RestartReusesIdentity,
        Variant::LateCancelOverwrites,
        Variant::HeartbeatTooClose,
        Variant::ExpiryDoesNotStopHandler,
        Variant::SchedulerOwnClock,
        Variant::FireWithoutKey,
        Variant::ConflictAbandonsLease,
        Variant::MergedAnswersMisrouted,
        Variant::QueueSlotFreedTwice,
        Variant::WaitsOnlyForWakeUps,
        Variant::FenceFromAnswer,
        Variant::HeartbeatStopsAtRelease,
        Variant::FirstQueueLimitForAll,
        Variant::FenceIgnoresDrift,
        Variant::PruneIgnoresRetention,
        Variant::PruneForgetsPlanTimeMark,
        Variant::PruneFreesUnprunedKeys,
        Variant::RenewRetryWaitsFullInterval,
        Variant::BatchAnswersInCompletionOrder,
        Variant::SweeperStopsOnConflict,
        Variant::CoalescedAnswersReversed,
        Variant::ClaimReadsWithoutRowLocks,
        Variant::SweepUpdateWithoutVersionGuard,
        Variant::LimitCountedWithoutLock,
    ];

    /// The kebab-case name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Variant::ReleaseWithoutToken => "release-without-token",
            Variant::SweepWithoutRecheck => "sweep-without-recheck",
            Variant::SweeperOwnClock => "sweeper-own-clock",
            Variant::WorkerWallClockDeadline => "worker-wall-clock-deadline",
            Variant::HeartbeatStopsOnError => "heartbeat-stops-on-error",
            Variant::ResultSecondStep => "result-second-step",
            Variant::FixedLockNoHeartbeat => "fixed-lock-no-heartbeat",
            Variant::ClaimWithoutCas => "claim-without-cas",
            Variant::RestartReusesIdentity => "restart-reuses-identity",
            Variant::LateCancelOverwrites => "late-cancel-overwrites",
            Variant::HeartbeatTooClose => "heartbeat-too-close",
            Variant::ExpiryDoesNotStopHandler => "expiry-does-not-stop-handler",
            Variant::SchedulerOwnClock => "scheduler-own-clock",
            Variant::FireWithoutKey => "fire-without-key",
            Variant::ConflictAbandonsLease => "conflict-abandons-lease",
            Variant::MergedAnswersMisrouted => "merged-answers-misrouted",
            Variant::QueueSlotFreedTwice => "queue-slot-freed-twice",
            Variant::WaitsOnlyForWakeUps => "waits-only-for-wake-ups",
            Variant::FenceFromAnswer => "fence-from-answer",
            Variant::HeartbeatStopsAtRelease => "heartbeat-stops-at-release",
            Variant::FirstQueueLimitForAll => "first-queue-limit-for-every-queue",
            Variant::FenceIgnoresDrift => "fence-ignores-drift",
            Variant::PruneIgnoresRetention => "prune-ignores-retention",
            Variant::PruneForgetsPlanTimeMark => "prune-forgets-plan-time-mark",
            Variant::PruneFreesUnprunedKeys => "prune-frees-unpruned-keys",
            Variant::RenewRetryWaitsFullInterval => "renew-retry-waits-full-interval",
            Variant::BatchAnswersInCompletionOrder => "batch-answers-in-completion-order",
            Variant::SweeperStopsOnConflict => "sweeper-stops-on-conflict",
            Variant::CoalescedAnswersReversed => "coalesced-answers-reversed",
            Variant::ClaimReadsWithoutRowLocks => "claim-reads-without-row-locks",
            Variant::SweepUpdateWithoutVersionGuard => "sweep-update-without-version-guard",
            Variant::LimitCountedWithoutLock => "limit-counted-without-lock",
        }
    }

    /// Parses a name from [`Variant::name`].
    pub fn parse(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The names of every variant, comma-separated (for error messages).
    pub fn names() -> String {
        Variant::ALL.map(Variant::name).join(", ")
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
