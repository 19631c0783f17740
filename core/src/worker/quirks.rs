//! How a worker's lease decisions deviate from the protocol: every field is
//! the protocol's choice except under the catalogue's buggy variants
//! (simulator and exhaustive-checker builds only).

use super::config::WorkerConfig;

/// The protocol's choices the catalogue's worker variants turn off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Quirks {
    /// The belief is fenced at `t_send + safe_lease`.
    pub fence: bool,
    /// The lease is renewed at all.
    pub heartbeat: bool,
    /// A renew whose outcome is unknown is retried.
    pub heartbeat_survives_errors: bool,
    /// A renew answered `Lost` stops the handler.
    pub stop_on_loss: bool,
    /// The belief ends at the store's expiry read on the local wall clock.
    pub wall_deadline: bool,
    /// A `Conflict` is retried like an unknown outcome.
    pub retry_conflicts: bool,
    /// The heartbeat goes on while the release is retried.
    pub renew_while_releasing: bool,
    /// A failed or unknown renew is retried after half the renew interval
    /// (no later than halfway to the fence), not after a whole one.
    pub retry_at_half_interval: bool,
}

impl Quirks {
    /// The quirks of `cfg`'s variant (none without one).
    pub(crate) fn of(cfg: &WorkerConfig) -> Quirks {
        #[allow(unused_mut)]
        let mut q = Quirks {
            fence: true,
            heartbeat: true,
            heartbeat_survives_errors: true,
            stop_on_loss: true,
            wall_deadline: false,
            retry_conflicts: true,
            renew_while_releasing: true,
            retry_at_half_interval: true,
        };
        #[cfg(feature = "buggy-variants")]
        {
            use crate::variants::Variant;
            match cfg.variant {
                Some(Variant::FixedLockNoHeartbeat) => {
                    q.heartbeat = false;
                    q.fence = false;
                }
                Some(Variant::HeartbeatStopsOnError) => {
                    q.heartbeat_survives_errors = false;
                    q.fence = false;
                }
                Some(Variant::ExpiryDoesNotStopHandler) => {
                    q.fence = false;
                    q.stop_on_loss = false;
                }
                Some(Variant::WorkerWallClockDeadline) => q.wall_deadline = true,
                Some(Variant::ConflictAbandonsLease) => q.retry_conflicts = false,
                Some(Variant::HeartbeatStopsAtRelease) => q.renew_while_releasing = false,
                Some(Variant::RenewRetryWaitsFullInterval) => q.retry_at_half_interval = false,
                _ => {}
            }
        }
        #[cfg(not(feature = "buggy-variants"))]
        let _ = cfg;
        q
    }
}

/// Whether a renew or release that failed with `e` is sent again: its
/// outcome is unknown, or it was a conflict (nothing applied) and
/// conflicts are retried (all but one catalogue variant).
pub(crate) fn worth_retrying(e: &crate::error::StoreError, retry_conflicts: bool) -> bool {
    e.is_unknown_outcome() || (e.is_transient() && retry_conflicts)
}
