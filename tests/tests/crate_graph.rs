//! The crate graph is model → checker → engine → command line, with no edge
//! back up, and what a user compiles for one part is only that part:
//! - the engine (`leasehold-sim` without default features) compiles none of
//!   the command line's crates;
//! - no crate re-exports another crate's names;
//! - the checker builds without turmoil or the engine, and the engine
//!   without turmoil (it has its own executor);
//! - the model depends on the core alone;
//! - chaos and the conformance suite stand apart from the engine, and only
//!   the command line depends on chaos;
//! - what the SQL adapters share (`leasehold-sql`) sits below them, and
//!   the core, below it, compiles no database driver;
//! - no workspace crate builds vendored code (`vendor/`);
//! - depending on `leasehold-sim` (to simulate your own store) does not
//!   compile the catalogue's buggy code paths into your `leasehold-core`:
//!   only the `catalogue` feature (on in the `leasehold` tool) brings them.

mod source_tree;

use source_tree::rust_files;
use std::process::Command;

fn tree(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "--prefix", "none"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn features_of(package: &str) -> String {
    tree(&["-e", "features,no-dev", "-p", package])
}

/// The crate names in `package`'s normal dependency tree (itself included).
fn crates_of(package: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["-e", "normal", "-p", package];
    args.extend_from_slice(extra);
    let mut names: Vec<String> = tree(&args)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect();
    names.sort();
    names.dedup();
    names
}

fn assert_none_of(package: &str, extra: &[&str], banned: &[&str]) {
    let crates = crates_of(package, extra);
    assert!(
        crates.iter().any(|c| c == package),
        "{package} not in {crates:?}"
    );
    let found: Vec<&&str> = banned
        .iter()
        .filter(|b| crates.iter().any(|c| c == **b))
        .collect();
    assert!(found.is_empty(), "{package} {extra:?} depends on {found:?}");
}

const COMMAND_LINE: [&str; 6] = [
    "clap",
    "indicatif",
    "quick-junit",
    "annotate-snippets",
    "clojure-reader",
    "leasehold-cli",
];

#[test]
fn the_engine_compiles_no_command_line_crate() {
    assert_none_of("leasehold-sim", &["--no-default-features"], &COMMAND_LINE);
    // With its SQL stores too.
    assert_none_of("leasehold-sim", &[], &COMMAND_LINE);
}

/// The engine runs every host on its own executor (`exec`): turmoil, which
/// gave each host a runtime of its own, is gone from its tree.
#[test]
fn the_engine_runs_without_turmoil() {
    assert_none_of("leasehold-sim", &[], &["turmoil"]);
}

#[test]
fn the_checker_builds_without_the_engine_or_turmoil() {
    let banned = [
        "turmoil",
        "leasehold-sim",
        "leasehold-memory",
        "leasehold-cli",
        "madsim",
    ];
    assert_none_of("leasehold-check", &["--no-default-features"], &banned);
    assert_none_of("leasehold-check", &["--all-features"], &banned);
}

#[test]
fn the_model_depends_on_the_core_alone() {
    let banned = [
        "turmoil",
        "leasehold-check",
        "leasehold-sim",
        "leasehold-memory",
        "leasehold-cli",
        "clap",
    ];
    assert_none_of("leasehold-model", &["--all-features"], &banned);
}

#[test]
fn chaos_and_conformance_stand_apart_from_the_engine() {
    assert_none_of(
        "leasehold-chaos",
        &[],
        &["leasehold-sim", "turmoil", "leasehold-cli"],
    );
    assert_none_of(
        "leasehold-conformance",
        &[],
        &[
            "leasehold-memory",
            "leasehold-sqlite",
            "leasehold-postgres",
            "leasehold-sim",
        ],
    );
    assert_none_of(
        "leasehold-core",
        &["--all-features"],
        &["leasehold-conformance"],
    );
}

#[test]
fn the_simulator_library_leaves_the_core_without_buggy_variants() {
    let tree = features_of("leasehold-sim");
    assert!(tree.contains("leasehold-core"), "{tree}");
    assert!(!tree.contains("buggy-variants"), "{tree}");
}

#[test]
fn the_leasehold_tool_carries_the_catalogue() {
    assert!(features_of("leasehold-cli").contains("buggy-variants"));
}

/// What the SQL adapters share sits below them, and the core below it,
/// free of any database driver.
#[test]
fn the_shared_sql_crate_sits_between_the_core_and_the_sql_adapters() {
    assert_none_of(
        "leasehold-sql",
        &[],
        &[
            "leasehold-memory",
            "leasehold-sqlite",
            "leasehold-postgres",
            "leasehold-conformance",
            "leasehold-sim",
        ],
    );
    assert_none_of(
        "leasehold-core",
        &["--all-features"],
        &["leasehold-sql", "sqlx", "sqlx-core"],
    );
    for adapter in ["leasehold-sqlite", "leasehold-postgres"] {
        assert!(
            crates_of(adapter, &[]).iter().any(|c| c == "leasehold-sql"),
            "{adapter} reads its rows through leasehold-sql"
        );
    }
}

/// `cargo metadata` of the whole workspace, with its resolved graph.
fn metadata() -> serde_json::Value {
    let o = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("cargo metadata prints JSON")
}

fn strs(v: &serde_json::Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(|x| x.as_str()).collect())
        .unwrap_or_default()
}

/// The workspace's packages as (id, name, manifest path, declared
/// dependency names of every kind).
fn members(m: &serde_json::Value) -> Vec<(&str, &str, &str, Vec<&str>)> {
    let ws = strs(&m["workspace_members"]);
    m["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| ws.contains(&p["id"].as_str().unwrap_or_default()))
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .map(|d| d.iter().filter_map(|x| x["name"].as_str()).collect())
                .unwrap_or_default();
            (
                p["id"].as_str().unwrap_or_default(),
                p["name"].as_str().unwrap_or_default(),
                p["manifest_path"].as_str().unwrap_or_default(),
                deps,
            )
        })
        .collect()
}

/// The real-process chaos tool sits beside the simulator, below the
/// command line that fronts both: no other crate may reach up into it.
#[test]
fn only_the_command_line_depends_on_chaos() {
    let m = metadata();
    let dependents: Vec<&str> = members(&m)
        .into_iter()
        .filter(|(_, _, _, deps)| deps.contains(&"leasehold-chaos"))
        .map(|(_, name, _, _)| name)
        .collect();
    assert_eq!(dependents, ["leasehold-cli"]);
}

/// No workspace crate builds vendored code, directly or through any
/// dependency (a `[patch]` to `vendor/` included): vendored copies drift
/// from their upstream unseen.
#[test]
fn no_workspace_crate_depends_on_vendored_code() {
    let m = metadata();
    let root = m["workspace_root"].as_str().expect("workspace root");
    let vendor = format!("{root}/vendor/");
    let path_of: std::collections::BTreeMap<&str, &str> = m["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap_or_default(),
                p["manifest_path"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let deps_of: std::collections::BTreeMap<&str, Vec<&str>> = m["resolve"]["nodes"]
        .as_array()
        .expect("a resolved graph")
        .iter()
        .map(|n| {
            (
                n["id"].as_str().unwrap_or_default(),
                strs(&n["dependencies"]),
            )
        })
        .collect();
    let mut bad = Vec::new();
    for (id, name, _, _) in members(&m) {
        // Every package at most once: bounded by the graph's size.
        let mut seen = std::collections::BTreeSet::new();
        let mut todo = vec![id];
        while let Some(p) = todo.pop() {
            if !seen.insert(p) {
                continue;
            }
            if path_of.get(p).is_some_and(|m| m.starts_with(&vendor)) {
                bad.push(format!("{name} -> {p}"));
            }
            todo.extend(deps_of.get(p).into_iter().flatten());
        }
    }
    assert!(bad.is_empty(), "vendored code in the build: {bad:?}");
}

/// `pub use` of a path that starts at another workspace crate, and the
/// allowed ones with why.
const ALLOWED_REEXPORTS: [(&str, &str); 1] = [
    // Not a façade: with the `catalogue` feature the scenario model's
    // variant type is the core's; without it the model defines an empty
    // type in its place, so a scenario naming a variant is refused at load.
    (
        "sim/model/src/catalogue.rs",
        "leasehold_core::variants::Variant",
    ),
];

/// Each crate's files import a name from the crate that owns it: no
/// workspace crate re-exports another workspace crate's modules or items
/// (a façade makes two crates read as one and hides who owns what).
#[test]
fn no_crate_reexports_another_crates_names() {
    let m = metadata();
    let root = std::path::PathBuf::from(m["workspace_root"].as_str().expect("workspace root"));
    let members = members(&m);
    let libs: Vec<String> = members
        .iter()
        .map(|(_, name, _, _)| name.replace('-', "_"))
        .collect();
    assert!(libs.iter().any(|l| l == "leasehold_core"), "{libs:?}");
    let mut found = Vec::new();
    let mut scanned = 0;
    for (_, name, manifest, _) in &members {
        let own = name.replace('-', "_");
        let dir = std::path::Path::new(manifest)
            .parent()
            .expect("a manifest's folder")
            .join("src");
        let mut files = Vec::new();
        rust_files(&dir, &mut files);
        for file in files {
            scanned += 1;
            let text = std::fs::read_to_string(&file).expect("a readable source file");
            let rel = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .display()
                .to_string();
            for stmt in text.split(';') {
                // The statement from its `pub use` line on, without
                // comments (a chunk may begin with the end of an item).
                let lines: Vec<&str> = stmt
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.starts_with("//"))
                    .collect();
                let Some(at) = lines.iter().position(|l| l.starts_with("pub use ")) else {
                    continue;
                };
                let code = lines[at..].join(" ");
                let path = &code["pub use ".len()..];
                let path = path.trim_start_matches("::").trim();
                let first = path.split("::").next().unwrap_or_default();
                if first != own && libs.iter().any(|l| l == first) {
                    let allowed = ALLOWED_REEXPORTS
                        .iter()
                        .any(|(f, p)| *f == rel && *p == path);
                    if !allowed {
                        found.push(format!("{rel}: pub use {path}"));
                    }
                }
            }
        }
    }
    assert!(scanned > 100, "only {scanned} files scanned");
    assert!(found.is_empty(), "re-exports of another crate: {found:#?}");
}
