//! The timeline page's structure, read back from its SVG: a legend naming
//! every worker; every fault drawn inside the lane of a host it hit; every
//! violation marked on its job's lane; held or late messages as arrows
//! between host lanes; and no two text labels overlapping.

use leasehold_cli::timeline::{self, text_width, MarkAt};
use leasehold_model::scenario::load_file;
use leasehold_sim::runner::{run_seed, PreparedConfig, RunOptions};
use std::collections::BTreeMap;
use std::path::Path;

fn page(scenario: &str, seed: u64) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(scenario);
    let s = load_file(&path).unwrap_or_else(|e| panic!("{e}"));
    let cfg = PreparedConfig::new(s.config.clone()).expect("a valid scenario");
    let memory = std::sync::Arc::new(leasehold_sim::stores::MemoryFactory);
    let out = run_seed(&cfg, seed, &memory, RunOptions::default()).expect("the run completes");
    let marks = out
        .violations
        .iter()
        .map(|v| MarkAt {
            at_ms: v.true_ms,
            label: format!("{}: {}", v.invariant, v.message),
            job: v.job,
        })
        .collect();
    let t = timeline::from_history(&out.history, scenario, vec![], marks);
    timeline::render(&t)
}

/// The SVG element of the page (the rest is HTML, not XML).
fn svg(html: &str) -> &str {
    let start = html.find("<svg").expect("an svg");
    let end = html.find("</svg>").expect("closed") + "</svg>".len();
    &html[start..end]
}

fn num(n: roxmltree::Node<'_, '_>, attr: &str) -> f64 {
    n.attribute(attr)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{attr} on {n:?}"))
}

fn check(html: &str) -> (usize, usize, usize) {
    let doc = roxmltree::Document::parse(svg(html)).unwrap_or_else(|e| panic!("{e}"));
    let elements: Vec<_> = doc.descendants().filter(|n| n.is_element()).collect();
    let class = |n: &roxmltree::Node<'_, '_>| n.attribute("class").unwrap_or("").to_string();
    // Lanes: host name -> (y, h); job label -> (y, h).
    let mut hosts = BTreeMap::new();
    let mut jobs = BTreeMap::new();
    for n in &elements {
        if let Some(h) = n.attribute("data-host").filter(|_| class(n) == "lane host") {
            hosts.insert(h.to_string(), (num(*n, "y"), num(*n, "height")));
        }
        if let Some(j) = n.attribute("data-job").filter(|_| class(n) == "lane job") {
            jobs.insert(j.to_string(), (num(*n, "y"), num(*n, "height")));
        }
    }
    assert!(!hosts.is_empty() && !jobs.is_empty());
    // Every worker that held a lease is in the legend, with its colour.
    for n in elements.iter().filter(|n| class(n) == "lease") {
        let w = n.attribute("data-worker").unwrap();
        let needle = format!(
            "data-worker=\"{w}\"><i class=\"sw\" style=\"background:{}\"",
            n.attribute("fill").unwrap()
        );
        assert!(html.contains(&needle), "{w} in the legend with its colour");
    }
    // Faults sit inside a lane of a host they hit.
    let mut faults = 0;
    for n in elements.iter().filter(|n| class(n).starts_with("fault")) {
        let host = n.attribute("data-host").expect("a fault names its host");
        let (ly, lh) = hosts[host];
        let (y, h) = (num(*n, "y"), num(*n, "height"));
        assert!(
            y >= ly && y + h <= ly + lh,
            "fault on {host} inside its lane"
        );
        faults += 1;
    }
    // Violations sit on their job's lane, inside the picture.
    let page_w = num(doc.root_element(), "width");
    let mut marks = 0;
    for n in elements.iter().filter(|n| class(n) == "mark") {
        let rect = n.first_element_child().unwrap();
        let y = num(rect, "y");
        assert!(
            num(rect, "x") + num(rect, "width") <= page_w,
            "a violation badge runs off the right edge"
        );
        match n.attribute("data-job").filter(|j| !j.is_empty()) {
            Some(j) => {
                let (ly, lh) = jobs[j];
                assert!(y >= ly && y + 12.0 <= ly + lh, "mark of {j} on its lane");
            }
            None => assert!(html.contains("violations (no job)")),
        }
        marks += 1;
    }
    // Arrows run between host lanes.
    let mut arrows = 0;
    for n in elements.iter().filter(|n| class(n).starts_with("arrow")) {
        for (end, y) in [("data-from", "y1"), ("data-to", "y2")] {
            let (ly, lh) = hosts[n.attribute(end).unwrap()];
            let y = num(*n, y);
            assert!(y > ly && y < ly + lh);
        }
        arrows += 1;
    }
    // No two labels overlap: on the same baseline, their spans are apart.
    let mut rows: BTreeMap<i64, Vec<(f64, f64, String)>> = BTreeMap::new();
    for n in elements.iter().filter(|n| n.has_tag_name("text")) {
        let text = n.text().unwrap_or("").to_string();
        let (x, y, font) = (num(*n, "x"), num(*n, "y"), num(*n, "font-size"));
        let w = text_width(&text, font);
        let (x0, x1) = if n.attribute("text-anchor") == Some("end") {
            (x - w, x)
        } else {
            (x, x + w)
        };
        assert!(
            x0 >= 0.0 && x1 <= page_w,
            "label {text:?} runs off the picture"
        );
        rows.entry((y * 10.0) as i64)
            .or_default()
            .push((x0, x1, text));
    }
    for (y, row) in &rows {
        for (i, a) in row.iter().enumerate() {
            for b in &row[i + 1..] {
                assert!(
                    a.1 <= b.0 || b.1 <= a.0,
                    "labels overlap at y {y}: {a:?} and {b:?}"
                );
            }
        }
    }
    // Lines of text in different rows can still collide vertically when
    // rows are closer than a font size: only lanes' own rows are used.
    (faults, marks, arrows)
}

#[test]
fn a_swarm_seed_draws_faults_on_their_hosts_and_arrows_for_held_messages() {
    let html = page(
        "scenarios/swarm_of_every_fault_heals_and_every_job_finishes.toml",
        3,
    );
    let (faults, _, _) = check(&html);
    assert!(faults > 0, "the swarm seed has faults");
    assert!(html.contains("id=\"legend\""));
    let html = page(
        "scenarios/catalogue/release_without_token_lets_a_stale_holder_finish_the_job.toml",
        0,
    );
    let (_, marks, arrows) = check(&html);
    assert!(marks > 0, "the bug is marked");
    assert!(arrows > 0, "its held release is drawn");
    assert!(
        html.contains("class=\"arrow held\""),
        "a hold kept a message"
    );
    assert!(html.contains("<table class=\"marks\" id=\"violations\">"));
}

#[test]
fn crowded_violations_merge_instead_of_overprinting() {
    // sweeper-own-clock: dozens of violations, many at nearly the same time.
    let html = page(
        "scenarios/catalogue/sweeper_own_clock_reclaims_live_leases.toml",
        0,
    );
    let (_, marks, _) = check(&html);
    let listed = html.matches("<tr><td>").count();
    assert!(
        listed > marks,
        "{listed} violations listed, {marks} markers: some merged"
    );
}
