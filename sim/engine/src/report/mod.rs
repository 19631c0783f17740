//! Violation reports for people: what broke, where, when, around which
//! faults, and the command that replays it. Times read as durations from
//! the run's start ([`times`]).

pub mod times;

use leasehold_check::checker::Violation;
use leasehold_check::finding::{write_line, Finding};
use leasehold_model::config::SimConfig;
use leasehold_model::duration::format_ms;
use std::fmt::Write;
use times::Origin;

/// The exact command that replays `seed` of the scenario at `scenario_path`.
pub fn replay_command(scenario_path: &str, seed: u64) -> String {
    format!("leasehold replay {scenario_path} --seed {seed}")
}

/// The replay command on a given store (memory needs no flag).
pub fn replay_command_on(
    scenario_path: &str,
    seed: u64,
    store: Option<leasehold_model::store_kind::StoreKind>,
) -> String {
    match store {
        None | Some(leasehold_model::store_kind::StoreKind::Memory) => {
            replay_command(scenario_path, seed)
        }
        Some(k) => format!("{} --store {k}", replay_command(scenario_path, seed)),
    }
}

/// A multi-line report of one violation.
pub fn violation_report(
    v: &Violation,
    cfg: &SimConfig,
    seed: u64,
    scenario_path: Option<&str>,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} {} violated in scenario {:?}, seed {seed}{}",
        v.invariant,
        v.invariant.name(),
        cfg.name,
        cfg.variant
            .as_ref()
            .map(|x| format!(" (variant {x})"))
            .unwrap_or_default()
    );
    let _ = write_line(&mut s, "what", &Origin::SIM.humanize(&v.message));
    s.push('\n');
    // Job, tokens and hosts as every tool prints a finding's context.
    for (label, value) in v.context() {
        let _ = write_line(&mut s, label, &value);
        s.push('\n');
    }
    let _ = write!(s, "  when:   true {}", format_ms(v.true_ms));
    if let Some(st) = v.store_time {
        let _ = write!(s, ", store {}", Origin::SIM.since(st));
        // The store clock's offset from true time, when true time is known.
        let off = st.0 - Origin::SIM.0 - i64::try_from(v.true_ms).unwrap_or(i64::MAX);
        if v.true_ms > 0 && off != 0 {
            let side = if off > 0 { "ahead of" } else { "behind" };
            let _ = write!(s, " ({} {side} true time)", format_ms(off.unsigned_abs()));
        }
    }
    for (h, l) in &v.local_ms {
        let _ = write!(s, ", {h} local {}", format_ms(*l));
    }
    s.push('\n');
    if v.faults_nearby.is_empty() {
        let _ = writeln!(s, "  faults nearby: none");
    } else {
        let _ = writeln!(s, "  faults nearby:");
        for f in &v.faults_nearby {
            let _ = writeln!(s, "    - {}", Origin::SIM.humanize(f));
        }
    }
    let path = scenario_path.map_or_else(|| format!("<{}>", cfg.name), str::to_string);
    let _ = writeln!(s, "  replay: {}", replay_command_on(&path, seed, cfg.store));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_model::config::InvariantId;

    #[test]
    fn report_names_invariant_job_and_replay() {
        let v = Violation::new(InvariantId::I2, "stale release accepted")
            .job(leasehold_core::JobId(3))
            .tokens([leasehold_core::Token(1)])
            .hosts(["worker-1"])
            .at(1234);
        let cfg = SimConfig {
            name: "demo".into(),
            ..SimConfig::default()
        };
        let r = violation_report(&v, &cfg, 42, Some("scenarios/demo.toml"));
        assert!(r.contains("I2 single winner"), "{r}");
        assert!(r.contains("job-3"));
        assert!(r.contains("leasehold replay scenarios/demo.toml --seed 42"));
        assert!(r.contains("when:   true 1s234ms"), "{r}");
    }

    #[test]
    fn store_times_show_from_the_start_of_the_run() {
        let v = Violation::new(InvariantId::I4, "renewed until @1704067262030ms")
            .at(2_050)
            .store_at(leasehold_core::StoreTime(
                leasehold_model::clock::EPOCH_MS + 62_030,
            ));
        let r = violation_report(&v, &SimConfig::default(), 1, None);
        assert!(
            r.contains("when:   true 2s50ms, store +1m2s30ms (59s980ms ahead of true time)"),
            "{r}"
        );
        assert!(r.contains("renewed until @+1m2s30ms"), "{r}");
        assert!(!r.contains("1704067"), "{r}");
    }
}
