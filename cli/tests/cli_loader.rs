//! The scenario loader: every shipped scenario loads, and malformed files
//! give errors that name the file, line, column and what is wrong.

use leasehold_model::scenario::{load_paths, load_str, LoadError};
use std::path::{Path, PathBuf};

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// Loads `text` as `bad.toml` and answers its errors.
fn errors(text: &str) -> Vec<LoadError> {
    match load_str(text, Path::new("bad.toml"), "bad") {
        Ok(cfg) => panic!("loaded a bad file: {cfg:?}"),
        Err(e) => e.0,
    }
}

/// The single error of `text`, checked to sit at `line:col` and mention `needle`.
fn one_error_at(text: &str, line: usize, col: usize, needle: &str) -> String {
    let errs = errors(text);
    assert_eq!(errs.len(), 1, "{errs:?}");
    let e = &errs[0];
    let shown = e.to_string();
    assert_eq!((e.line, e.col), (line, col), "{shown}");
    assert!(
        shown.starts_with(&format!("bad.toml:{line}:{col}: ")),
        "{shown}"
    );
    assert!(shown.contains(needle), "{shown} lacks {needle:?}");
    shown
}

#[test]
fn every_shipped_scenario_loads_and_names_itself_after_its_file() {
    let all = load_paths(&[scenarios_dir()]).unwrap_or_else(|e| panic!("{e}"));
    assert!(all.len() >= 15 + 12, "only {} scenarios", all.len());
    for s in &all {
        let stem = s.path.file_stem().unwrap().to_string_lossy();
        assert_eq!(s.config.name, stem);
        assert!(
            !s.config.description.is_empty(),
            "{stem} has no description"
        );
    }
    // One catalogue scenario per variant of the bug catalogue (the
    // exhaustive checker's counterexamples in `exhaustive/` run variants
    // too, each expecting its violation).
    let catalogue = all
        .iter()
        .filter(|s| s.config.variant.is_some())
        .filter(|s| s.path.parent().is_some_and(|p| p.ends_with("catalogue")))
        .count();
    assert_eq!(catalogue, leasehold_model::catalogue::Variant::ALL.len());
    assert!(all
        .iter()
        .all(|s| s.config.variant.is_some() == s.config.expect.violation.is_some()));
}

#[test]
fn unknown_key_is_located() {
    one_error_at(
        "seeds = 3\n\n[protocol]\nlease = \"10s\"\nrenew_intervall = \"3s\"\n",
        5,
        1,
        "unknown field `renew_intervall`",
    );
}

/// The TOML parser gives no reason for a key cut off before its value
/// (found by `input_fuzz`, text `a=`): the error still says what is wrong.
#[test]
fn key_without_a_value_says_what_is_wrong() {
    one_error_at("a=", 1, 3, "a key needs a value");
    one_error_at("seeds = 1\nduration =", 2, 11, "a key needs a value");
}

#[test]
fn unknown_top_level_table_is_located() {
    one_error_at(
        "[topologyy]\nworkers = 3\n",
        1,
        2,
        "unknown field `topologyy`",
    );
}

#[test]
fn duration_without_unit_is_located_at_the_value() {
    one_error_at("[protocol]\nlease = \"10\"\n", 2, 9, "needs a unit");
}

#[test]
fn duration_with_bad_unit_is_located() {
    one_error_at("duration = \"3 weeks\"\n", 1, 12, "duration");
}

#[test]
fn min_greater_than_max_is_located_at_the_key() {
    one_error_at(
        "[workload]\njobs = 3\n  run_time = [\"5s\", \"1s\"]\n",
        3,
        3,
        "workload.run_time: min 5s is greater than max 1s",
    );
}

#[test]
fn renew_not_below_lease_is_located() {
    one_error_at(
        "[protocol]\nlease = \"5s\"\nrenew_interval = \"5s\"\n",
        3,
        1,
        "must be shorter than the lease",
    );
}

#[test]
fn unknown_host_in_an_event_is_located_at_the_event() {
    let text = "[topology]\nworkers = 2\n\n[faults]\nwindow = \"1m\"\n\nevents = [\n  \"crash worker-1 at 5s\",\n  \"crash worker-7 at 6s\",\n]\n";
    // `events` sits under [faults] here, which is wrong in itself.
    one_error_at(text, 7, 1, "unknown field `events`");
    let text = "events = [\n  \"crash worker-1 at 5s\",\n  \"crash worker-7 at 6s\",\n]\n\n[topology]\nworkers = 2\n";
    one_error_at(text, 3, 3, "unknown host \"worker-7\"");
}

#[test]
fn unreadable_event_sentence_is_located() {
    one_error_at(
        "events = [\"explode worker-1 at 5s\"]\n",
        1,
        11,
        "cannot read fault",
    );
}

#[test]
fn bad_variant_name_is_located_and_lists_the_catalogue() {
    let shown = one_error_at(
        "seeds = 2\nvariant = \"release-without-tokens\"\n",
        2,
        1,
        "unknown variant",
    );
    assert!(shown.contains("release-without-token,"), "{shown}");
}

#[test]
fn every_problem_is_reported_not_just_the_first() {
    let errs = errors(
        "seeds = 0\n[protocol]\nlease = \"5s\"\nrenew_interval = \"6s\"\nmax_attempts = 0\n",
    );
    let lines: Vec<usize> = errs.iter().map(|e| e.line).collect();
    assert_eq!(lines, vec![1, 4, 5], "{errs:?}");
}

#[test]
fn directory_load_reports_each_bad_file() {
    let dir = std::env::temp_dir().join(format!("leasehold-loader-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("nested")).unwrap();
    std::fs::write(dir.join("a_ok.toml"), "seeds = 1\n").unwrap();
    std::fs::write(dir.join("b_bad.toml"), "seeds = \"x\"\n").unwrap();
    std::fs::write(
        dir.join("nested/c_bad.toml"),
        "[network]\nlatency = [\"9s\", \"1s\"]\n",
    )
    .unwrap();
    std::fs::write(dir.join("notes.txt"), "not a scenario").unwrap();
    let err = load_paths(std::slice::from_ref(&dir)).unwrap_err();
    let text = err.to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(err.0.len(), 2, "{text}");
    assert!(text.contains("b_bad.toml:1:9: "), "{text}");
    assert!(text.contains("c_bad.toml:2:1: network.latency"), "{text}");
}

#[test]
fn the_readme_example_loads() {
    let readme = std::fs::read_to_string(scenarios_dir().join("README.md")).unwrap();
    let start = readme.find("```toml\n").expect("an example") + "```toml\n".len();
    let end = start + readme[start..].find("```").unwrap();
    let cfg = load_str(&readme[start..end], Path::new("README.md"), "readme")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cfg.events.len(), 2);
    assert_eq!(cfg.topology.workers, 4);
}
