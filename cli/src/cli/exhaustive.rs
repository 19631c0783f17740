//! `leasehold exhaust`: every interleaving of a small world, checked
//! breadth-first (`leasehold-exhaustive`), or depth-first for a scope whose
//! breadth-first frontier does not fit in memory (S2). Prints the figures,
//! and for a violation its path (a shortest one breadth-first), one line
//! per step; writes that path as a scenario file the simulator replays
//! when asked.
//!
//! Exit: 0 the invariants hold at the scope, 1 one broke, 2 bad input (a
//! scope the checker refuses, an unknown or store-side variant, a file
//! that cannot be written).

use super::ExitCode;
use clap::Args;
use leasehold_core::variants::Variant;
use leasehold_exhaustive::depth_first::{self, Progress};
use leasehold_exhaustive::model::WORKER_VARIANTS;
use leasehold_exhaustive::run::{check_stateright_watched, check_watched};
use leasehold_exhaustive::{counterexample, trace, Report, Scope, ScopeError, Verdict, World};
use std::cell::Cell;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

/// `leasehold exhaust` (the defaults are the pinned S1).
#[derive(Debug, Args)]
pub struct ExhaustArgs {
    /// Worker hosts (1 to 4).
    #[arg(long, default_value_t = 2)]
    pub workers: u8,
    /// Jobs (1 to 3).
    #[arg(long, default_value_t = 1)]
    pub jobs: u8,
    /// Most worker crashes (each restarts under a fresh identity).
    #[arg(long, default_value_t = 0)]
    pub crashes: u8,
    /// Most lost messages (a request, or its answer).
    #[arg(long, default_value_t = 1)]
    pub lost: u8,
    /// Most requests the store answers `Conflict`.
    #[arg(long, default_value_t = 1)]
    pub conflicts: u8,
    /// Most requests the store answers `Unavailable` at once.
    #[arg(long, default_value_t = 0)]
    pub unavailable: u8,
    /// Most client cancels.
    #[arg(long, default_value_t = 0)]
    pub cancels: u8,
    /// Longest a handler runs, in ms (1 to 60,000; default 700, within a
    /// 1,000 ms lease): a handler returns at any instant up to it. Longer
    /// handlers reach bugs that need a handler to outlive its lease
    /// (`expiry-does-not-stop-handler` with 2,500).
    #[arg(long, value_name = "MS", default_value_t = leasehold_exhaustive::scope::DEFAULT_MAX_JOB_TIME.0)]
    pub max_job_time: u64,
    /// Run a catalogue variant's workers (a worker-side variant; an unknown
    /// name lists them).
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// On a violation, write its shortest path as a scenario file that
    /// `leasehold run FILE` replays in the simulator.
    #[arg(long, value_name = "FILE")]
    pub write_counterexample: Option<PathBuf>,
    /// Search threads (the state count does not depend on them; the
    /// depth-first search runs on one).
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// The search: `breadth-first` (the checker's own, a shortest path),
    /// `depth-first` (the same states in a memory that holds only the
    /// current path, for S2; it stops at the first violation it meets,
    /// whose path, the stack, need not be a shortest one) or
    /// `stateright` (its reference: the same states, but the path of the
    /// last violating state it met, which the committed counterexample
    /// files were written from).
    #[arg(long, value_enum, default_value_t = Search::BreadthFirst)]
    pub search: Search,
}

/// Which search `leasehold exhaust` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Search {
    /// The checker's breadth-first search (`breadth_first.rs`).
    BreadthFirst,
    /// The checker's depth-first search (`depth_first.rs`), one thread,
    /// stopping at the first violation it meets.
    DepthFirst,
    /// `stateright`'s breadth-first checker over the same world.
    Stateright,
}

/// How often progress goes to a log (stderr not a terminal).
const LOG_EVERY: Duration = Duration::from_secs(10);

/// Runs `leasehold exhaust`.
pub fn run(a: &ExhaustArgs) -> ExitCode {
    let scope = match scope(a) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: --{}: {}", e.field.replace('_', "-"), e.reason);
            return ExitCode::Input;
        }
    };
    let variant = match a.variant.as_deref().map(worker_variant).transpose() {
        Ok(v) => v,
        Err(msg) => {
            eprintln!("error: --variant: {msg}");
            return ExitCode::Input;
        }
    };
    let world = match variant {
        Some(v) => World::with_variant(scope.clone(), v),
        None => World::new(scope.clone()),
    };
    eprintln!(
        "exhaust: {} workers, {} jobs, at most {} crashes, {} lost, {} conflicts, {} unavailable, \
         {} cancels, handlers up to {} ms; variant {}",
        a.workers,
        a.jobs,
        a.crashes,
        a.lost,
        a.conflicts,
        a.unavailable,
        a.cancels,
        a.max_job_time,
        variant.map_or("none", Variant::name)
    );
    // Progress on stderr: redrawn every second on a terminal, a line every
    // LOG_EVERY into a log (a capped run then shows how far it got).
    let tty = std::io::stderr().is_terminal();
    let logged = Cell::new(Duration::ZERO);
    let show = |line: String, t: Duration| {
        if tty {
            eprint!("\r{line}   ");
        } else if t >= logged.get() + LOG_EVERY {
            logged.set(t);
            eprintln!("{line}");
        }
    };
    let mut watch = |states: usize, t: Duration| {
        let line = format!(
            "  {states} states, {:.0} states/s, {:?}",
            states as f64 / t.as_secs_f64().max(1e-9),
            Duration::from_secs(t.as_secs())
        );
        show(line, t);
    };
    // The depth-first search's progress adds its stack depth and memory.
    let mut watch_deep = |p: &Progress| {
        let line = format!(
            "  {} states, {:.0} states/s, {:?}, stack depth {} (deepest {}), table {} MB, \
             resident {}",
            p.states,
            p.states as f64 / p.elapsed.as_secs_f64().max(1e-9),
            Duration::from_secs(p.elapsed.as_secs()),
            p.depth,
            p.max_depth,
            p.table_bytes >> 20,
            resident().map_or("unknown".into(), |kb| format!("{} MB", kb >> 10))
        );
        show(line, p.elapsed);
    };
    let r = match a.search {
        Search::BreadthFirst => check_watched(world, a.threads, &mut watch),
        Search::DepthFirst => depth_first::search_until_violation(&world, &mut watch_deep),
        Search::Stateright => check_stateright_watched(world, a.threads, &mut watch),
    };
    if tty {
        eprintln!();
    }
    println!("{}", figures(&r));
    match &r.verdict {
        // The whole search never stops at a budget; said as the probe says it.
        Verdict::NoneWithin { budget } => {
            println!("no violation within the budget of {budget} states (not a proof)");
            ExitCode::Ok
        }
        Verdict::Holds => {
            println!("holds: I1-I9 on every reachable state");
            if a.write_counterexample.is_some() {
                eprintln!("no counterexample to write: every invariant holds");
            }
            ExitCode::Ok
        }
        Verdict::Violated {
            inv,
            why,
            path,
            states,
        } => {
            println!("violated: {inv}: {why}");
            if a.search == Search::DepthFirst {
                println!(
                    "the depth-first search stopped at this first violation it met: its \
                     counts are those reached so far, not the scope's"
                );
            }
            if r.shortest {
                println!("shortest path, {} steps:", path.len());
            } else {
                println!(
                    "path, {} steps (this search's, not necessarily a shortest one):",
                    path.len()
                );
            }
            print!("{}", trace::render(path, states));
            if let Some(file) = &a.write_counterexample {
                let sc = counterexample::scenario(
                    &scope,
                    variant.map(Variant::name),
                    *inv,
                    why,
                    path,
                    states,
                );
                if let Err(e) = std::fs::write(file, sc.toml) {
                    eprintln!("error: --write-counterexample {}: {e}", file.display());
                    return ExitCode::Input;
                }
                println!("counterexample written to {}", file.display());
                for u in &sc.unexpressed {
                    println!("  not expressible in the fault language: {u}");
                }
            }
            ExitCode::Violation
        }
    }
}

/// The process's resident memory in kB (`VmRSS`), where `/proc` has it:
/// a measurement for the progress line only.
fn resident() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

fn scope(a: &ExhaustArgs) -> Result<Scope, ScopeError> {
    Scope::builder()
        .workers(a.workers)
        .jobs(a.jobs)
        .crashes(a.crashes)
        .lost(a.lost)
        .conflicts(a.conflicts)
        .unavailable(a.unavailable)
        .cancels(a.cancels)
        .max_job_time(leasehold_core::Millis(a.max_job_time))
        .build()
}

fn worker_variant(name: &str) -> Result<Variant, String> {
    let names = || {
        WORKER_VARIANTS
            .iter()
            .map(|v| v.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let v = Variant::parse(name)
        .ok_or_else(|| format!("unknown variant {name:?}; the worker variants: {}", names()))?;
    if !WORKER_VARIANTS.contains(&v) {
        return Err(format!(
            "{name} is a store-side variant (in the memory adapter, not the core's \
             transitions this world applies); the worker variants: {}",
            names()
        ));
    }
    Ok(v)
}

fn figures(r: &Report) -> String {
    format!(
        "{} states (up to symmetry), {} generated, depth {}, {:.1?}, {:.0} states/s",
        r.unique_states,
        r.state_count,
        r.max_depth,
        r.elapsed,
        r.states_per_sec()
    )
}
