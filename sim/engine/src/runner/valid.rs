//! A scenario checked once: what the door into a seed takes, so a config
//! run for many seeds (a library run, a shrink, an exploration) is
//! validated once, not once per seed.

use super::error::HarnessError;
use leasehold_model::catalogue::Variant;
use leasehold_model::config::{SimConfig, ValidConfig};
use leasehold_model::store_kind::StoreKind;
use std::ops::Deref;

/// The model's [`ValidConfig`] (a [`SimConfig`] that passed
/// [`SimConfig::validate`]) with its catalogue variant parsed: what the
/// door into a seed takes. Read-only: a changed config is a new one,
/// validated again.
#[derive(Clone, Debug)]
pub struct PreparedConfig {
    cfg: ValidConfig,
    variant: Option<Variant>,
}

impl PreparedConfig {
    /// Validates `cfg` and parses its variant.
    pub fn new(cfg: SimConfig) -> Result<Self, HarnessError> {
        let cfg = cfg.into_valid().map_err(HarnessError::Config)?;
        let variant = variant_of(&cfg)?;
        Ok(PreparedConfig { cfg, variant })
    }

    /// The catalogue variant in force.
    pub fn variant(&self) -> Option<Variant> {
        self.variant
    }

    /// The same scenario pinned to the store `kind`. Which store a
    /// scenario runs on is no part of its validation (`validate` never
    /// reads it; a test below holds it to that), so this does not
    /// validate again.
    pub fn on_store(mut self, kind: StoreKind) -> Self {
        self.cfg = self.cfg.on_store(kind);
        self
    }

    /// The config itself.
    pub fn config(&self) -> &SimConfig {
        self.cfg.config()
    }
}

impl Deref for PreparedConfig {
    type Target = SimConfig;

    fn deref(&self) -> &SimConfig {
        self.cfg.config()
    }
}

/// Parses the scenario's variant.
fn variant_of(cfg: &SimConfig) -> Result<Option<Variant>, HarnessError> {
    match &cfg.variant {
        None => Ok(None),
        Some(name) => Variant::parse(name)
            .map(Some)
            .ok_or_else(|| HarnessError::UnknownVariant {
                name: name.clone(),
                known: Variant::names(),
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_config_is_refused_with_its_problems() {
        let mut cfg = leasehold_model::builtin::small_swarm();
        cfg.duration = leasehold_model::duration::Dur::ms(0);
        match PreparedConfig::new(cfg) {
            Err(HarnessError::Config(p)) => assert!(!p.is_empty()),
            other => panic!("expected a config error, got {other:?}"),
        }
    }

    #[test]
    fn the_store_a_scenario_names_never_changes_its_validation() {
        for base in leasehold_model::builtin::all() {
            let mut broken = base.clone();
            broken.duration = leasehold_model::duration::Dur::ms(0);
            for cfg in [base, broken] {
                let want = cfg.validate();
                for kind in [StoreKind::Memory, StoreKind::Sqlite, StoreKind::Postgres] {
                    let mut pinned = cfg.clone();
                    pinned.store = Some(kind);
                    assert_eq!(pinned.validate(), want, "{} on {kind}", cfg.name);
                }
            }
        }
    }

    #[test]
    fn an_unknown_variant_is_refused_by_name() {
        let mut cfg = leasehold_model::builtin::small_swarm();
        cfg.variant = Some("no-such-bug".into());
        match PreparedConfig::new(cfg) {
            Err(HarnessError::UnknownVariant { name, .. }) => assert_eq!(name, "no-such-bug"),
            other => panic!("expected an unknown variant, got {other:?}"),
        }
    }
}
