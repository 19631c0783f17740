//! I10: the same scenario and seed give a byte-identical history; another
//! seed gives another history.

mod engine_support;

use engine_support::run;
use leasehold_sim::runner::builtin;
use std::collections::BTreeSet;

#[test]
fn same_seed_twice_gives_the_same_history_hash_across_scenarios() {
    let plan = [
        (builtin::calm(), 0..10u64),
        (builtin::small_swarm(), 0..8),
        (builtin::standard(), 0..3),
    ];
    let mut checked = 0;
    for (cfg, seeds) in plan {
        let mut hashes = BTreeSet::new();
        for seed in seeds {
            let a = run(&cfg, seed);
            let b = run(&cfg, seed);
            assert_eq!(
                a.history_hash, b.history_hash,
                "{} seed {seed}: two runs differ",
                cfg.name
            );
            assert_eq!(a.history.to_jsonl(), b.history.to_jsonl());
            assert_eq!(
                a.history_hash,
                a.history.hash(),
                "the outcome's hash is the history's"
            );
            assert!(
                hashes.insert(a.history_hash),
                "{} seed {seed}: another seed gave this history",
                cfg.name
            );
            checked += 1;
        }
    }
    assert!(checked >= 20);
}

#[test]
fn the_fault_schedule_is_a_function_of_the_seed() {
    let cfg = builtin::standard();
    for seed in 0..20 {
        let a = leasehold_sim::runner::fault_schedule(&cfg, seed);
        assert_eq!(a, leasehold_sim::runner::fault_schedule(&cfg, seed));
        assert_ne!(a, leasehold_sim::runner::fault_schedule(&cfg, seed + 1000));
    }
}

#[test]
fn replaying_the_resolved_schedule_as_scripted_events_gives_the_same_faults() {
    let cfg = builtin::small_swarm();
    let seed = 5;
    let schedule = leasehold_sim::runner::fault_schedule(&cfg, seed);
    let draw = leasehold_sim::faults::draw_swarm(&cfg, seed);
    let mut scripted = cfg.clone();
    scripted.events = schedule.clone();
    scripted.faults = leasehold_sim::config::Faults {
        window: cfg.faults.window,
        message_loss: leasehold_sim::config::Range::exactly(draw.message_loss),
        answer_loss: leasehold_sim::config::Range::exactly(draw.answer_loss),
        ..Default::default()
    };
    let mut expect = schedule.clone();
    expect.sort_by_key(|f| f.start());
    assert_eq!(
        leasehold_sim::runner::fault_schedule(&scripted, seed),
        expect
    );
    let a = run(&cfg, seed);
    let b = run(&scripted, seed);
    assert_eq!(a.history.summary(), b.history.summary());
    assert_eq!(
        a.history_hash, b.history_hash,
        "an explicit schedule replays the swarm run exactly"
    );
}
