//! JUnit XML for `leasehold run --junit FILE`.
//!
//! The shape CI systems read: `<testsuites>` holding one `<testsuite>` per
//! scenario, holding one `<testcase>` per seed, with a `<failure>` or
//! `<error>` child when the seed's expectation did not hold. All text and
//! attribute values are escaped, and characters XML 1.0 cannot carry are
//! replaced, so any report text is safe to embed.

use std::fmt::Write;

/// One scenario's results.
#[derive(Clone, Debug, Default)]
pub struct Suite {
    /// The scenario name.
    pub name: String,
    /// One case per seed.
    pub cases: Vec<Case>,
}

/// One seed's result.
#[derive(Clone, Debug)]
pub struct Case {
    /// Case name, like `seed 7`.
    pub name: String,
    /// Class name (the scenario file), so tools group cases.
    pub classname: String,
    /// Wall time in seconds.
    pub time_s: f64,
    /// What happened.
    pub outcome: CaseOutcome,
}

/// The result of one case.
#[derive(Clone, Debug)]
pub enum CaseOutcome {
    /// The expectation held.
    Passed,
    /// The expectation did not hold (an invariant broke, or an expected
    /// violation was not found).
    Failed {
        /// Short message (the invariant and a one-line reason).
        message: String,
        /// Failure type, like `I2`.
        kind: String,
        /// Full report and replay command.
        text: String,
    },
    /// The harness itself failed (misconfiguration, panic).
    Error {
        /// Short message.
        message: String,
        /// Details.
        text: String,
    },
}

impl Suite {
    fn count(&self, f: impl Fn(&CaseOutcome) -> bool) -> usize {
        self.cases.iter().filter(|c| f(&c.outcome)).count()
    }
    fn failures(&self) -> usize {
        self.count(|o| matches!(o, CaseOutcome::Failed { .. }))
    }
    fn errors(&self) -> usize {
        self.count(|o| matches!(o, CaseOutcome::Error { .. }))
    }
    fn time_s(&self) -> f64 {
        self.cases.iter().map(|c| c.time_s).sum()
    }
}

/// Escapes text for an XML attribute value or element content, replacing
/// characters XML 1.0 forbids with U+FFFD.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// The JUnit XML document for `suites`, named `name` at the top.
pub fn render(name: &str, suites: &[Suite]) -> String {
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let tests: usize = suites.iter().map(|s| s.cases.len()).sum();
    let failures: usize = suites.iter().map(Suite::failures).sum();
    let errors: usize = suites.iter().map(Suite::errors).sum();
    let time: f64 = suites.iter().map(Suite::time_s).sum();
    let _ = writeln!(
        x,
        "<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{time:.3}\">",
        escape(name)
    );
    for s in suites {
        let _ = writeln!(
            x,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{:.3}\">",
            escape(&s.name),
            s.cases.len(),
            s.failures(),
            s.errors(),
            s.time_s()
        );
        for c in &s.cases {
            let open = format!(
                "    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3}\"",
                escape(&c.name),
                escape(&c.classname),
                c.time_s
            );
            match &c.outcome {
                CaseOutcome::Passed => {
                    let _ = writeln!(x, "{open}/>");
                }
                CaseOutcome::Failed {
                    message,
                    kind,
                    text,
                } => {
                    let _ = writeln!(
                        x,
                        "{open}>\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>",
                        escape(message),
                        escape(kind),
                        escape(text)
                    );
                }
                CaseOutcome::Error { message, text } => {
                    let _ = writeln!(
                        x,
                        "{open}>\n      <error message=\"{}\" type=\"harness\">{}</error>\n    </testcase>",
                        escape(message),
                        escape(text)
                    );
                }
            }
        }
        x.push_str("  </testsuite>\n");
    }
    x.push_str("</testsuites>\n");
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_quotes_and_control_characters() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(escape("x\u{1}y\n"), "x\u{FFFD}y\n");
    }

    #[test]
    fn counts_failures_and_errors_per_suite() {
        let case = |outcome| Case {
            name: "seed 1".into(),
            classname: "s".into(),
            time_s: 0.5,
            outcome,
        };
        let suite = Suite {
            name: "s".into(),
            cases: vec![
                case(CaseOutcome::Passed),
                case(CaseOutcome::Failed {
                    message: "I2".into(),
                    kind: "I2".into(),
                    text: "<boom>".into(),
                }),
                case(CaseOutcome::Error {
                    message: "panic".into(),
                    text: String::new(),
                }),
            ],
        };
        let xml = render("leasehold", &[suite]);
        assert!(
            xml.contains("tests=\"3\" failures=\"1\" errors=\"1\""),
            "{xml}"
        );
        assert!(xml.contains("&lt;boom&gt;"));
    }
}
