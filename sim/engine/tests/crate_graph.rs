//! The crate graph is model → checker → engine → command line, with no edge
//! back up, and what a user compiles for one part is only that part:
//! - the engine (`leasehold-sim` without default features) compiles none of
//!   the command line's crates;
//! - the checker builds without turmoil or the engine, and the engine
//!   without turmoil (it has its own executor);
//! - the model depends on the core alone;
//! - chaos and the conformance suite stand apart from the engine;
//! - what the SQL adapters share (`leasehold-sql`) sits below them, and
//!   the core, below it, compiles no database driver;
//! - depending on `leasehold-sim` (to simulate your own store) does not
//!   compile the catalogue's buggy code paths into your `leasehold-core`:
//!   only the `catalogue` feature (on in the `leasehold` tool) brings them.

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
