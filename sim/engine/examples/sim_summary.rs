//! Prints the history summary of one seed of a built-in scenario.
//! `cargo run --release -p leasehold-sim --example sim_summary -- standard 3`
use leasehold_model::builtin;
use leasehold_sim::runner::{run_seed, PreparedConfig, RunOptions};
use leasehold_sim::stores::MemoryFactory;
use std::sync::Arc;
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().map_or("standard", String::as_str);
    let seed: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let mut cfg = match builtin::all().into_iter().find(|c| c.name == name) {
        Some(c) => c,
        None => {
            let text = std::fs::read_to_string(name).expect("a built-in name or a TOML file");
            toml::from_str(&text).expect("scenario TOML")
        }
    };
    if let Some(v) = args.get(2).filter(|v| v.as_str() != "-") {
        cfg.variant = Some(v.clone());
    }
    let cfg = PreparedConfig::new(cfg).expect("a valid scenario");
    let out = run_seed(&cfg, seed, &Arc::new(MemoryFactory), RunOptions::default()).expect("run");
    for (k, n) in out.history.summary() {
        println!("{k:32} {n}");
    }
    println!("violations {}", out.violations.len());
    for v in out.violations.iter().take(8) {
        println!(
            "{}",
            leasehold_sim::report::violation_report(v, &cfg, seed, None)
        );
    }
    if let Ok(p) = std::env::var("SIM_TRACE") {
        std::fs::write(p, out.history.to_jsonl()).expect("write trace");
    }
}
