//! Schedules under the simulator: bad schedules in a scenario file are
//! located errors; a scenario with schedulers replays byte for byte (I10)
//! and its jobs are the plan times' jobs; I12 fails a run whose store
//! lost a plan time's job, with a report that names the plan time, a run
//! whose scheduler caught up more missed plan times than its policy allows,
//! and a run whose store made a job for a removed schedule.

mod engine_support;
use engine_support::{memory_run, scenario};

use leasehold_model::config::{InvariantId, SimConfig};
use leasehold_model::history::History;
use leasehold_sim::runner::SeedOutcome;

use leasehold_model::scenario::load_str;
use std::path::Path;

#[test]
fn bad_schedules_in_a_scenario_are_located_and_name_their_field() {
    let text = r#"duration = "1m"

[topology]
schedulers = 1

[faults]
window = "10s"

[[schedules]]
name = "a"
every = "0s"

[[schedules]]
name = "a"
cron = "99 * * * *"

[[schedules]]
name = "b"
cron = "* * * * *"
time_zone = "Nowhere/City"

[[schedules]]
name = "c"
catch_up_max = 0
every = "1s"

[[schedules]]
name = "d"
every = "1s"
remove_at = "2m"
"#;
    let err = load_str(text, Path::new("s.toml"), "s")
        .unwrap_err()
        .to_string();
    for want in [
        "s.toml:11:1: schedules[0].every",
        "s.toml:14:1: schedules[1].name: duplicate schedule name \"a\"",
        "s.toml:15:1: schedules[1].cron",
        "s.toml:20:1: schedules[2].time_zone",
        "s.toml:24:1: schedules[3].catch_up_max",
        "s.toml:30:1: schedules[4].remove_at",
    ] {
        assert!(err.contains(want), "{want:?} missing from:\n{err}");
    }
}

#[test]
fn skewed_schedulers_replay_exactly_and_make_one_job_per_plan_time() {
    let mut cfg = scenario("skewed_schedulers_racing_fire_each_plan_time_once.toml");
    // Schedulers fire until one liveness bound (about 30 s here) before the
    // end: 90 s leaves them about 60 s of firing.
    cfg.duration = leasehold_model::duration::Dur::secs(90);
    let a = memory_run(&cfg, 3).expect("run");
    let b = memory_run(&cfg, 3).expect("run");
    assert_eq!(a.history_hash, b.history_hash, "I10");
    assert!(a.violations.is_empty(), "{:?}", a.violations);
    let keys: Vec<String> = a
        .history
        .records
        .iter()
        .filter_map(|r| match r {
            leasehold_model::history::Record::Final { row } => row.idempotency_key.clone(),
            _ => None,
        })
        .filter(|k| k.starts_with("leasehold:schedule:"))
        .collect();
    // About 60 s of two schedules every 5 s and 7 s, after the first put.
    assert!(keys.len() >= 15, "plan times fired: {}", keys.len());
    let mut unique = keys.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), keys.len(), "one job per plan time");
}

/// Seed 0 of the catch-up scenario, which must run clean: the scenario and
/// the run.
fn clean_catch_up_run() -> (SimConfig, SeedOutcome) {
    let cfg = scenario("scheduler_crash_across_plan_times_catches_up_each_missed_one.toml");
    let run = memory_run(&cfg, 0).expect("run");
    assert!(run.violations.is_empty(), "{:?}", run.violations);
    (cfg, run)
}

/// Asserts that the checker finds in `h` an I12 violation whose message
/// says each of `says`.
fn assert_i12(h: &History, cfg: &SimConfig, says: &[&str]) {
    let v = leasehold_check::checker::check(h, cfg);
    assert!(
        v.iter()
            .any(|v| v.invariant == InvariantId::I12 && says.iter().all(|s| v.message.contains(s))),
        "{says:?}: {v:?}"
    );
}

#[test]
fn a_store_that_loses_a_plan_times_job_fails_i12() {
    let (cfg, mut run) = clean_catch_up_run();
    // Remove one plan time's job from the final state, as a store that
    // lost it would show, and check again.
    let records = &mut run.history.records;
    let at = records
        .iter()
        .position(|r| {
            matches!(r, leasehold_model::history::Record::Final { row }
                if row.idempotency_key.as_deref().is_some_and(|k| k.starts_with("leasehold:schedule:each-missed-one@")))
        })
        .expect("a plan time's job");
    records.remove(at);
    assert_i12(&run.history, &cfg, &["has no job"]);
}

/// The planted bug of a scheduler that ignores its catch-up bound: a real
/// catch-up whose on-time fire is turned into a second missed plan time.
#[test]
fn a_catch_up_past_its_policy_fails_i12() {
    use leasehold_model::history::{Op, Record};
    let (cfg, mut run) = clean_catch_up_run();
    let records = &mut run.history.records;
    // The restarted scheduler's catch-up tick fires the latest-only
    // schedule's one missed plan time, then its on-time one.
    let fires: Vec<(usize, u64, i64)> = records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Record::Request {
                t,
                host,
                op: Op::Fire { name, plan_time },
                ..
            } if *t >= 70_000 && host == "scheduler-1" && name == "latest-only" => {
                Some((i, *t, plan_time.0))
            }
            _ => None,
        })
        .take(2)
        .collect();
    let [(_, t0, missed), (on_time, t1, _)] = fires[..] else {
        panic!("the catch-up's fires: {fires:?}")
    };
    assert!(t1 - t0 < 1_000, "one tick: {fires:?}");
    if let Record::Request {
        op: Op::Fire { plan_time, .. },
        ..
    } = &mut records[on_time]
    {
        *plan_time = leasehold_core::StoreTime(missed - 4_000);
    }
    let says = [
        "one catch-up of schedule \"latest-only\"",
        "2 missed plan times",
    ];
    assert_i12(&run.history, &cfg, &says);
}

#[test]
fn a_removed_schedule_is_refused_and_a_store_that_fires_it_fails_i12() {
    use leasehold_model::history::{Op, Record, Reply};
    let cfg = scenario(
        "schedule_removed_while_schedulers_crash_and_are_cut_off_is_never_fired_again.toml",
    );
    // The first seed in which a fire from a listing made before the
    // removal reached the store after it (and was refused).
    let found = (0..20).find_map(|seed| {
        let run = memory_run(&cfg, seed).expect("run");
        assert!(
            run.violations.is_empty(),
            "seed {seed}: {:?}",
            run.violations
        );
        let records = &run.history.records;
        // The scheduler restarted after the removal no longer puts it.
        assert!(!records.iter().any(|r| matches!(r,
            Record::Request { t, op: Op::PutSchedule { name, .. }, .. }
                if *t >= 50_000 && name == "removed-mid-run")));
        let ops: std::collections::BTreeMap<u64, Op> = records
            .iter()
            .filter_map(|r| match r {
                Record::Request { id, op, .. } => Some((*id, op.clone())),
                _ => None,
            })
            .collect();
        let refused = records.iter().position(|r| {
            matches!(r, Record::Served { id, reply: Some(Reply::Rejected(_)), .. }
                if matches!(ops.get(id), Some(Op::Fire { name, .. }) if name == "removed-mid-run"))
        })?;
        Some((run, refused))
    });
    let (mut run, refused) = found.expect("a fire refused after the removal, within 20 seeds");
    let records = &mut run.history.records;
    // A store that made a job instead (for a plan time after the removal)
    // fails I12.
    let Record::Served { id: fire, .. } = records[refused] else {
        unreachable!()
    };
    if let Record::Served { reply, .. } = &mut records[refused] {
        *reply = Some(Reply::Job(leasehold_core::JobId(1_000_000)));
    }
    for r in records.iter_mut() {
        if let Record::Request {
            id,
            op: Op::Fire { plan_time, .. },
            ..
        } = r
        {
            if *id == fire {
                *plan_time = leasehold_core::StoreTime(plan_time.0 + 20_000);
            }
        }
    }
    assert_i12(&run.history, &cfg, &["after the schedule's removal"]);
}
