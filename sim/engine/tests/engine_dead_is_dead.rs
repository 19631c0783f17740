//! "Dead is dead": once a host is crashed, nothing of that incarnation
//! acts again. Between a host's `HostCrashed` record and its next
//! `HostStarted`, the history holds no request, answer, belief, crash
//! report or handler step of that host, and the store serves nothing.

mod engine_support;

use engine_support::{run, scenario};
use leasehold_model::history::Record;

/// The host that acted in `r` (the store for what it served).
fn actor(r: &Record) -> Option<&str> {
    match r {
        Record::Request { host, .. }
        | Record::Answer { host, .. }
        | Record::Belief { host, .. }
        | Record::CrashReported { host, .. }
        | Record::Handler { host, .. } => Some(host),
        Record::Served { .. } => Some("store"),
        _ => None,
    }
}

#[test]
fn a_crashed_host_does_nothing_until_it_starts_again() {
    let files = [
        "worker_crash_mid_job_is_reclaimed_once.toml",
        "store_crash_and_restart_loses_no_committed_result.toml",
        "several_workers_in_one_process_merge_batches_and_die_together.toml",
        "swarm_of_every_fault_heals_and_every_job_finishes.toml",
    ];
    let mut crashes = 0;
    for f in files {
        let cfg = scenario(f);
        for seed in 0..4 {
            let out = run(&cfg, seed);
            let mut dead: std::collections::BTreeSet<String> = Default::default();
            for r in &out.history.records {
                match r {
                    Record::HostCrashed { host, .. } => {
                        crashes += 1;
                        dead.insert(host.clone());
                    }
                    Record::HostStarted { host, .. } => {
                        dead.remove(host);
                    }
                    r => {
                        if let Some(h) = actor(r).filter(|h| dead.contains(*h)) {
                            panic!("{f} seed {seed}: {h} acted while crashed: {r:?}");
                        }
                    }
                }
            }
        }
    }
    assert!(
        crashes >= 8,
        "the scenarios crashed hosts only {crashes} times"
    );
}
