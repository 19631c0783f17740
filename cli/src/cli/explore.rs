//! `leasehold explore [PATH…] [--for 1h]`: continuous exploration. Seeds
//! from a random base (printed; `--seed-base` repeats an exploration), half
//! of them with a swarm mix ([`super::swarm_mix`]), run on every core until
//! the time limit, a seed or failure limit, or SIGINT/SIGTERM; every
//! distinct failure (scenario and invariant) is shrunk and written to the
//! corpus folder as a scenario file that pins its seed (`first_seed`), so
//! `leasehold run CORPUS/` replays them all as regression cases.
//!
//! Invariants it upholds:
//! - nothing found is lost: a failure whose shrink is cut short by a
//!   signal is written unshrunk, and a harness error is written with its
//!   message;
//! - no file is overwritten: names carry the explorer's host and process
//!   id, and files are created with `create_new`, so two explorers (on one
//!   machine or many) never write the same name;
//! - every loop is bounded: seeds by `--max-seeds` or `--for` or a signal,
//!   shrinks by `--shrink-secs`, names by [`MAX_NAME_TRIES`].
//!
//! Exploration keeps the library's seed mix: a wheel holds each scenario
//! as many times as its own `seeds` (a heavy scenario of 10 seeds keeps
//! its small share), and seed k of the exploration is turn `k mod W` of
//! the wheel, so each scenario advances through its own seeds `base`,
//! `base+1`, … without gaps or repeats. By default every run comes off
//! the wheel; `--guided` guides the explorer by coverage
//! ([`super::explore_guided`]): every scenario once in the wheel's order,
//! then the scenarios that reached a rare situation weigh most, a share
//! of the runs mutate a kept input that reached a new or rare situation,
//! and a quarter still follow the wheel; a progress line names each
//! situation when first reached.
//! `--compare` runs both (`explore_compare.rs`, which builds on this file).

use super::args::ExploreArgs;
use super::engine::Shown;
use super::explore_guided::{Source, GENERATION};
use super::explore_runs;
use super::stores::Stores;
use super::ExitCode;
use leasehold_model::config::{InvariantId, SimConfig};
use leasehold_model::scenario::{load_paths, to_toml, Scenario};
use leasehold_model::store_kind::StoreKind;
use leasehold_sim::coverage::Coverage;
use leasehold_sim::runner::PreparedConfig;
use leasehold_sim::shrink::{shrink, Budget};
use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Most suffixes tried when a corpus name is taken.
pub const MAX_NAME_TRIES: u32 = 1_000;
/// Most simulation runs one shrink spends.
const SHRINK_MAX_RUNS: u32 = 2_000;
/// The largest seed a scenario file can hold (a TOML integer is an i64).
const TOML_MAX_SEED: u64 = i64::MAX as u64;

/// Set by SIGINT/SIGTERM: stop taking seeds.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::SeqCst);
}

fn install_signal_handlers() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic, which is
    // async-signal-safe; `signal` has no other precondition.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// This explorer's name in corpus file names: host and process id.
fn explorer_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "host".into());
    format!("{}-{}", clean(host.trim()), std::process::id())
}

/// Keeps `[A-Za-z0-9_]`, maps the rest to `_` (file-name safe everywhere).
fn clean(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if out.is_empty() {
        "x".into()
    } else {
        out
    }
}

/// The corpus file name of a finding (before any suffix).
pub fn corpus_name(what: &str, scenario: &str, seed: u64, explorer: &str) -> String {
    format!(
        "{}-{}-seed-{seed}-{}",
        clean(what),
        clean(scenario),
        clean(explorer)
    )
}

/// Writes `text` to a new file in `dir` named from `stem`, never
/// overwriting: `stem.toml`, else `stem-2.toml`, … Answers the path.
pub fn write_new(dir: &Path, stem: &str, text: &str) -> Result<PathBuf, String> {
    for k in 1..=MAX_NAME_TRIES {
        let name = if k == 1 {
            format!("{stem}.toml")
        } else {
            format!("{stem}-{k}.toml")
        };
        let path = dir.join(name);
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut f) => {
                f.write_all(text.as_bytes())
                    .and_then(|()| f.sync_all())
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot create {}: {e}", path.display())),
        }
    }
    Err(format!(
        "{}: {MAX_NAME_TRIES} files named {stem}* already",
        dir.display()
    ))
}

/// One seed's result, in run order.
struct Outcome {
    scenario: usize,
    seed: u64,
    /// The configuration that ran (mixed, mutated or as written).
    config: SimConfig,
    /// Kinds the swarm mix switched off.
    off: Vec<&'static str>,
    /// How the guided explorer drew it (`wheel`, or a mutation).
    how: String,
    result: Result<Shown, String>,
}

/// What the reporter does with failures.
struct Corpus<'a> {
    dir: &'a Path,
    explorer: String,
    base: u64,
    stores: &'a Stores,
    shrink_secs: u64,
    /// Distinct (scenario, invariant or "error") already written.
    seen: BTreeMap<(usize, String), PathBuf>,
    /// Failures by invariant (or "error"), duplicates included.
    by_kind: BTreeMap<String, u64>,
    written: Vec<PathBuf>,
}

impl Corpus<'_> {
    /// Records a failure; writes it (shrunk unless stopped) when it is the
    /// first of its kind for its scenario.
    fn record(&mut self, s: &Scenario, o: &Outcome) -> Result<(), String> {
        // A planted bug is named for the invariant its scenario expects
        // when the seed broke it; otherwise the first broken one names it.
        let (what, target) = match &o.result {
            Err(_) => ("error".to_string(), None),
            Ok(r) => {
                let Some(first) = r.violations().first() else {
                    return Ok(());
                };
                let inv = s
                    .config
                    .expect
                    .violation
                    .filter(|e| r.violations().iter().any(|v| v.invariant == *e))
                    .unwrap_or(first.invariant);
                (inv.to_string(), Some(inv))
            }
        };
        *self.by_kind.entry(what.clone()).or_default() += 1;
        if self.seen.contains_key(&(o.scenario, what.clone())) {
            return Ok(());
        }
        let kind = self.stores.kind_for(&o.config);
        let replay_store = if kind == StoreKind::Memory {
            String::new()
        } else {
            format!(" --store {}", kind.name())
        };
        let path_of = s.path.to_string_lossy();
        let (mut cfg, how) = match target {
            Some(inv) if !STOP.load(Ordering::SeqCst) => self.shrunk(&o.config, o.seed, inv),
            Some(_) => (
                o.config.clone(),
                "not shrunk: the explorer was stopped".to_string(),
            ),
            None => (o.config.clone(), "not shrunk: a harness error".to_string()),
        };
        cfg.name = format!("{}_{what}_seed_{}", s.config.name, o.seed);
        cfg.seeds = 1;
        cfg.first_seed = o.seed;
        cfg.expect.violation = None;
        let cause = match (&o.result, target) {
            (Err(e), _) => format!("harness error: {e}"),
            (Ok(r), Some(inv)) => r
                .findings()
                .find(|(v, _)| v.invariant == inv)
                .map_or_else(String::new, |(_, f)| f.summary.clone()),
            (Ok(_), None) => String::new(),
        };
        cfg.description = format!(
            "Found by leasehold explore from {path_of} seed {}: {cause}. A regression case: \
             every invariant must hold on seed {}.",
            o.seed, o.seed
        );
        let stem = corpus_name(&what, &s.config.name, o.seed, &self.explorer);
        let mix = if super::explore_guided::is_mutation(&o.how) {
            format!("none; guided, mutated: {}", o.how)
        } else if o.off.is_empty() {
            "none (the scenario's faults as written)".to_string()
        } else {
            format!("off: {}", o.off.join(", "))
        };
        let header = format!(
            "Written by `leasehold explore` (explorer {}, seed base {}).\n\
             From: {path_of}, seed {}; swarm mix {mix}.\n\
             {how}\n\
             Replay:     leasehold replay {{FILE}} --seed {}{replay_store}\n\
             Regression: leasehold run {{FILE}}{replay_store}",
            self.explorer, self.base, o.seed, o.seed
        );
        let dest = self.dir.join(format!("{stem}.toml"));
        let header = header.replace("{FILE}", &dest.to_string_lossy());
        let text = to_toml(&cfg, &header).map_err(|e| format!("cannot write a scenario: {e}"))?;
        let path = write_new(self.dir, &stem, &text)?;
        eprintln!(
            "explore: {what} in {} seed {} -> {} ({how})",
            s.config.name,
            o.seed,
            path.display()
        );
        self.seen.insert((o.scenario, what), path.clone());
        self.written.push(path);
        Ok(())
    }

    /// The smallest configuration that still breaks `inv` on `seed`, and a
    /// line saying how it was found.
    fn shrunk(&self, cfg: &SimConfig, seed: u64, inv: InvariantId) -> (SimConfig, String) {
        let kind = self.stores.kind_for(cfg);
        let mut fails = |c: &PreparedConfig| {
            self.stores
                .run(kind, c, seed)
                .is_ok_and(|o| o.violations.iter().any(|v| v.invariant == inv))
        };
        let schedule = leasehold_sim::runner::fault_schedule(cfg, seed);
        let budget = Budget {
            max_runs: SHRINK_MAX_RUNS,
            max_wall: Duration::from_secs(self.shrink_secs),
        };
        let t0 = Instant::now();
        let out = shrink(cfg, Some(&schedule), &mut fails, budget);
        if !PreparedConfig::new(out.config.clone()).is_ok_and(|c| fails(&c)) {
            // Never write a case that does not fail: keep the original.
            return (
                cfg.clone(),
                "not shrunk: the shrunk scenario did not fail again (report this: I10)".into(),
            );
        }
        let exhausted = out.budget_exhausted;
        (
            out.config,
            format!(
                "Shrunk in {} runs and {:.1}s{}: before {}; after {}.",
                out.runs,
                t0.elapsed().as_secs_f64(),
                if exhausted { " (budget exhausted)" } else { "" },
                out.before,
                out.after
            ),
        )
    }
}

/// What every explorer starts from: the scenarios it explores (pinned to
/// their stores), the stores, the seed base and the thread count.
pub(super) struct Prepared {
    /// The scenarios explored, each pinned to its store.
    pub scenarios: Vec<Scenario>,
    /// The stores they run on.
    pub stores: Stores,
    /// The seed base (given, or drawn and printed).
    pub base: u64,
    /// Threads.
    pub jobs: usize,
}

/// Checks the limits, loads the scenarios (the catalogue's only with
/// `--include-catalogue`), checks their stores and draws the seed base.
pub(super) fn prepare(args: &ExploreArgs) -> Result<Prepared, ExitCode> {
    let zero = [
        ("--for", args.for_.map(|d| d.0 .0)),
        ("--max-seeds", args.max_seeds),
        ("--max-failures", args.max_failures.map(|n| n as u64)),
        ("--progress-secs", Some(args.progress_secs)),
    ];
    if let Some((flag, _)) = zero.iter().find(|(_, v)| *v == Some(0)) {
        eprintln!("leasehold: {flag} 0 would explore nothing; give a positive value");
        return Err(ExitCode::Input);
    }
    let stores = Stores::new(&args.stores);
    let loaded = match load_paths(&args.paths) {
        Ok(s) => s,
        Err(e) => {
            crate::diagnostic::eprint_load_errors(&e);
            return Err(ExitCode::Input);
        }
    };
    let total = loaded.len();
    let mut scenarios: Vec<Scenario> = loaded
        .into_iter()
        .filter(|s| args.include_catalogue || s.config.expect.violation.is_none())
        .filter(|s| !super::run::not_carried(s, stores.kind_for(&s.config), &stores))
        .collect();
    if scenarios.len() < total {
        eprintln!(
            "explore: {} of {total} scenarios left out (catalogue scenarios, whose bug is \
             expected: --include-catalogue explores them too)",
            total - scenarios.len()
        );
    }
    if scenarios.is_empty() {
        eprintln!("leasehold: no scenario to explore under the given paths");
        return Err(ExitCode::Input);
    }
    for k in &super::run::pin_stores(&mut scenarios, &stores) {
        if let Err(e) = stores.check(*k) {
            eprintln!("leasehold: {e}");
            return Err(ExitCode::Input);
        }
    }
    let base = args.seed_base.unwrap_or_else(super::run::random_base);
    // Corpus files pin seeds as TOML integers, which stop at i64::MAX.
    if base > TOML_MAX_SEED / 2 {
        eprintln!(
            "leasehold: --seed-base {base} is too large: corpus files pin seeds as TOML \
             integers (at most {TOML_MAX_SEED}); use a base up to {}",
            TOML_MAX_SEED / 2
        );
        return Err(ExitCode::Input);
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    Ok(Prepared {
        scenarios,
        stores,
        base,
        jobs,
    })
}

/// Runs the command (without `--compare`: the dispatcher sends that to
/// `explore_compare.rs`).
pub fn run(args: &ExploreArgs) -> ExitCode {
    let Prepared {
        scenarios,
        stores,
        base,
        jobs,
    } = match prepare(args) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if let Err(e) = std::fs::create_dir_all(&args.corpus) {
        eprintln!("leasehold: cannot create {}: {e}", args.corpus.display());
        return ExitCode::Input;
    }
    let limit = args.for_.map(|d| Duration::from_millis(d.0 .0));
    let max_seeds = args.max_seeds.unwrap_or(u64::MAX);
    eprintln!(
        "explore: {} scenarios from seed {base} on {jobs} threads, {}, {}; corpus {} \
         (repeat with --seed-base {base})",
        scenarios.len(),
        if args.guided {
            "guided by coverage"
        } else {
            "uniform"
        },
        args.for_
            .map_or("until Ctrl-C or SIGTERM".to_string(), |d| format!(
                "for {d}"
            )),
        args.corpus.display()
    );
    install_signal_handlers();
    let mut corpus = Corpus {
        dir: &args.corpus,
        explorer: explorer_id(),
        base,
        stores: &stores,
        shrink_secs: args.shrink_secs,
        seen: BTreeMap::new(),
        by_kind: BTreeMap::new(),
        written: Vec::new(),
    };
    let started = Instant::now();
    let enough = AtomicBool::new(false);
    let mut source = Source::new(&scenarios, base, args.no_swarm_mix, args.guided);
    let mut done: u64 = 0;
    let mut failures: u64 = 0;
    let mut write_error = None;
    let every = Duration::from_secs(args.progress_secs);
    let mut last = Instant::now();
    let over_time = || limit.is_some_and(|l| started.elapsed() >= l);
    let stop = || STOP.load(Ordering::SeqCst) || enough.load(Ordering::SeqCst) || over_time();
    // One generation at a time: drawn, run on every thread, learnt from in
    // run order (so the same seed and count of runs draw the same runs).
    while done < max_seeds && !stop() {
        let inputs = source.draw(&scenarios, GENERATION.min(max_seeds - done));
        let results = explore_runs::generation(&inputs, &scenarios, &stores, jobs, &stop);
        for (input, result) in inputs.into_iter().zip(results) {
            let Some(result) = result else { continue };
            done += 1;
            let none = Coverage::default();
            let coverage = result.as_ref().map_or(&none, |r| &r.outcome.coverage);
            let new = source.learn(&input, coverage);
            if !new.is_empty() {
                eprintln!(
                    "explore: run {done} ({:.1}s): {} situations reached, new: {}",
                    started.elapsed().as_secs_f64(),
                    source.reached(),
                    new.join(", ")
                );
            }
            let bad = result.as_ref().map_or(true, |r| !r.violations().is_empty());
            if !bad {
                continue;
            }
            failures += 1;
            let o = Outcome {
                scenario: input.scenario,
                seed: input.seed,
                config: input.config,
                off: input.off,
                how: input.how,
                result,
            };
            if let Err(e) = corpus.record(&scenarios[o.scenario], &o) {
                write_error = Some(e);
                enough.store(true, Ordering::SeqCst);
            }
            if args.max_failures.is_some_and(|m| corpus.seen.len() >= m) {
                enough.store(true, Ordering::SeqCst);
            }
        }
        if last.elapsed() >= every {
            last = Instant::now();
            progress(done, started, failures, &corpus, &source);
        }
    }
    let wall = started.elapsed().as_secs_f64();
    let why = if STOP.load(Ordering::SeqCst) {
        "stopped by a signal"
    } else if write_error.is_some() {
        "stopped: the corpus could not be written"
    } else if enough.load(Ordering::SeqCst) {
        "stopped at --max-failures"
    } else if done >= max_seeds {
        "stopped at --max-seeds"
    } else {
        "time limit reached"
    };
    eprintln!("explore: {why}");
    progress(done, started, failures, &corpus, &source);
    let kinds = super::tally::joined(&corpus.by_kind, |(k, n)| format!("{k} x{n}"));
    println!(
        "explored {done} seeds in {wall:.1}s ({:.1} seeds/s) from seed base {base}: {failures} \
         failures{}",
        done as f64 / wall.max(1e-9),
        if kinds.is_empty() {
            String::new()
        } else {
            format!(" ({kinds})")
        }
    );
    for p in &corpus.written {
        println!("  wrote {}", p.display());
    }
    if !corpus.written.is_empty() {
        println!("regression cases: leasehold run {}", args.corpus.display());
    }
    if let Some(e) = write_error {
        eprintln!("leasehold: {e}");
        return ExitCode::Input;
    }
    if failures > 0 {
        ExitCode::Violation
    } else {
        ExitCode::Ok
    }
}

fn progress(done: u64, started: Instant, failures: u64, corpus: &Corpus<'_>, source: &Source) {
    let t = started.elapsed().as_secs_f64();
    let kept = if source.guided() {
        format!(", {} inputs kept", source.kept())
    } else {
        String::new()
    };
    eprintln!(
        "explore: {done} seeds in {t:.0}s ({:.1} seeds/s), {} situations reached{kept}, \
         {failures} failures, {} written",
        done as f64 / t.max(1e-9),
        source.reached(),
        corpus.written.len()
    );
}

#[cfg(test)]
mod tests {
    use super::super::explore_guided::Wheel;
    use super::*;

    #[test]
    fn the_wheel_keeps_each_scenarios_share_and_never_repeats_a_seed() {
        let dir = tempfile::tempdir().unwrap();
        for (name, seeds) in [("a", 3), ("b", 1), ("c", 5)] {
            std::fs::write(
                dir.path().join(format!("{name}.toml")),
                format!("seeds = {seeds}\n"),
            )
            .unwrap();
        }
        let scenarios = load_paths(&[dir.path().to_path_buf()]).unwrap();
        let wheel = Wheel::new(&scenarios);
        assert_eq!(wheel.slots.len(), 9);
        let mut seen = std::collections::BTreeSet::new();
        let mut per = [0u64; 3];
        for k in 0..90 {
            let (i, n) = wheel.turn(k);
            assert!(seen.insert((i, n)), "seed {n} of scenario {i} twice");
            per[i] += 1;
        }
        assert_eq!(per, [30, 10, 50], "each scenario's own share");
        // Every scenario's seeds are 0..count, without gaps.
        for (i, &n) in per.iter().enumerate() {
            assert!((0..n).all(|s| seen.contains(&(i, s))));
        }
    }

    #[test]
    fn names_differ_between_explorers_and_never_overwrite() {
        let a = corpus_name("I5", "some scenario", 7, "host-a-12");
        let b = corpus_name("I5", "some scenario", 7, "host-b-12");
        assert_ne!(a, b);
        assert!(!a.contains(' ') && !a.contains('/'));
        let dir = tempfile::tempdir().unwrap();
        let p1 = write_new(dir.path(), &a, "one").unwrap();
        let p2 = write_new(dir.path(), &a, "two").unwrap();
        assert_ne!(p1, p2);
        assert_eq!(std::fs::read_to_string(&p1).unwrap(), "one");
        assert_eq!(std::fs::read_to_string(&p2).unwrap(), "two");
    }
}
