//! Pruner configuration: named defaults, validated at build.
//!
//! Build-time checks: a retention of at least
//! [`crate::transition::MIN_RETENTION`] and an audit retention not shorter
//! than it; a batch of 1 to [`crate::transition::MAX_PRUNE_LIMIT`]; a
//! non-zero period, request timeout, round count and error backoff, the
//! backoff's base no longer than the period (its cap).

use crate::error::ConfigError;
use crate::time::Millis;
use crate::transition::PruneRequest;

/// Default interval between two prune wake-ups (on the pruner's own
/// clock: it only decides when to ask; age is judged on the store's).
/// A finished job then waits at most `R` plus this (plus the prune's own
/// lag) before it goes.
pub const DEFAULT_PRUNE_PERIOD: Millis = Millis::from_secs(10);
/// Default retention `R`: a finished job stays a day.
pub const DEFAULT_RETENTION: Millis = Millis::from_secs(24 * 3600);
/// Default most jobs pruned per call (one transaction): short enough that
/// a call holds its locks briefly and fits the request timeout on a loaded
/// store (about 50 ms a call on PostgreSQL in issue 44's long runs).
pub const DEFAULT_PRUNE_BATCH: u32 = 1_000;
/// Default most calls per wake-up. A wake-up goes on while calls come
/// back full, so this bounds one wake-up's work, not the steady rate: with
/// the default batch and period the pruner may prune
/// `1,000 × 1,000 / 10 s` = 100,000 jobs a second, above every rate the
/// `Worker` was measured at (at most about 76,000 jobs a second, see
/// [`FASTEST_MEASURED_WORKER`]). The rate it reaches is then the store's
/// own delete rate.
pub const DEFAULT_PRUNE_ROUNDS: u32 = 1_000;
/// Most calls per wake-up a configuration may ask for.
pub const MAX_PRUNE_ROUNDS: u32 = 10_000;
/// Default first wait after a failed call; it doubles per failure, up to
/// the period.
pub const DEFAULT_PRUNE_ERROR_BACKOFF: Millis = Millis::from_secs(1);
/// The fastest the default `Worker` was measured to finish jobs, in jobs a
/// second (SQLite, 16 Workers: 69.5k–75.7k; PostgreSQL 43k–57k; see
/// docs/PERFORMANCE.md). The default pruner must prune faster than this,
/// or a deployment at full speed grows without end (issue 44: the previous
/// defaults, 1,000 × 10 a minute, pruned at most 167 jobs a second).
pub const FASTEST_MEASURED_WORKER: u64 = 76_000;

/// Jobs a second the pruner may prune at most with the defaults.
const DEFAULT_PRUNE_CAPACITY: u64 =
    DEFAULT_PRUNE_BATCH as u64 * DEFAULT_PRUNE_ROUNDS as u64 * 1_000 / DEFAULT_PRUNE_PERIOD.0;

const _: () = assert!(DEFAULT_RETENTION.0 >= crate::transition::MIN_RETENTION.0);
const _: () = assert!(DEFAULT_PRUNE_BATCH <= crate::transition::MAX_PRUNE_LIMIT);
const _: () = assert!(DEFAULT_PRUNE_ROUNDS <= MAX_PRUNE_ROUNDS);
const _: () = assert!(DEFAULT_PRUNE_ERROR_BACKOFF.0 <= DEFAULT_PRUNE_PERIOD.0);
const _: () = assert!(DEFAULT_PRUNE_CAPACITY >= FASTEST_MEASURED_WORKER);

/// A validated pruner configuration. Build it with
/// [`PrunerConfig::builder`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrunerConfig {
    /// Interval between wake-ups, on the pruner's own clock.
    pub period: Millis,
    /// What each call asks: retention, audit retention, batch.
    pub request: PruneRequest,
    /// Most calls per wake-up.
    pub max_rounds: u32,
    /// Time a call may take before its outcome counts as unknown.
    pub request_timeout: Millis,
    /// First wait after a failure (doubling, capped at `period`).
    pub error_backoff: Millis,
}

impl PrunerConfig {
    /// A builder with the defaults.
    pub fn builder() -> PrunerConfigBuilder {
        PrunerConfigBuilder {
            period: DEFAULT_PRUNE_PERIOD,
            retention: DEFAULT_RETENTION,
            audit_retention: None,
            batch: DEFAULT_PRUNE_BATCH,
            max_rounds: DEFAULT_PRUNE_ROUNDS,
            request_timeout: super::config::DEFAULT_REQUEST_TIMEOUT,
            error_backoff: DEFAULT_PRUNE_ERROR_BACKOFF,
        }
    }

    /// The wait after `failures` failed wake-ups in a row (at least one):
    /// `error_backoff · 2^(failures−1)`, at most `period`.
    pub fn backoff_after(&self, failures: u32) -> Millis {
        let shift = failures.saturating_sub(1).min(32);
        Millis(
            self.error_backoff
                .0
                .saturating_mul(1u64 << shift)
                .min(self.period.0),
        )
    }
}

/// Builds a [`PrunerConfig`].
#[derive(Clone, Debug)]
pub struct PrunerConfigBuilder {
    period: Millis,
    retention: Millis,
    audit_retention: Option<Millis>,
    batch: u32,
    max_rounds: u32,
    request_timeout: Millis,
    error_backoff: Millis,
}

impl PrunerConfigBuilder {
    /// Interval between wake-ups.
    pub fn period(mut self, v: Millis) -> Self {
        self.period = v;
        self
    }

    /// How long a finished job is kept (`R`).
    pub fn retention(mut self, v: Millis) -> Self {
        self.retention = v;
        self
    }

    /// How long an audit event is kept (default: the retention).
    pub fn audit_retention(mut self, v: Millis) -> Self {
        self.audit_retention = Some(v);
        self
    }

    /// Most jobs per call.
    pub fn batch(mut self, v: u32) -> Self {
        self.batch = v;
        self
    }

    /// Most calls per wake-up.
    pub fn max_rounds(mut self, v: u32) -> Self {
        self.max_rounds = v;
        self
    }

    /// Time a call may take.
    pub fn request_timeout(mut self, v: Millis) -> Self {
        self.request_timeout = v;
        self
    }

    /// First wait after a failure.
    pub fn error_backoff(mut self, v: Millis) -> Self {
        self.error_backoff = v;
        self
    }

    /// Validates and returns the configuration.
    pub fn build(self) -> Result<PrunerConfig, ConfigError> {
        use crate::error::InputError as E;
        let request = PruneRequest::new(self.retention, self.batch)
            .and_then(|r| r.with_audit_retention(self.audit_retention.unwrap_or(self.retention)))
            .map_err(|e| {
                let field = match &e {
                    E::BadRetention { what, .. } => *what,
                    _ => "batch",
                };
                ConfigError::new(field, e.to_string())
            })?;
        for (field, v) in [
            ("period", self.period.0),
            ("request_timeout", self.request_timeout.0),
            ("error_backoff", self.error_backoff.0),
            ("max_rounds", u64::from(self.max_rounds)),
        ] {
            if v == 0 {
                return Err(ConfigError::new(field, "must be greater than zero"));
            }
        }
        if self.max_rounds > MAX_PRUNE_ROUNDS {
            return Err(ConfigError::new(
                "max_rounds",
                format!("must be at most {MAX_PRUNE_ROUNDS}"),
            ));
        }
        if self.error_backoff > self.period {
            return Err(ConfigError::new(
                "error_backoff",
                format!(
                    "{} must not exceed the period {} (its cap)",
                    self.error_backoff, self.period
                ),
            ));
        }
        Ok(PrunerConfig {
            period: self.period,
            request,
            max_rounds: self.max_rounds,
            request_timeout: self.request_timeout,
            error_backoff: self.error_backoff,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transition::{MAX_PRUNE_LIMIT, MIN_RETENTION};

    #[test]
    fn defaults_build_and_keep_audit_events_as_long_as_jobs() {
        let c = PrunerConfig::builder().build().unwrap();
        assert_eq!(c.request.retention, DEFAULT_RETENTION);
        assert_eq!(c.request.audit_retention, DEFAULT_RETENTION);
        assert_eq!(c.request.limit, DEFAULT_PRUNE_BATCH);
        assert_eq!(c.period, DEFAULT_PRUNE_PERIOD);
        assert_eq!(c.max_rounds, DEFAULT_PRUNE_ROUNDS);
    }

    /// The defaults prune faster than the fastest measured `Worker`:
    /// 100,000 jobs a second (issue 44: the defaults were 167).
    #[test]
    fn default_capacity_is_above_the_fastest_measured_worker() {
        let c = PrunerConfig::builder().build().unwrap();
        let per_sec = u64::from(c.request.limit) * u64::from(c.max_rounds) * 1_000 / c.period.0;
        assert_eq!(per_sec, 100_000);
        assert!(per_sec >= FASTEST_MEASURED_WORKER);
    }

    #[test]
    fn nonsense_is_refused_naming_the_field() {
        let f = |b: PrunerConfigBuilder| b.build().unwrap_err().field;
        let b = PrunerConfig::builder;
        assert_eq!(f(b().retention(Millis(MIN_RETENTION.0 - 1))), "retention");
        assert_eq!(
            f(b()
                .retention(Millis::from_secs(3600))
                .audit_retention(Millis::from_secs(60))),
            "audit_retention"
        );
        assert_eq!(f(b().batch(0)), "batch");
        assert_eq!(f(b().batch(MAX_PRUNE_LIMIT + 1)), "batch");
        assert_eq!(f(b().period(Millis::ZERO)), "period");
        assert_eq!(f(b().request_timeout(Millis::ZERO)), "request_timeout");
        assert_eq!(f(b().max_rounds(0)), "max_rounds");
        assert_eq!(f(b().max_rounds(MAX_PRUNE_ROUNDS + 1)), "max_rounds");
        assert_eq!(f(b().error_backoff(Millis::ZERO)), "error_backoff");
        assert_eq!(
            f(b().period(Millis(500)).error_backoff(Millis(501))),
            "error_backoff"
        );
        assert!(b()
            .batch(MAX_PRUNE_LIMIT)
            .max_rounds(MAX_PRUNE_ROUNDS)
            .build()
            .is_ok());
    }

    #[test]
    fn error_backoff_doubles_up_to_the_period() {
        let c = PrunerConfig::builder()
            .period(Millis(10_000))
            .error_backoff(Millis(1_000))
            .build()
            .unwrap();
        let waits: Vec<u64> = (1..=6).map(|n| c.backoff_after(n).0).collect();
        assert_eq!(waits, [1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
        assert_eq!(c.backoff_after(u32::MAX), Millis(10_000));
    }
}
