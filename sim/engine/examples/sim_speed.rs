//! Speed of the simulator: seeds per second and simulated/wall time.
//!
//! `cargo run --release -p leasehold-sim --example sim_speed -- [scenario] [seeds] [first-seed] [tick-ms] [threads]`
//! where scenario is `standard` (default), `small-swarm` or `calm`; `tick-ms`
//! `0` keeps the scenario's tick; `threads` defaults to 1. Wall time is read
//! here, outside the simulation. Set `SIM_SPEED_VERBOSE=1` for one line per
//! seed. Exits 1 if any seed broke an invariant.

use leasehold_model::builtin;
use leasehold_sim::runner::{run_seed, PreparedConfig, RunOptions};
use leasehold_sim::stores::MemoryFactory;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Instant;

#[derive(Default)]
struct Totals {
    sim_ms: u64,
    steps: u64,
    quiet: u64,
    timing_broken: u64,
    bad: Vec<u64>,
    cpu_s: f64,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().map_or("standard", String::as_str);
    let seeds: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(20);
    let first: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let threads: u64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(1).max(1);
    let mut cfg = builtin::all()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("unknown built-in scenario {name}"));
    if let Some(t) = args.get(3).and_then(|s| s.parse().ok()).filter(|&t| t > 0) {
        cfg.tick = leasehold_model::duration::Dur::ms(t);
    }
    let verbose = std::env::var_os("SIM_SPEED_VERBOSE").is_some();
    let next = AtomicU64::new(first);
    let totals = Mutex::new(Totals::default());
    let cfg = PreparedConfig::new(cfg).expect("a valid scenario");
    let memory = Arc::new(MemoryFactory);
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= first + seeds {
                    break;
                }
                let t0 = Instant::now();
                let out = run_seed(&cfg, seed, &memory, RunOptions::default())
                    .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                let took = t0.elapsed().as_secs_f64();
                let mut t = totals.lock().expect("totals");
                t.sim_ms += out.sim_time_ms;
                t.steps += out.steps;
                t.quiet += u64::from(out.quiet_end);
                t.timing_broken += u64::from(out.timing_assumption_broken);
                t.cpu_s += took;
                if !out.violations.is_empty() {
                    t.bad.push(seed);
                    eprintln!("seed {seed}: {} violations", out.violations.len());
                    for v in out.violations.iter().take(5) {
                        eprintln!(
                            "{}",
                            leasehold_sim::report::violation_report(v, &cfg, seed, None)
                        );
                    }
                }
                if verbose {
                    eprintln!(
                        "seed {seed}: {took:.2}s wall, {}ms simulated, {} records, hash {:016x}",
                        out.sim_time_ms,
                        out.history.records.len(),
                        out.history_hash
                    );
                }
            });
        }
    });
    let wall = start.elapsed().as_secs_f64();
    let t = totals.into_inner().expect("totals");
    println!(
        "{name}: {seeds} seeds on {threads} thread(s), tick {}ms: {} with violations {:?}, {} ended quiet, {} broke the timing assumption; \
         {:.2} seeds/s, {:.0}x simulated/wall overall ({:.0}x per thread), {:.2} simulated min and {} steps per seed",
        cfg.tick.as_ms(),
        t.bad.len(),
        t.bad,
        t.quiet,
        t.timing_broken,
        seeds as f64 / wall,
        t.sim_ms as f64 / 1000.0 / wall,
        t.sim_ms as f64 / 1000.0 / t.cpu_s.max(1e-9),
        t.sim_ms as f64 / 60_000.0 / seeds as f64,
        t.steps / seeds.max(1)
    );
    if !t.bad.is_empty() {
        std::process::exit(1);
    }
}
