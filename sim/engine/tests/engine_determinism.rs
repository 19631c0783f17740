//! I10: the same scenario and seed give a byte-identical history; another
//! seed gives another history.

mod engine_support;

use engine_support::{run, scenario};
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

/// Spends tokio's task ids (which count every task of the process, as
/// other runs on other threads would) until the next one is `residue`
/// modulo 8, so each run below starts at another offset of the runtime's
/// task shards.
fn align_task_ids(residue: u64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        for _ in 0..16 {
            let id: u64 = tokio::spawn(async {})
                .id()
                .to_string()
                .parse()
                .expect("a task id is a number");
            if (id + 1) % 8 == residue {
                return;
            }
        }
    });
}

/// A host crash drops the host's tasks in the order they were spawned, not
/// in the order of tokio's task ids, which depend on every task the process
/// ran before on any thread. Swarm seeds 13 and 37 once gave one history
/// when run alone and another when run beside other seeds (found when
/// batches first travelled as one message, as a SQLite run that "disagreed"
/// with its memory run: both stores answered alike, the memory run had
/// simply spent other task ids).
#[test]
fn a_history_does_not_depend_on_the_task_ids_other_runs_spent() {
    let cfg = scenario("swarm_of_every_fault_heals_and_every_job_finishes.toml");
    for seed in [13, 37] {
        align_task_ids(0);
        let base = run(&cfg, seed);
        for residue in 1..8 {
            align_task_ids(residue);
            let other = run(&cfg, seed);
            let (a, b) = (base.history.to_jsonl(), other.history.to_jsonl());
            if let Some((i, (x, y))) = a
                .lines()
                .zip(b.lines())
                .enumerate()
                .find(|(_, (x, y))| x != y)
            {
                panic!(
                    "seed {seed}: a run starting at task id {residue} (mod 8) has another \
                     history, from record {i}:\n  {x}\n  {y}"
                );
            }
            assert_eq!(a, b, "seed {seed}: one history is a prefix of the other");
        }
    }
}
