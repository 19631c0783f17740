//! The wall-clock limit of a run: a run that hits it stops with an error
//! (never a pass), and a limit only aborts: a run that finishes in time has
//! the history it has without one.

use leasehold_model::bounds::MAX_DURATION;
use leasehold_model::builtin;
use leasehold_model::duration::Dur;
use leasehold_sim::runner::{run_seed, HarnessError, PreparedConfig, RunOptions};
use leasehold_sim::stores::MemoryFactory;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn a_week_long_run_stops_at_its_wall_clock_limit_with_an_error() {
    let mut cfg = builtin::calm();
    cfg.duration = MAX_DURATION;
    // Enqueues spread over the week keep the run from ending quiet early.
    cfg.workload.enqueue_over = Dur::secs(6 * 24 * 3600);
    let limit = Duration::from_millis(300);
    let started = Instant::now();
    let cfg = PreparedConfig::new(cfg).expect("valid");
    let opts = RunOptions {
        limit: Some(limit),
        ..RunOptions::default()
    };
    let e = match run_seed(&cfg, 1, &Arc::new(MemoryFactory), opts) {
        Ok(out) => panic!("finished after {} simulated ms", out.sim_time_ms),
        Err(e) => e,
    };
    let took = started.elapsed();
    match &e {
        HarnessError::Timeout {
            limit: l,
            sim_ms,
            duration_ms,
            steps,
        } => {
            assert_eq!(*l, limit);
            assert!(*steps > 0 && sim_ms < duration_ms, "{e}");
        }
        other => panic!("not a timeout: {other}"),
    }
    assert!(e.to_string().contains("--run-timeout"), "{e}");
    // Checked between steps: the overshoot is a step, not the run.
    assert!(took < Duration::from_secs(10), "stopped after {took:?}");
}

#[test]
fn a_limit_never_changes_a_history() {
    let cfg = PreparedConfig::new(builtin::small_swarm()).expect("valid");
    let factory = Arc::new(MemoryFactory);
    let free = run_seed(&cfg, 3, &factory, RunOptions::default()).expect("runs");
    let opts = RunOptions {
        limit: Some(Duration::from_secs(600)),
        ..RunOptions::default()
    };
    let limited = run_seed(&cfg, 3, &factory, opts).expect("in time");
    assert_eq!(free.history_hash, limited.history_hash);
}
