//! Scenario loading errors: every one names the file, line and column.

use std::fmt;
use std::path::{Path, PathBuf};

/// One thing wrong with a scenario file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line (0 when the file could not be read at all).
    pub line: usize,
    /// 1-based column (0 when the file could not be read at all).
    pub col: usize,
    /// The dotted field path, when the problem is a setting.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl LoadError {
    /// An error about the whole file (unreadable, missing).
    pub fn whole_file(file: &Path, message: impl Into<String>) -> LoadError {
        LoadError {
            file: file.to_path_buf(),
            line: 0,
            col: 0,
            field: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.col)?;
        }
        f.write_str(": ")?;
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// Every error found while loading a set of scenarios.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct LoadErrors(pub Vec<LoadError>);

impl fmt::Display for LoadErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}
