//! Runs one generation of the explorer's inputs on every thread and
//! answers their results in input order, so what the explorer learns from
//! them never depends on which thread finished first.
//!
//! Invariant: a result is at the index of its input; an input not run
//! (the explorer was told to stop while the generation ran) has `None`.
//! The threads are bounded by `jobs` and the work by the generation.

use super::engine::{self, Shown};
use super::explore_guided::Input;
use super::stores::Stores;
use leasehold_model::scenario::Scenario;
use leasehold_sim::runner::PreparedConfig;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// One run's result: the seed's outcome, or the harness error (a panic
/// included).
pub type RunResult = Result<Shown, String>;

/// Runs `inputs` on `jobs` threads; `stop` is asked before each run.
/// Answers each input's result at its index (`None`: not run).
pub fn generation(
    inputs: &[Input],
    scenarios: &[Scenario],
    stores: &Stores,
    jobs: usize,
    stop: &(dyn Fn() -> bool + Sync),
) -> Vec<Option<RunResult>> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<RunResult>>> = inputs.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, inputs.len().max(1)) {
            scope.spawn(|| loop {
                if stop() {
                    break;
                }
                let k = next.fetch_add(1, Ordering::SeqCst);
                let Some(input) = inputs.get(k) else {
                    break;
                };
                let r = one(input, &scenarios[input.scenario], stores);
                if let Ok(mut slot) = slots[k].lock() {
                    *slot = Some(r);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|m| m.into_inner().unwrap_or(None))
        .collect()
}

/// Runs one input (a mixed or mutated configuration is validated anew).
pub fn one(input: &Input, s: &Scenario, stores: &Stores) -> RunResult {
    let path = s.path.to_string_lossy();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        PreparedConfig::new(input.config.clone())
            .map_err(|e| e.to_string())
            .and_then(|cfg| engine::run(&cfg, input.seed, &path, stores))
    }))
    .unwrap_or_else(|_| Err("panicked".into()))
}
