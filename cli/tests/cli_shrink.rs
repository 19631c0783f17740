//! `leasehold shrink` writes a smaller scenario that loads again and still
//! breaks the same invariant when replayed on the same seed.

use leasehold_cli::cli::engine;
use leasehold_cli::cli::stores::{StoreArgs, Stores};
use leasehold_model::scenario::load_file;
use leasehold_sim::runner::PreparedConfig;
use std::path::Path;
use std::process::Command;

fn shrinks(file: &str, max_runs: u32) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/catalogue")
        .join(file);
    let s = load_file(&src).unwrap();
    let inv = s.config.expect.violation.unwrap();
    let valid = PreparedConfig::new(s.config.clone()).unwrap();
    let seed = (0..s.config.seeds)
        .find(|&seed| {
            engine::run(&valid, seed, "x", &Stores::new(&StoreArgs::default()))
                .unwrap()
                .violations()
                .iter()
                .any(|v| v.invariant == inv)
        })
        .expect("the catalogue scenario catches its bug");
    let out = std::env::temp_dir().join(format!("leasehold-shrunk-{}-{file}", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .arg("shrink")
        .arg(&src)
        .args([
            "--seed",
            &seed.to_string(),
            "--max-runs",
            &max_runs.to_string(),
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    eprintln!("{file} seed {seed}:\n{err}");
    let shrunk = load_file(&out).unwrap_or_else(|e| panic!("shrunk file does not load: {e}"));
    let before = leasehold_sim::shrink::Size::of(&s.config);
    let after = leasehold_sim::shrink::Size::of(&shrunk.config);
    assert!(after.total() <= before.total(), "{before} -> {after}");
    let replay = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .arg("replay")
        .arg(&out)
        .args(["--seed", &seed.to_string()])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&replay.stdout);
    assert_eq!(replay.status.code(), Some(1), "{shown}");
    assert!(shown.contains(&format!("{inv}")), "{shown}");
    let _ = std::fs::remove_file(&out);
}

#[test]
fn shrunk_release_without_token_reloads_and_still_fails() {
    shrinks(
        "release_without_token_lets_a_stale_holder_finish_the_job.toml",
        120,
    );
}

#[test]
fn shrunk_claim_without_cas_reloads_and_still_fails() {
    shrinks("claim_without_cas_grants_one_lease_twice.toml", 120);
}
