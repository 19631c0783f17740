//! The workspace's source files as the shape tests (`crate_graph.rs`,
//! `file_graph.rs`) read them.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, in sorted order (bounded by the tree).
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}
