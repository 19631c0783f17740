//! JUnit XML for `leasehold run --junit FILE`.
//!
//! The shape CI systems read: `<testsuites>` holding one `<testsuite>` per
//! scenario, holding one `<testcase>` per seed, with a `<failure>` or
//! `<error>` child when the seed's expectation did not hold, and the
//! scenario's coverage as `<properties>` of its suite
//! (`coverage.seeds`, and `coverage.<situation>` = `SEEDS/OF seeds, TIMES
//! times` for each situation reached). Written by the
//! `quick-junit` crate (nextest's JUnit writer), which escapes all text and
//! drops characters XML 1.0 cannot carry, so any report text is safe to
//! embed.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use std::time::Duration;

/// One scenario's results.
#[derive(Clone, Debug, Default)]
pub struct Suite {
    /// The scenario name.
    pub name: String,
    /// One case per seed.
    pub cases: Vec<Case>,
    /// Name and value of each property of the suite, in order.
    pub properties: Vec<(String, String)>,
}

/// A scenario's coverage as suite properties.
pub fn coverage_properties(t: &crate::cli::coverage::Tally) -> Vec<(String, String)> {
    let mut out = vec![("coverage.seeds".to_string(), t.seeds.to_string())];
    for (name, r) in &t.reached {
        out.push((
            format!("coverage.{name}"),
            format!("{}/{} seeds, {} times", r.seeds, t.seeds, r.times),
        ));
    }
    out
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
    fn time(&self) -> Duration {
        Duration::from_secs_f64(self.cases.iter().map(|c| c.time_s.max(0.0)).sum())
    }
}

/// Report text for XML: `quick-junit` drops the characters XML cannot
/// carry, tabs included, so tabs become spaces first.
fn text(s: &str) -> String {
    s.replace('\t', "    ")
}

fn case(c: &Case) -> TestCase {
    let status = match &c.outcome {
        CaseOutcome::Passed => TestCaseStatus::success(),
        CaseOutcome::Failed {
            message,
            kind,
            text: body,
        } => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(text(message))
                .set_type(kind.as_str())
                .set_description(text(body));
            s
        }
        CaseOutcome::Error {
            message,
            text: body,
        } => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_message(text(message))
                .set_type("harness")
                .set_description(text(body));
            s
        }
    };
    let mut t = TestCase::new(c.name.as_str(), status);
    t.set_classname(c.classname.as_str())
        .set_time(Duration::from_secs_f64(c.time_s.max(0.0)));
    t
}

/// The JUnit XML document for `suites`, named `name` at the top.
/// Counts of tests, failures and errors are computed by `quick-junit` from
/// the cases; text and attributes are escaped, and characters XML 1.0
/// cannot carry are left out.
pub fn render(name: &str, suites: &[Suite]) -> String {
    let mut report = Report::new(name);
    let mut total = Duration::ZERO;
    for s in suites {
        let mut suite = TestSuite::new(s.name.as_str());
        suite.add_test_cases(s.cases.iter().map(case));
        suite.add_properties(
            s.properties
                .iter()
                .map(|(k, v)| quick_junit::Property::new(k.as_str(), v.as_str())),
        );
        suite.set_time(s.time());
        total += s.time();
        report.add_test_suite(suite);
    }
    report.set_time(total);
    report
        .to_string()
        .unwrap_or_else(|e| format!("<!-- JUnit report not written: {e} -->\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
            properties: vec![(
                "coverage.one-way-partition".into(),
                "1/3 seeds, 2 times".into(),
            )],
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
        for attr in ["tests=\"3\"", "failures=\"1\"", "errors=\"1\""] {
            assert!(xml.contains(attr), "{attr}: {xml}");
        }
        assert!(xml.contains("&lt;boom&gt;"), "{xml}");
        assert!(
            xml.contains(
                r#"<property name="coverage.one-way-partition" value="1/3 seeds, 2 times"/>"#
            ),
            "{xml}"
        );
    }
}
