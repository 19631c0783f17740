//! One finding, whoever found it, printed one way.
//!
//! The checker's violations of a simulated run ([`crate::checker::Violation`]),
//! the Jepsen lease checks' ([`crate::jepsen::check::Violation`]) and the
//! chaos checks' all report through [`Finding`], and every tool
//! (`leasehold run`, `leasehold check`, `leasehold check --format jepsen`,
//! `leasehold chaos`, the madsim crate) prints one through [`Printed`]:
//!
//! ```text
//! I2 single winner violated: release of token 1 accepted after token 2 was granted
//!   job:    job-3
//!   tokens: 1, 2
//!   hosts:  worker-1
//! ```
//!
//! This is reporting only: nothing here judges a history, so sharing it
//! keeps the checker apart from what it checks.

use leasehold_core::{JobId, Token};
use leasehold_model::config::InvariantId;
use std::fmt;

/// What every check reports about one thing that broke.
pub trait Finding {
    /// The invariant or check broken, as printed first: `I2 single
    /// winner`, `overlap`.
    fn broken(&self) -> String;
    /// What happened.
    fn message(&self) -> String;
    /// What it concerns, as labelled lines in print order (job, tokens,
    /// hosts or workers); a tool adds the times or places it knows with
    /// [`Printed::with`]. None by default: the message says it all.
    fn context(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

/// A finding as every tool prints it: `{broken} violated: {message}`, then
/// one `  label:  value` line per context entry.
pub struct Printed<'a> {
    finding: &'a dyn Finding,
    message: String,
    more: Vec<(&'static str, String)>,
}

impl<'a> Printed<'a> {
    /// The finding as it says itself.
    pub fn new(finding: &'a dyn Finding) -> Self {
        Printed {
            finding,
            message: finding.message(),
            more: Vec::new(),
        }
    }

    /// The message rewritten for reading (for example store times shown as
    /// durations from the start).
    pub fn message(mut self, rewrite: impl FnOnce(&str) -> String) -> Self {
        self.message = rewrite(&self.message);
        self
    }

    /// One more context line, after the finding's own.
    pub fn with(mut self, label: &'static str, value: impl Into<String>) -> Self {
        self.more.push((label, value.into()));
        self
    }
}

impl fmt::Display for Printed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} violated: {}", self.finding.broken(), self.message)?;
        for (label, value) in self.finding.context().iter().chain(&self.more) {
            f.write_str("\n")?;
            write_line(f, label, value)?;
        }
        Ok(())
    }
}

/// One context line, `  label:  value`, values aligned after the short
/// labels (a longer label is followed by one space). Reports that print
/// more than [`Printed`] does (`leasehold run`'s) use it for their own lines.
pub fn write_line(out: &mut impl fmt::Write, label: &str, value: &str) -> fmt::Result {
    write!(out, "  {:<7} {value}", format!("{label}:"))
}

/// An invariant as a finding names it: `I2 single winner`.
pub fn invariant(id: InvariantId) -> String {
    format!("{id} {}", id.name())
}

/// The context most findings have, each line when known: the job, the
/// tokens, and the hosts or workers involved (labelled `who`).
pub fn concerns(
    job: Option<JobId>,
    tokens: &[Token],
    who: &'static str,
    names: &[String],
) -> Vec<(&'static str, String)> {
    let mut lines = Vec::new();
    if let Some(j) = job {
        lines.push(("job", j.to_string()));
    }
    if !tokens.is_empty() {
        lines.push(("tokens", list(tokens)));
    }
    if !names.is_empty() {
        lines.push((who, names.join(", ")));
    }
    lines
}

/// Items joined by `, ` (tokens, hosts), as context values show them.
pub fn list<T: ToString>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Broke;

    impl Finding for Broke {
        fn broken(&self) -> String {
            "overlap".into()
        }
        fn message(&self) -> String {
            "two leases at once at @5ms".into()
        }
        fn context(&self) -> Vec<(&'static str, String)> {
            vec![("job", "job-3".into()), ("tokens", list(&[1, 2]))]
        }
    }

    #[test]
    fn prints_the_headline_then_aligned_context_lines() {
        let shown = Printed::new(&Broke)
            .message(|m| m.replace("@5ms", "@+5ms"))
            .with("store time", "+5ms")
            .with("workers", "p1.w0")
            .to_string();
        assert_eq!(
            shown,
            "overlap violated: two leases at once at @+5ms\n  job:    job-3\n  tokens: 1, 2\n  \
             store time: +5ms\n  workers: p1.w0"
        );
    }
}
