//! `--junit` output is well-formed XML in the JUnit shape
//! (testsuites > testsuite > testcase > failure|error), with counts that
//! agree with the cases, whatever text the reports contain.

use leasehold_cli::junit::{render, Case, CaseOutcome, Suite};

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
            properties: vec![("coverage.<odd> & \"name\"".into(), "1/3 seeds, 2 times".into())],
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
            properties: vec![],
        },
    ]
}

#[test]
fn junit_is_well_formed_and_shaped_like_junit() {
    let doc = render("leasehold", &nasty_suites());
    let xml = roxmltree::Document::parse(&doc).unwrap_or_else(|e| panic!("{e}\n{doc}"));
    let root = xml.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(root.attribute("tests"), Some("3"));
    assert_eq!(root.attribute("failures"), Some("1"));
    assert_eq!(root.attribute("errors"), Some("1"));
    let suites: Vec<_> = root.children().filter(|n| n.is_element()).collect();
    assert_eq!(suites.len(), 2);
    let s = suites[0];
    assert_eq!(s.tag_name().name(), "testsuite");
    assert_eq!(
        s.attribute("name"),
        Some("cancel_racing <completion> & 'friends'")
    );
    assert_eq!(s.attribute("tests"), Some("3"));
    let children: Vec<_> = s.children().filter(|n| n.is_element()).collect();
    assert_eq!(children.len(), 4, "properties, then the 3 cases");
    // The suite's coverage, escaped like every other text.
    let props = children[0];
    assert_eq!(props.tag_name().name(), "properties");
    let prop: Vec<_> = props.children().filter(|n| n.is_element()).collect();
    assert_eq!(prop.len(), 1);
    assert_eq!(prop[0].tag_name().name(), "property");
    assert_eq!(prop[0].attribute("name"), Some("coverage.<odd> & \"name\""));
    assert_eq!(prop[0].attribute("value"), Some("1/3 seeds, 2 times"));
    let cases = &children[1..];
    assert!(cases.iter().all(|c| c.tag_name().name() == "testcase"));
    assert!(cases[0].children().all(|n| !n.is_element()));
    let failure = cases[1].first_element_child().unwrap();
    assert_eq!(failure.tag_name().name(), "failure");
    assert_eq!(failure.attribute("type"), Some("I2"));
    assert_eq!(
        failure.attribute("message"),
        Some("I2: job 3 token 2 < 3 \"stale\"")
    );
    let text = failure.text().unwrap_or_default();
    assert!(text.contains("]]> <![CDATA[ &"), "{text}");
    assert!(text.contains("tab    here"), "tabs become spaces: {text}");
    assert!(!text.contains('\u{1}'), "{text}");
    assert!(text.contains("replay: leasehold replay"));
    assert_eq!(
        cases[2].first_element_child().unwrap().tag_name().name(),
        "error"
    );
    assert_eq!(
        cases[1].attribute("classname"),
        Some("scenarios/a \"quoted\" & <odd>.toml")
    );
    assert_eq!(cases[1].attribute("time"), Some("0.250"));
}
