//! Swarm mixes for `leasehold explore`: a seed may switch some of its
//! scenario's fault kinds off, so exploration also visits the fault
//! combinations that one all-kinds-at-once scenario rarely reaches (swarm
//! testing: fewer kinds at a time let each one act more).
//!
//! Invariant: the mix is a pure function of (scenario name, seed), and the
//! mixed configuration is what runs, is shrunk and is written to the
//! corpus, so a regression case replays exactly what failed. A mix only
//! switches kinds off (rate range set to zero), never on, keeps at least
//! one of the scenario's kinds, and is a valid scenario (or no mix).

use leasehold_model::config::{Range, SimConfig};

/// The swarm rate ranges a mix may switch off, by their scenario-file name
/// (the guided explorer's mutations switch the same kinds).
pub(super) fn kinds(cfg: &mut SimConfig) -> [(&'static str, &mut Range<f64>); 13] {
    let f = &mut cfg.faults;
    [
        ("worker_crash_rate", &mut f.worker_crash_rate),
        ("sweeper_crash_rate", &mut f.sweeper_crash_rate),
        ("scheduler_crash_rate", &mut f.scheduler_crash_rate),
        ("store_crash_rate", &mut f.store_crash_rate),
        ("partition_rate", &mut f.partition_rate),
        ("pause_rate", &mut f.pause_rate),
        ("hold_rate", &mut f.hold_rate),
        ("clock_step_rate", &mut f.clock_step_rate),
        ("message_loss", &mut f.message_loss),
        ("answer_loss", &mut f.answer_loss),
        ("store_conflict", &mut f.store_conflict),
        ("wake_loss", &mut f.wake_loss),
        ("store_cancel", &mut f.store_cancel),
    ]
}

/// SplitMix64 step: a well-mixed draw from a counter.
pub(super) fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The mix of `seed` for `cfg`: `None` when the seed runs the scenario as
/// written (half the seeds, and every scenario with fewer than two swarm
/// kinds), else the mixed configuration and the kinds switched off.
pub fn mix(cfg: &SimConfig, seed: u64) -> Option<(SimConfig, Vec<&'static str>)> {
    let mut name_hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in cfg.name.bytes() {
        name_hash = (name_hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut draw = splitmix(seed ^ name_hash);
    if draw & 1 == 0 {
        return None;
    }
    let mut out = cfg.clone();
    let mut on: Vec<(&'static str, &mut Range<f64>)> = kinds(&mut out)
        .into_iter()
        .filter(|(_, r)| r.hi > 0.0)
        .collect();
    if on.len() < 2 {
        return None;
    }
    let mut off = Vec::new();
    let keep = usize::try_from(splitmix(draw) % on.len() as u64).unwrap_or(0);
    for (k, (name, range)) in on.iter_mut().enumerate() {
        draw = splitmix(draw);
        if k != keep && draw & 1 == 1 {
            **range = Range::exactly(0.0);
            off.push(*name);
        }
    }
    // A kind another option needs (`conflict_on = "every-write"` widens
    // `store_conflict`) may not be switched off: the scenario then runs as
    // written, as a bad mix would otherwise fail as a harness error.
    if off.is_empty() || out.validate().is_err() {
        return None;
    }
    Some((out, off))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mix_only_switches_kinds_off_and_keeps_one() {
        let cfg = leasehold_model::builtin::standard();
        let before = {
            let mut c = cfg.clone();
            kinds(&mut c)
                .iter()
                .filter(|(_, r)| r.hi > 0.0)
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
        };
        let mut mixed = 0;
        for seed in 0..200 {
            let Some((mut m, off)) = mix(&cfg, seed) else {
                continue;
            };
            mixed += 1;
            let after: Vec<&str> = kinds(&mut m)
                .iter()
                .filter(|(_, r)| r.hi > 0.0)
                .map(|(n, _)| *n)
                .collect();
            assert!(!after.is_empty(), "seed {seed} switched every kind off");
            assert!(after.iter().all(|k| before.contains(k)));
            assert_eq!(after.len() + off.len(), before.len());
            assert!(m.validate().is_ok(), "seed {seed}: the mix must stay valid");
            assert_eq!(mix(&cfg, seed).map(|x| x.1), Some(off), "deterministic");
        }
        assert!(
            (60..=140).contains(&mixed),
            "about half the seeds mix: {mixed}"
        );
    }

    #[test]
    fn scenarios_without_swarm_faults_are_never_mixed() {
        let cfg = leasehold_model::builtin::calm();
        assert!((0..100).all(|s| mix(&cfg, s).is_none()));
    }

    /// `conflict_on = "every-write"` needs `store_conflict`: no mix
    /// switches it off, and the other kinds are still mixed.
    #[test]
    fn a_mix_never_switches_off_a_kind_another_option_needs() {
        let mut cfg = leasehold_model::builtin::standard();
        cfg.faults.conflict_on = leasehold_model::config::ConflictOn::EveryWrite;
        cfg.faults.store_conflict = Range::new(0.05, 0.2);
        assert!(cfg.validate().is_ok());
        let mixes: Vec<_> = (0..200).filter_map(|s| mix(&cfg, s)).collect();
        assert!(!mixes.is_empty(), "other kinds are still mixed");
        for (m, off) in &mixes {
            assert!(m.validate().is_ok(), "{off:?}");
            assert!(!off.contains(&"store_conflict"), "{off:?}");
        }
    }
}
