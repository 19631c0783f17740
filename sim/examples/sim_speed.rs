//! Speed of the simulator: seeds per second and simulated/wall time.
//!
//! `cargo run --release -p leasehold-sim --example sim_speed -- [scenario] [seeds] [first-seed] [tick-ms]`
//! where scenario is `standard` (default), `small-swarm` or `calm`. Wall
//! time is read here, outside the simulation.

use leasehold_sim::runner::{builtin, run_seed};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().map_or("standard", String::as_str);
    let seeds: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(20);
    let first: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let mut cfg = builtin::all()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("unknown built-in scenario {name}"));
    if let Some(t) = args.get(3).and_then(|s| s.parse().ok()) {
        cfg.tick = leasehold_sim::duration::Dur::ms(t);
    }
    let start = Instant::now();
    let (mut sim_ms, mut bad, mut quiet, mut steps) = (0u64, 0u64, 0u64, 0u64);
    for seed in first..first + seeds {
        let t0 = Instant::now();
        let out = run_seed(&cfg, seed).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        sim_ms += out.sim_time_ms;
        steps += out.steps;
        quiet += u64::from(out.quiet_end);
        if !out.violations.is_empty() {
            bad += 1;
            eprintln!("seed {seed}: {} violations", out.violations.len());
            for v in out.violations.iter().take(5) {
                eprintln!(
                    "{}",
                    leasehold_sim::report::violation_report(v, &cfg, seed, None)
                );
            }
        }
        if std::env::var_os("SIM_SPEED_VERBOSE").is_some() {
            let c0 = Instant::now();
            let _ = leasehold_sim::checker::check(&out.history, &cfg);
            let c1 = c0.elapsed().as_secs_f64();
            let h0 = Instant::now();
            let _ = out.history.hash();
            eprintln!("  check {:.3}s hash {:.3}s", c1, h0.elapsed().as_secs_f64());
            eprintln!(
                "seed {seed}: {:.2}s wall, {}ms simulated, {} records, hash {:016x}",
                t0.elapsed().as_secs_f64(),
                out.sim_time_ms,
                out.history.records.len(),
                out.history_hash
            );
        }
    }
    let wall = start.elapsed().as_secs_f64();
    println!(
        "{name}: {seeds} seeds, tick {}ms, {bad} with violations, {quiet} ended quiet; {:.2} seeds/s, {:.0}x simulated/wall ({:.1} simulated min per seed, {} steps per seed)",
        cfg.tick.as_ms(),
        seeds as f64 / wall,
        sim_ms as f64 / 1000.0 / wall,
        sim_ms as f64 / 60_000.0 / seeds as f64,
        steps / seeds.max(1)
    );
}
