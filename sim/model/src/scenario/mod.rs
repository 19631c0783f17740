//! Scenario files: loading `*.toml` into [`SimConfig`] with located errors,
//! and writing a config back as a file that loads again.
//!
//! A scenario file is a [`SimConfig`] in TOML (`scenarios/README.md`
//! documents it). Loading parses with serde (`deny_unknown_fields`, so a
//! misspelt key is an error), fills `name` from the file stem when unset,
//! then runs [`SimConfig::validate`] and checks the variant name; every
//! problem is reported as `FILE:LINE:COL: field: what is wrong`.

mod error;
mod locate;
mod write;

pub use error::{LoadError, LoadErrors};
pub use locate::{line_col, LineCol, SpanTree};
pub use write::to_toml;

use crate::catalogue::Variant;
use crate::config::SimConfig;
use std::path::{Path, PathBuf};

/// Most scenario files one directory walk reads.
pub const MAX_FILES: usize = 10_000;
/// Deepest directory nesting the walk descends into.
const MAX_DIR_DEPTH: usize = 8;

/// A loaded scenario: where it came from and what it says.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// The file it was read from.
    pub path: PathBuf,
    /// The validated configuration.
    pub config: SimConfig,
}

/// Reads every scenario under each path: a file is read as is, a directory
/// is walked recursively for `*.toml` files in sorted order. Collects every
/// error from every file before failing.
pub fn load_paths(paths: &[PathBuf]) -> Result<Vec<Scenario>, LoadErrors> {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        if p.is_dir() {
            if let Err(e) = collect_toml(p, 0, &mut files) {
                errors.push(LoadError::whole_file(p, e));
            }
        } else {
            files.push(p.clone());
        }
    }
    let mut out = Vec::new();
    for f in &files {
        match load_file(f) {
            Ok(s) => out.push(s),
            Err(e) => errors.extend(e.0),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(LoadErrors(errors))
    }
}

fn collect_toml(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<(), String> {
    if depth > MAX_DIR_DEPTH {
        return Err(format!("directories nested deeper than {MAX_DIR_DEPTH}"));
    }
    let read = std::fs::read_dir(dir).map_err(|e| format!("cannot read directory: {e}"))?;
    let mut entries: Vec<PathBuf> = read.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if out.len() >= MAX_FILES {
            return Err(format!("more than {MAX_FILES} scenario files"));
        }
        if p.is_dir() {
            collect_toml(&p, depth + 1, out)?;
        } else if p.extension().is_some_and(|e| e == "toml") {
            out.push(p);
        }
    }
    Ok(())
}

/// Reads one scenario file.
pub fn load_file(path: &Path) -> Result<Scenario, LoadErrors> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        LoadErrors(vec![LoadError::whole_file(
            path,
            format!("cannot read: {e}"),
        )])
    })?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let config = load_str(&text, path, &stem)?;
    Ok(Scenario {
        path: path.to_path_buf(),
        config,
    })
}

/// What a TOML syntax error says when the parser gives no reason of its own.
pub const INVALID_TOML: &str =
    "not valid TOML from here: a key needs a value, and a value must be complete";

/// Parses and validates scenario text; `file` only labels the errors and
/// `default_name` fills an unset `name`.
pub fn load_str(text: &str, file: &Path, default_name: &str) -> Result<SimConfig, LoadErrors> {
    let located = |offset: Option<usize>, field: Option<String>, message: String| {
        let lc = offset.map_or(LineCol { line: 1, col: 1 }, |o| line_col(text, o));
        LoadError {
            file: file.to_path_buf(),
            line: lc.line,
            col: lc.col,
            field,
            message,
        }
    };
    let mut config: SimConfig = toml::from_str(text).map_err(|e| {
        let offset = bad_event_offset(text).or(e.span().map(|s| s.start));
        let mut message = e.message().trim().to_string();
        if message.is_empty() {
            // The TOML parser gives no reason for some cut-off values
            // (`key =` at the end of the text); the position still says where.
            message = INVALID_TOML.to_string();
        }
        LoadErrors(vec![located(offset, None, message)])
    })?;
    if config.name.is_empty() {
        config.name = default_name.to_string();
    }
    let mut problems = config.validate().err().unwrap_or_default();
    // Without the catalogue a variant cannot be checked here; such a
    // scenario loads, and running it says why it cannot run.
    if let (Some(v), true) = (&config.variant, cfg!(feature = "catalogue")) {
        if Variant::parse(v).is_none() {
            problems.push(crate::config::ConfigProblem {
                path: "variant".into(),
                message: format!("unknown variant {v:?}; variants are {}", Variant::names()),
            });
        }
    }
    if problems.is_empty() {
        return Ok(config);
    }
    let tree = SpanTree::parse(text).unwrap_or_default();
    Err(LoadErrors(
        problems
            .into_iter()
            .map(|p| located(tree.locate(&p.path), Some(p.path), p.message))
            .collect(),
    ))
}

/// The offset of the first `events` sentence that does not parse: serde
/// reports such an error at the whole array, this points at the element.
fn bad_event_offset(text: &str) -> Option<usize> {
    let table: toml::Table = toml::from_str(text).ok()?;
    let events = table.get("events")?.as_array()?;
    let bad = events.iter().position(|e| {
        e.as_str()
            .is_some_and(|s| s.parse::<crate::config::ScriptedFault>().is_err())
    })?;
    SpanTree::parse(text)?.locate(&format!("events[{bad}]"))
}
