//! Self-fencing: how long a worker may believe it holds a lease (spec §2).
//!
//! A worker that sent a claim or renew at local monotonic time `t_send` and
//! was granted a lease of duration `L` believes it holds the lease only until
//! `t_send + L·(1−ρ)/(1+ρ) − margin` on its own clock, where ρ bounds the
//! drift of every clock against true time. The store's lease starts no
//! earlier than `t_send` in true time and lasts at least `L/(1+ρ)` true time;
//! the worker's `L·(1−ρ)/(1+ρ)` local time lasts at most `L/(1+ρ)` true time.
//! So while drifts stay within ρ, the belief ends before the store could
//! reassign the lease.
//!
//! Invariant: the deadline never moves backwards.

use crate::error::ConfigError;
use crate::time::Millis;

/// Parts per million: 1,000,000 = 100 %.
pub const PPM: u64 = 1_000_000;

/// The part of a lease a worker may use: `L·(1−ρ)/(1+ρ) − margin`.
///
/// Fails when nothing would be left: a drift of 100 % or more, or a margin
/// that eats the whole lease.
pub fn safe_duration(
    lease: Millis,
    max_drift_ppm: u32,
    margin: Millis,
) -> Result<Millis, ConfigError> {
    let rho = u64::from(max_drift_ppm);
    if rho >= PPM {
        return Err(ConfigError::new(
            "max_drift_ppm",
            "must be below 1,000,000 (100 %)",
        ));
    }
    let scaled = u128::from(lease.0) * u128::from(PPM - rho) / u128::from(PPM + rho);
    let scaled = u64::try_from(scaled).unwrap_or(u64::MAX);
    if scaled <= margin.0 {
        return Err(ConfigError::new(
            "fence_margin",
            format!("leaves no usable lease: lease {lease} shrinks to {scaled}ms under drift, margin is {margin}"),
        ));
    }
    Ok(Millis(scaled - margin.0))
}

/// The local deadline until which a worker believes it holds one lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fence {
    safe: Millis,
    deadline: Millis,
}

impl Fence {
    /// A fence for a lease requested at local time `t_send`, of which `safe`
    /// may be used (see [`safe_duration`]).
    pub fn new(t_send: Millis, safe: Millis) -> Self {
        Fence {
            safe,
            deadline: t_send.saturating_add(safe),
        }
    }

    /// A renew sent at local time `t_send` succeeded.
    pub fn handle_renewed(&mut self, t_send: Millis) {
        let candidate = t_send.saturating_add(self.safe);
        // A late answer to an older renew must not shorten a newer belief.
        if candidate > self.deadline {
            self.deadline = candidate;
        }
    }

    /// The local time at which the worker must stop believing.
    pub fn poll_deadline(&self) -> Millis {
        self.deadline
    }

    /// Whether the belief has ended at local time `now`.
    pub fn is_expired(&self, now: Millis) -> bool {
        now >= self.deadline
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_duration_shrinks_lease_by_drift_and_margin() {
        // 30 s lease, 1 % drift: 30000·0.99/1.01 = 29405 (floor), minus 500.
        assert_eq!(
            safe_duration(Millis(30_000), 10_000, Millis(500)).unwrap(),
            Millis(28_905)
        );
        assert_eq!(
            safe_duration(Millis(1000), 0, Millis(0)).unwrap(),
            Millis(1000)
        );
    }

    #[test]
    fn impossible_settings_are_rejected() {
        assert!(safe_duration(Millis(1000), 1_000_000, Millis(0)).is_err());
        assert!(safe_duration(Millis(1000), 0, Millis(1000)).is_err());
    }

    #[test]
    fn deadline_moves_forward_only() {
        let mut f = Fence::new(Millis(100), Millis(1000));
        assert_eq!(f.poll_deadline(), Millis(1100));
        f.handle_renewed(Millis(600));
        assert_eq!(f.poll_deadline(), Millis(1600));
        f.handle_renewed(Millis(300));
        assert_eq!(
            f.poll_deadline(),
            Millis(1600),
            "a stale answer never shortens the belief"
        );
        assert!(!f.is_expired(Millis(1599)));
        assert!(f.is_expired(Millis(1600)));
    }
}
