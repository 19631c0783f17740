//! The check of the scenario's `[pruner]` table: the core's own bounds on a
//! prune (a retention below the minimum or a batch outside `1..=` the cap
//! is refused here, naming the field), plus a period and a host count the
//! simulator can run.

use super::Bad;
use crate::config::pruner::MAX_PRUNERS;
use crate::config::SimConfig;
use leasehold_core::{MAX_PRUNE_LIMIT, MIN_RETENTION};

/// Every problem with the scenario's pruners.
pub(super) fn pruner(cfg: &SimConfig, bad: &mut Bad) {
    let Some(p) = &cfg.pruner else { return };
    if p.hosts == 0 || p.hosts > MAX_PRUNERS {
        bad(
            "pruner.hosts",
            format!("must be 1 to {MAX_PRUNERS} (leave out [pruner] to prune nothing)"),
        );
    }
    if p.retention.as_ms() < MIN_RETENTION.0 {
        bad(
            "pruner.retention",
            format!(
                "{} is below the minimum retention {MIN_RETENTION}",
                p.retention
            ),
        );
    }
    if p.batch == 0 || p.batch > MAX_PRUNE_LIMIT {
        bad("pruner.batch", format!("must be 1 to {MAX_PRUNE_LIMIT}"));
    }
    if p.period.as_ms() == 0 {
        bad("pruner.period", "must be greater than zero".into());
    }
}

#[cfg(test)]
mod tests {
    use crate::config::pruner::PrunerSpec;
    use crate::config::SimConfig;
    use crate::duration::Dur;

    fn problems(p: PrunerSpec) -> Vec<String> {
        let cfg = SimConfig {
            pruner: Some(p),
            ..SimConfig::default()
        };
        match cfg.validate() {
            Ok(()) => vec![],
            Err(v) => v.into_iter().map(|p| p.to_string()).collect(),
        }
    }

    #[test]
    fn a_short_retention_a_zero_batch_and_no_hosts_are_refused_by_field() {
        assert_eq!(problems(PrunerSpec::default()), Vec::<String>::new());
        let v = problems(PrunerSpec {
            hosts: 0,
            retention: Dur::secs(59),
            period: Dur::ms(0),
            batch: 0,
        });
        assert_eq!(
            v,
            [
                "pruner.hosts: must be 1 to 8 (leave out [pruner] to prune nothing)",
                "pruner.retention: 59s is below the minimum retention 60000ms",
                "pruner.batch: must be 1 to 10000",
                "pruner.period: must be greater than zero",
            ]
        );
    }
}
