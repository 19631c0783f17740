//! Built-in scenarios, for tests and speed measurements (the scenario files
//! under `scenarios/` are the user-facing ones).

use crate::config::{Range, SimConfig};
use crate::duration::{Dur, SignedDur};

/// A small calm world: 3 workers, 1 sweeper, 20 jobs, no faults.
pub fn calm() -> SimConfig {
    let mut c = SimConfig {
        name: "calm".into(),
        duration: Dur::secs(120),
        ..SimConfig::default()
    };
    c.topology.workers = 3;
    c.topology.sweepers = 1;
    c.workload.jobs = 20;
    c.workload.enqueue_over = Dur::secs(10);
    c.faults.window = Dur::secs(30);
    c
}

/// Every fault kind at moderate rates, on a small world.
pub fn small_swarm() -> SimConfig {
    let mut c = standard();
    c.name = "small-swarm".into();
    c.topology.workers = 4;
    c.topology.sweepers = 1;
    c.workload.jobs = 40;
    c.workload.enqueue_over = Dur::secs(30);
    c.faults.window = Dur::secs(90);
    c.duration = Dur::secs(300);
    c
}

/// The standard scenario: 8 workers, 2 sweepers, 200 jobs, 10 simulated
/// minutes, swarm faults of every kind inside the first 5 minutes, clocks
/// drifting within ρ.
pub fn standard() -> SimConfig {
    let mut c = SimConfig {
        name: "standard".into(),
        description: "8 workers, 2 sweepers, 200 jobs, swarm faults of every kind".into(),
        duration: Dur::secs(600),
        ..SimConfig::default()
    };
    c.topology.workers = 8;
    c.topology.sweepers = 2;
    c.workload.jobs = 200;
    c.workload.enqueue_over = Dur::secs(120);
    c.workload.run_time = Range::new(Dur::ms(100), Dur::secs(8));
    c.workload.fail_rate = 0.15;
    c.workload.permanent_share = 0.2;
    c.workload.poison_rate = 0.02;
    c.workload.hang_rate = 0.02;
    c.workload.cancel_rate = 0.05;
    c.protocol.parallelism = Some(12);
    let f = &mut c.faults;
    f.window = Dur::secs(300);
    f.worker_crash_rate = Range::new(0.0, 0.3);
    f.sweeper_crash_rate = Range::new(0.0, 0.3);
    f.store_crash_rate = Range::new(0.0, 0.2);
    f.restart_after = Range::new(Dur::secs(1), Dur::secs(30));
    f.partition_rate = Range::new(0.0, 0.3);
    f.partition_len = Range::new(Dur::secs(1), Dur::secs(40));
    f.oneway_share = 0.3;
    f.pause_rate = Range::new(0.0, 0.3);
    f.pause_len = Range::new(Dur::ms(200), Dur::secs(20));
    f.message_loss = Range::new(0.0, 0.05);
    f.answer_loss = Range::new(0.0, 0.05);
    f.hold_rate = Range::new(0.0, 0.3);
    f.hold_len = Range::new(Dur::ms(100), Dur::secs(8));
    f.clock_offset = Range::new(SignedDur(-600_000), SignedDur(600_000));
    f.clock_drift_ppm = Range::new(-10_000, 10_000);
    f.clock_step_rate = Range::new(0.0, 0.2);
    f.clock_step = Range::new(SignedDur(-30_000), SignedDur(30_000));
    c
}

/// Short leases and heavy faults of every kind: a bug hunter.
pub fn harsh() -> SimConfig {
    let mut c = standard();
    c.name = "harsh".into();
    c.topology.workers = 5;
    c.topology.sweepers = 2;
    c.workload.jobs = 60;
    c.workload.enqueue_over = Dur::secs(60);
    c.workload.run_time = Range::new(Dur::ms(50), Dur::secs(12));
    c.workload.cancel_rate = 0.15;
    c.protocol.lease = Dur::secs(5);
    c.protocol.renew_interval = Dur::ms(1500);
    c.protocol.sweep_interval = Dur::ms(700);
    c.protocol.request_timeout = Dur::secs(1);
    c.protocol.concurrency = 3;
    c.protocol.parallelism = Some(6);
    c.duration = Dur::secs(400);
    let f = &mut c.faults;
    f.window = Dur::secs(180);
    f.worker_crash_rate = Range::new(0.2, 1.0);
    f.sweeper_crash_rate = Range::new(0.2, 1.0);
    f.store_crash_rate = Range::new(0.1, 0.6);
    f.restart_after = Range::new(Dur::ms(200), Dur::secs(15));
    f.partition_rate = Range::new(0.3, 1.5);
    f.partition_len = Range::new(Dur::ms(200), Dur::secs(20));
    f.oneway_share = 0.5;
    f.pause_rate = Range::new(0.3, 1.5);
    f.pause_len = Range::new(Dur::ms(100), Dur::secs(12));
    f.message_loss = Range::new(0.02, 0.2);
    f.answer_loss = Range::new(0.02, 0.2);
    f.hold_rate = Range::new(0.3, 1.5);
    f.hold_len = Range::new(Dur::ms(100), Dur::secs(8));
    f.clock_drift_ppm = Range::new(-10_000, 10_000);
    f.clock_step_rate = Range::new(0.0, 0.5);
    c
}

/// Every built-in scenario.
pub fn all() -> Vec<SimConfig> {
    vec![calm(), small_swarm(), standard(), harsh()]
}

/// The paths of `problems`, the part a check's tests compare.
#[cfg(test)]
pub(crate) fn paths_of(problems: Vec<crate::config::ConfigProblem>) -> Vec<String> {
    problems.into_iter().map(|p| p.path).collect()
}

/// Asserts that `problems` finds none in the default configuration and in
/// every built-in scenario: each check's first test.
#[cfg(test)]
pub(crate) fn assert_defaults_and_builtins_pass(
    problems: fn(&SimConfig) -> Vec<crate::config::ConfigProblem>,
) {
    let none = Vec::<String>::new();
    assert_eq!(paths_of(problems(&SimConfig::default())), none);
    for cfg in all() {
        assert_eq!(paths_of(problems(&cfg)), none, "{}", cfg.name);
    }
}
