//! Running the scenario library against your own store.
//!
//! Implement [`StoreFactory`] for your [`Store`](leasehold_core::Store)
//! (a fresh database per seed, reopened after every simulated crash), then
//! call [`check_store`] with scenario files or directories. Every seed runs
//! your store behind the simulated network with the scenario's faults, the
//! real worker runtime and sweeper in front of it, and the checker judges
//! every invariant and every answer your store gave. Scenarios of the bug
//! catalogue (those that name a `variant`) are skipped: they test the
//! checker, not your store.
//!
//! ```no_run
//! use leasehold_sim::harness::check_store;
//! use leasehold_sim::stores::SqliteFactory;
//!
//! let report = check_store(SqliteFactory::new(None), &["scenarios/".into()], Some(3))?;
//! for failure in report.failures() {
//!     eprintln!("{}\n{}", failure.summary(), failure.replay);
//! }
//! assert!(report.passed(), "{} of {} seeds failed", report.failures().count(), report.runs.len());
//! # Ok::<(), leasehold_model::scenario::LoadErrors>(())
//! ```

use crate::report::violation_report;
use crate::runner::{run_seed, HarnessError, PreparedConfig, RunOptions, SeedOutcome};
use crate::stores::StoreFactory;
use leasehold_check::checker::Violation;
use leasehold_model::scenario::{load_paths, LoadErrors, Scenario};
use std::path::PathBuf;
use std::sync::Arc;

/// One seed of one scenario on the user's store: the door's own
/// [`SeedOutcome`] (or why there is none), with what a person needs to act
/// on it.
#[derive(Clone, Debug)]
pub struct SeedCheck {
    /// The scenario file.
    pub path: PathBuf,
    /// What the seed left, its history dropped (a report keeps every seed
    /// of the library), or why it could not run.
    pub outcome: Result<SeedOutcome, NotRun>,
    /// A full report per violation, ending with the replay command.
    pub reports: Vec<String>,
    /// The command that replays this seed with the `leasehold` tool (on
    /// the memory store; to replay on your store, call [`check_seed`]).
    pub replay: String,
}

/// A seed that could not be run (the store could not be set up, the
/// scenario is invalid, ...): which one, and why.
#[derive(Clone, Debug)]
pub struct NotRun {
    /// Scenario name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// Why.
    pub error: String,
}

impl SeedCheck {
    /// Whether the seed ran and every invariant held.
    pub fn passed(&self) -> bool {
        self.outcome.as_ref().is_ok_and(SeedOutcome::passed)
    }

    /// Every violation found (none when the seed passed or did not run).
    pub fn violations(&self) -> &[Violation] {
        self.outcome.as_ref().map_or(&[], |o| &o.violations)
    }

    /// Why the seed could not run, if it could not.
    pub fn error(&self) -> Option<&str> {
        self.outcome.as_ref().err().map(|n| n.error.as_str())
    }

    /// One line: scenario, seed, and the first problem.
    pub fn summary(&self) -> String {
        let (scenario, seed, what) = match &self.outcome {
            Err(n) => (&n.scenario, n.seed, format!("error: {}", n.error)),
            Ok(o) => (
                &o.scenario,
                o.seed,
                o.violations.first().map_or("passed".into(), |v| {
                    format!("{} ({}): {}", v.invariant, v.invariant.name(), v.message)
                }),
            ),
        };
        format!("{scenario} seed {seed}: {what}")
    }
}

/// Every seed run by [`check_store`].
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// One entry per scenario and seed, in order.
    pub runs: Vec<SeedCheck>,
    /// Catalogue scenarios that were skipped.
    pub skipped: Vec<String>,
}

impl Report {
    /// Whether every seed passed.
    pub fn passed(&self) -> bool {
        self.runs.iter().all(SeedCheck::passed)
    }

    /// The seeds that did not pass.
    pub fn failures(&self) -> impl Iterator<Item = &SeedCheck> {
        self.runs.iter().filter(|r| !r.passed())
    }
}

/// Runs seeds `0..seeds` (default: each scenario's own count) of every
/// scenario under `paths` on stores from `factory`, one after another.
/// Each scenario is validated once, for all its seeds.
pub fn check_store<F: StoreFactory>(
    factory: F,
    paths: &[PathBuf],
    seeds: Option<u64>,
) -> Result<Report, LoadErrors> {
    let factory = Arc::new(factory);
    let mut report = Report::default();
    for s in load_paths(paths)? {
        if s.config.variant.is_some() {
            report.skipped.push(s.config.name.clone());
            continue;
        }
        let valid = PreparedConfig::new(s.config.clone());
        for seed in 0..seeds.unwrap_or(s.config.seeds) {
            report
                .runs
                .push(seed_report(&factory, &s, valid.as_ref(), seed));
        }
    }
    Ok(report)
}

/// Runs one seed of one scenario on a store from `factory`.
pub fn check_seed<F: StoreFactory>(factory: &Arc<F>, s: &Scenario, seed: u64) -> SeedCheck {
    let valid = PreparedConfig::new(s.config.clone());
    seed_report(factory, s, valid.as_ref(), seed)
}

/// One seed through the door, with its reports.
fn seed_report<F: StoreFactory>(
    factory: &Arc<F>,
    s: &Scenario,
    valid: Result<&PreparedConfig, &HarnessError>,
    seed: u64,
) -> SeedCheck {
    let path = s.path.to_string_lossy().into_owned();
    let outcome = valid
        .map_err(ToString::to_string)
        .and_then(|cfg| {
            run_seed(cfg, seed, factory, RunOptions::default()).map_err(|e| e.to_string())
        })
        .map(|mut out| {
            out.take_history();
            out
        })
        .map_err(|error| NotRun {
            scenario: s.config.name.clone(),
            seed,
            error,
        });
    let reports = outcome.as_ref().map_or_else(
        |_| Vec::new(),
        |out| {
            out.violations
                .iter()
                .map(|v| violation_report(v, &s.config, seed, Some(&path)))
                .collect()
        },
    );
    SeedCheck {
        path: s.path.clone(),
        outcome,
        reports,
        replay: crate::report::replay_command(&path, seed),
    }
}
