//! Deliberately wrong transitions, planted in the checker's own world (a
//! store step that skips a guard, a worker driver that misbehaves) so
//! that a test can show each invariant's check fails when it should. The
//! core is never changed: these live in the world around it.

/// One planted fault of the world; see each variant for the invariant it
/// must break.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Plant {
    /// I1: the store's claim skips the state guard and grants a running
    /// job again.
    ClaimSkipsStateGuard,
    /// I2: the store's release skips the repeat guard: a release sent
    /// again after its answer was lost is applied a second time to the
    /// terminal row.
    ReleaseSkipsRepeatGuard,
    /// I3: the worker's driver ignores its machine: it sends no renew, and
    /// when the machine says the belief is over, the handler keeps running.
    DriverIgnoresFence,
    /// I4: the store's release answers `Committed` and drops the result.
    ReleaseDropsResult,
    /// I5: the sweeper reclaims leases that have not expired.
    SweepSkipsExpiry,
    /// I5: the worker's driver retries a renew that failed or timed out a
    /// whole renew interval later, not when its machine asks (half an
    /// interval, or halfway to the fence): a lease that one more fault
    /// lets lapse was not kept as the renew schedule owes.
    RetryWaitsFullInterval,
    /// I6: workers never claim.
    NeverClaims,
    /// I7: a cancel turns a succeeded job into a cancelled one.
    CancelOverwritesSucceeded,
    /// I8: a claim starts an attempt past the budget.
    ClaimPastBudget,
    /// I9: the worker's driver claims without asking its slots.
    ClaimIgnoresSlots,
}
