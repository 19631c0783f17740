//! A job still unfinished when the run ends is judged, even when its
//! liveness deadline falls after the end: before, such a job passed
//! unjudged, so a scenario too short to finish its work (or a job stuck
//! in it) looked like a pass.

mod engine_support;
use engine_support::memory_run;

use leasehold_model::config::{InvariantId, Range, SimConfig};
use leasehold_model::duration::Dur;

/// Three jobs of 150 s each in a run of 2 minutes: nothing can finish.
fn too_short() -> SimConfig {
    let mut cfg = SimConfig {
        name: "too-short".into(),
        duration: Dur::secs(120),
        ..SimConfig::default()
    };
    cfg.workload.jobs = 3;
    cfg.workload.enqueue_over = Dur::secs(1);
    cfg.workload.run_time = Range::exactly(Dur::secs(150));
    cfg.faults.window = Dur::secs(60);
    cfg
}

#[test]
fn a_job_still_running_when_a_too_short_run_ends_is_reported() {
    let out = memory_run(&too_short(), 1).expect("runs");
    let i6: Vec<_> = out
        .violations
        .iter()
        .filter(|v| v.invariant == InvariantId::I6)
        .collect();
    assert_eq!(i6.len(), 3, "{:#?}", out.violations);
    for v in i6 {
        assert!(v.message.contains("before its deadline"), "{}", v.message);
        assert!(v.message.contains("too short to judge"), "{}", v.message);
        assert!(v.job.is_some());
    }
}

#[test]
fn the_same_jobs_in_a_long_enough_run_pass() {
    let mut cfg = too_short();
    cfg.duration = Dur::secs(360);
    let out = memory_run(&cfg, 1).expect("runs");
    assert_eq!(out.violations, vec![], "{:#?}", out.violations);
}
