//! The determinism rules, checked in the sources of what the simulator
//! runs (the core, the adapters, the engine):
//! - every `select!` is `biased;` (an unbiased one draws from tokio's
//!   process-seeded generator, so a history would depend on the process);
//! - the engine's simulated code never reads the wall clock and never uses
//!   tokio's executor or timers: time is the seed's simulated clock and
//!   tasks run on the seed's own executor (`exec`). The only wall-clock
//!   reads allowed are the run timeout, the shrinker's budget and the SQL
//!   driver's settle bound, none of which a history can see.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Adds every `.rs` file under `dir` to `out`, kept sorted (the walk ends
/// with the tree: each directory is read once).
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.expect("a directory entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
}

/// Source lines with comments cut off.
fn code_lines(p: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split("//").next().unwrap_or("").to_string()))
        .collect()
}

#[test]
fn every_select_in_simulated_code_is_biased() {
    let mut files = Vec::new();
    for d in ["core/src", "sim/engine/src", "adapters"] {
        rust_files(&root().join(d), &mut files);
    }
    let mut selects = 0;
    let mut bad = Vec::new();
    for f in &files {
        let lines = code_lines(f);
        for (k, (n, l)) in lines.iter().enumerate() {
            if !l.contains("select!") {
                continue;
            }
            selects += 1;
            // `biased;` is the first thing inside the braces: on this line
            // or the next.
            let next = lines.get(k + 1).map_or("", |(_, l)| l.as_str());
            let after = l.split("select!").nth(1).unwrap_or("");
            if !(after.contains("biased;") || next.trim_start().starts_with("biased;")) {
                bad.push(format!("{}:{n}", f.display()));
            }
        }
    }
    assert!(
        selects >= 10,
        "found only {selects} select!s: the scan is broken"
    );
    assert!(bad.is_empty(), "unbiased select!: {bad:?}");
}

#[test]
fn the_engine_never_reads_the_wall_clock_or_uses_tokios_executor_or_timers() {
    let allowed = [
        "sim/engine/src/runner/mod.rs", // the run timeout, between rounds
        "sim/engine/src/shrink.rs",     // the shrinker's wall-clock budget
        "sim/engine/src/stores/mod.rs", // the SQL driver's settle bound
        "sim/engine/src/stores/driver.rs",
        // The interleaving scheduler runs the SQL transactions on the
        // driver's runtime, like driver.rs: real I/O, bounded in real time.
        "sim/engine/src/stores/interleave.rs",
    ];
    let forbidden = [
        "Instant::now",
        "SystemTime",
        "tokio::spawn",
        "tokio::time",
        "tokio::task::spawn",
        "spawn_local",
    ];
    let mut files = Vec::new();
    rust_files(&root().join("sim/engine/src"), &mut files);
    assert!(files.len() > 20, "found only {} files", files.len());
    let mut bad = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(root())
            .unwrap_or(f)
            .to_string_lossy()
            .replace('\\', "/");
        let rel = rel.trim_start_matches("./").to_string();
        if allowed.iter().any(|a| rel.ends_with(a)) {
            continue;
        }
        for (n, l) in code_lines(f) {
            if let Some(w) = forbidden.iter().find(|w| l.contains(*w)) {
                bad.push(format!("{rel}:{n}: {w}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "wall clock or tokio executor in simulated code: {bad:?}"
    );
}
