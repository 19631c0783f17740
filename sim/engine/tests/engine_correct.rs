//! The correct core holds every invariant on a fixed set of seeds of every
//! built-in scenario (faults of every kind, clocks drifting within ρ).

mod engine_support;

use engine_support::{clean_run, describe, run};
use leasehold_model::builtin;

fn clean(cfg: &leasehold_model::config::SimConfig, seeds: std::ops::Range<u64>) {
    for seed in seeds {
        let out = clean_run(cfg, seed);
        assert!(
            out.sim_time_ms > cfg.faults.window.as_ms(),
            "the run outlives the fault window"
        );
    }
}

#[test]
fn calm_world_holds_every_invariant() {
    clean(&builtin::calm(), 0..10);
}

#[test]
fn small_swarm_of_every_fault_holds_every_invariant() {
    clean(&builtin::small_swarm(), 100..112);
}

#[test]
fn standard_swarm_holds_every_invariant() {
    clean(&builtin::standard(), 1000..1004);
}

#[test]
fn a_clock_drift_beyond_rho_is_reported_and_fencing_still_holds() {
    let mut cfg = builtin::small_swarm();
    cfg.events = vec!["drift worker-1 -40000ppm at 0s".parse().unwrap()];
    let out = run(&cfg, 7);
    assert!(out.timing_assumption_broken);
    assert!(out
        .violations
        .iter()
        .all(|v| v.invariant != leasehold_model::config::InvariantId::I3));
    assert!(
        out.violations.iter().all(|v| !matches!(
            v.invariant,
            leasehold_model::config::InvariantId::I1 | leasehold_model::config::InvariantId::I2
        )),
        "{}",
        describe(&out, &cfg)
    );
}

#[test]
fn drift_at_the_edges_of_rho_against_the_store_keeps_beliefs_exclusive() {
    // Slow workers believe longest, a fast store expires leases soonest: the
    // worst case the fence must cover. Partitions cut workers off mid-lease.
    let mut cfg = builtin::small_swarm();
    cfg.name = "rho-edges".into();
    cfg.faults.clock_drift_ppm = leasehold_model::config::Range::exactly(0);
    cfg.faults.clock_step_rate = leasehold_model::config::Range::exactly(0.0);
    cfg.faults.partition_rate = leasehold_model::config::Range::new(1.0, 2.0);
    cfg.faults.pause_rate = leasehold_model::config::Range::new(0.5, 1.0);
    let rho = i64::from(cfg.protocol.max_drift_ppm);
    let mut events = vec![format!("drift store {rho}ppm at 0s")];
    for i in 1..=cfg.topology.workers {
        events.push(format!("drift worker-{i} -{rho}ppm at 0s"));
    }
    cfg.events = events.iter().map(|e| e.parse().unwrap()).collect();
    for seed in 0..12 {
        let out = clean_run(&cfg, seed);
        assert!(!out.timing_assumption_broken, "seed {seed}");
    }
}
