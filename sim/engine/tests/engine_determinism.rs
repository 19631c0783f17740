//! I10: the same scenario and seed give a byte-identical history; another
//! seed gives another history.

mod engine_support;

use engine_support::{run, scenario};
use leasehold_model::builtin;
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
    scripted.faults = leasehold_model::config::Faults {
        window: cfg.faults.window,
        message_loss: leasehold_model::config::Range::exactly(draw.message_loss),
        answer_loss: leasehold_model::config::Range::exactly(draw.answer_loss),
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

/// The same seeds give the same histories whether they run one after
/// another on one thread, or in shuffled order on two threads beside each
/// other: nothing of one seed's world leaks into another's.
#[test]
fn seeds_in_shuffled_order_on_two_threads_give_the_same_histories() {
    let cfg = scenario("swarm_of_every_fault_heals_and_every_job_finishes.toml");
    let seeds: Vec<u64> = (0..8).collect();
    let alone: Vec<u64> = seeds.iter().map(|&s| run(&cfg, s).history_hash).collect();
    // A fixed shuffle, split over two threads that run at once.
    let order = [5u64, 2, 7, 0, 3, 6, 1, 4];
    let (left, right) = order.split_at(4);
    let together: std::collections::BTreeMap<u64, u64> = std::thread::scope(|s| {
        let cfg = &cfg;
        let a = s.spawn(move || {
            left.iter()
                .map(|&seed| (seed, run(cfg, seed).history_hash))
                .collect::<Vec<_>>()
        });
        let b = s.spawn(move || {
            right
                .iter()
                .map(|&seed| (seed, run(cfg, seed).history_hash))
                .collect::<Vec<_>>()
        });
        let mut all = a.join().expect("thread a");
        all.extend(b.join().expect("thread b"));
        all.into_iter().collect()
    });
    for (i, seed) in seeds.iter().enumerate() {
        assert_eq!(
            together[seed], alone[i],
            "seed {seed}: another history on two threads in shuffled order"
        );
    }
}

/// The opt-in exploration of task orders gives other interleavings, yet
/// still one history per seed, and the correct core stays clean under it.
#[test]
fn explored_task_orders_are_deterministic_and_differ_from_fifo() {
    use leasehold_sim::runner::{run_seed, PreparedConfig, RunOptions};
    use leasehold_sim::stores::MemoryFactory;
    let cfg = scenario("swarm_of_every_fault_heals_and_every_job_finishes.toml");
    let valid = PreparedConfig::new(cfg.clone()).expect("valid");
    let memory = std::sync::Arc::new(MemoryFactory);
    let mut differ = 0;
    for seed in 0..4 {
        let fifo = run(&cfg, seed);
        let explore = |s| {
            let opts = RunOptions {
                explore: true,
                ..RunOptions::default()
            };
            run_seed(&valid, s, &memory, opts).unwrap_or_else(|e| panic!("seed {s}: {e}"))
        };
        let (a, b) = (explore(seed), explore(seed));
        assert_eq!(
            a.history_hash, b.history_hash,
            "seed {seed}: explored twice"
        );
        assert!(a.violations.is_empty(), "seed {seed}: {:?}", a.violations);
        differ += usize::from(a.history_hash != fifo.history_hash);
    }
    assert!(
        differ >= 3,
        "only {differ} of 4 explored seeds left FIFO's history"
    );
}
