//! `--junit` output is well-formed XML in the JUnit shape
//! (testsuites > testsuite > testcase > failure|error), with counts that
//! agree with the cases, whatever text the reports contain.

#[path = "support/xml.rs"]
mod xml;

use leasehold_sim::junit::{render, Case, CaseOutcome, Suite};

fn case(name: &str, outcome: CaseOutcome) -> Case {
    Case {
        name: name.into(),
        classname: "scenarios/a \"quoted\" & <odd>.toml".into(),
        time_s: 0.25,
        outcome,
    }
}

fn nasty_suites() -> Vec<Suite> {
    vec![
        Suite {
            name: "cancel_racing <completion> & 'friends'".into(),
            cases: vec![
                case("seed 0", CaseOutcome::Passed),
                case(
                    "seed 1",
                    CaseOutcome::Failed {
                        message: "I2: job 3 token 2 < 3 \"stale\"".into(),
                        kind: "I2".into(),
                        text: "report ]]> <![CDATA[ & \u{1} \u{7} tab\there\nreplay: leasehold replay x --seed 1".into(),
                    },
                ),
                case(
                    "seed 2",
                    CaseOutcome::Error {
                        message: "panicked: index out of bounds <oops>".into(),
                        text: "&amp; already escaped?".into(),
                    },
                ),
            ],
        },
        Suite {
            name: "empty".into(),
            cases: vec![],
        },
    ]
}

#[test]
fn junit_is_well_formed_and_shaped_like_junit() {
    let doc = render("leasehold", &nasty_suites());
    let root = xml::parse(&doc).unwrap_or_else(|e| panic!("{e}\n{doc}"));
    assert_eq!(root.name, "testsuites");
    assert_eq!(root.attr("tests"), Some("3"));
    assert_eq!(root.attr("failures"), Some("1"));
    assert_eq!(root.attr("errors"), Some("1"));
    let suites: Vec<_> = root.children.iter().collect();
    assert_eq!(suites.len(), 2);
    let s = suites[0];
    assert_eq!(s.name, "testsuite");
    assert_eq!(
        s.attr("name"),
        Some("cancel_racing <completion> & 'friends'")
    );
    let cases: Vec<_> = s.children.iter().collect();
    assert_eq!(cases.len(), 3);
    assert!(cases.iter().all(|c| c.name == "testcase"));
    assert!(cases[0].children.is_empty());
    let failure = &cases[1].children[0];
    assert_eq!(failure.name, "failure");
    assert_eq!(failure.attr("type"), Some("I2"));
    assert!(failure.text.contains("]]> <![CDATA[ &"), "{}", failure.text);
    assert!(failure.text.contains("replay: leasehold replay"));
    assert_eq!(cases[2].children[0].name, "error");
    assert_eq!(
        cases[1].attr("classname"),
        Some("scenarios/a \"quoted\" & <odd>.toml")
    );
}

#[test]
fn the_checker_rejects_broken_xml() {
    for bad in [
        "<a><b></a></b>",
        "<a x=1/>",
        "<a>&bogus;</a>",
        "<a>1 < 2</a>",
        "<a></a><b/>",
        "<a>\u{1}</a>",
    ] {
        assert!(xml::parse(bad).is_err(), "{bad}");
    }
}
