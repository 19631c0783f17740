//! `leasehold replay --timeline FILE.html`: one self-contained HTML page
//! (inline SVG and CSS, no scripts or external assets) showing a run in
//! true time: a lane per job with who held which token when, a lane per
//! host with its clock's offset from true time, faults shaded, violations
//! marked.
//!
//! The page is drawn from a [`Timeline`], plain data that the replay
//! command builds from a history.

mod build;

pub use build::{from_history, MarkAt};

use std::fmt::Write;

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

/// Pixels per lane.
const LANE_H: f64 = 22.0;
/// Width of the label column.
const LABEL_W: f64 = 150.0;
/// Width of the time axis.
const PLOT_W: f64 = 1100.0;
/// Most lanes drawn (the rest are summarised).
pub const MAX_LANES: usize = 400;
/// Most points drawn per clock line.
const MAX_CLOCK_POINTS: usize = 2_000;

/// What the page shows.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Page title (scenario and seed).
    pub title: String,
    /// Lines of text above the drawing (settings, outcome, replay command).
    pub notes: Vec<String>,
    /// Simulated length of the run, in ms of true time.
    pub end_ms: u64,
    /// One lane per job.
    pub jobs: Vec<JobLane>,
    /// One lane per host clock.
    pub clocks: Vec<ClockLane>,
    /// Fault intervals, shaded across every lane (or only their host's).
    pub faults: Vec<FaultSpan>,
    /// Violations, marked as vertical lines.
    pub marks: Vec<Mark>,
}

/// A job's lane.
#[derive(Clone, Debug, Default)]
pub struct JobLane {
    /// Label, like `job 7`.
    pub label: String,
    /// Leases in true time.
    pub leases: Vec<LeaseBar>,
    /// Point events (enqueue, cancel, terminal state) at true times.
    pub ticks: Vec<(u64, String)>,
}

/// One lease: `worker` held `token` from `from_ms` to `to_ms` (true time).
#[derive(Clone, Debug)]
pub struct LeaseBar {
    /// Holder.
    pub worker: String,
    /// Fencing token.
    pub token: u64,
    /// Grant, true ms.
    pub from_ms: u64,
    /// End (release, reclaim or end of run), true ms.
    pub to_ms: u64,
    /// How it ended (`succeeded`, `swept`, `lost`, …).
    pub end: String,
    /// Until when the holder believed it held the lease, if known.
    pub believed_until_ms: Option<u64>,
}

/// A host's clock: samples of (true ms, offset of its wall clock in ms).
#[derive(Clone, Debug, Default)]
pub struct ClockLane {
    /// Host name.
    pub host: String,
    /// Samples in true-time order.
    pub offsets: Vec<(u64, i64)>,
}

/// A fault interval.
#[derive(Clone, Debug)]
pub struct FaultSpan {
    /// The fault's sentence.
    pub label: String,
    /// Start, true ms.
    pub from_ms: u64,
    /// End, true ms (equal to `from_ms` for instant faults).
    pub to_ms: u64,
    /// Hosts it concerns.
    pub hosts: Vec<String>,
}

/// A violation mark.
#[derive(Clone, Debug)]
pub struct Mark {
    /// True ms.
    pub at_ms: u64,
    /// Text (invariant and message).
    pub label: String,
    /// The job lane it belongs to, if any.
    pub job: Option<String>,
}

const STYLE: &str = "body{font:13px system-ui,sans-serif;margin:16px;color:#222}\
h1{font-size:18px}pre{background:#f6f6f6;padding:8px;white-space:pre-wrap}\
.lane{fill:#fafafa}.alt{fill:#f0f0f0}.lbl{font:11px monospace;fill:#333}\
.fault{fill:#f4a261;opacity:.18}.fault.inst{stroke:#e76f51;stroke-width:1;opacity:.7}\
.lease{stroke:#fff;stroke-width:.5}.tok{font:9px monospace;fill:#fff;pointer-events:none}\
.belief{stroke-width:2.5;stroke-dasharray:4 2}\
.mark{stroke:#d62828;stroke-width:2}.markl{font:11px sans-serif;fill:#d62828}\
.axis{stroke:#999;stroke-width:.5}.clock{fill:none;stroke:#2a9d8f;stroke-width:1.5}\
.tick{stroke:#555;stroke-width:1}.legend span{display:inline-block;margin-right:14px}";

/// Distinct colours for the first workers; later ones get a hashed hue.
const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f",
];

/// A colour per worker name, stable across pages: `worker-N` takes the
/// N-th palette colour.
fn colour(worker: &str) -> String {
    let n = worker
        .rsplit('-')
        .next()
        .and_then(|n| n.parse::<usize>().ok());
    match n {
        Some(n) if (1..=PALETTE.len()).contains(&n) => PALETTE[n - 1].to_string(),
        _ => {
            let h = worker.bytes().fold(2_166_136_261u32, |h, b| {
                (h ^ u32::from(b)).wrapping_mul(16_777_619)
            });
            format!("hsl({},55%,45%)", h % 360)
        }
    }
}

/// Renders the page.
pub fn render(t: &Timeline) -> String {
    let end = t.end_ms.max(1) as f64;
    let x = |ms: u64| LABEL_W + (ms as f64 / end).min(1.0) * PLOT_W;
    let jobs: Vec<&JobLane> = t.jobs.iter().take(MAX_LANES).collect();
    let clocks: Vec<&ClockLane> = t.clocks.iter().take(MAX_LANES).collect();
    let lanes = jobs.len() + clocks.len() + 1;
    let height = 40.0 + lanes as f64 * LANE_H;
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n<pre>",
        escape(&t.title),
        escape(&t.title)
    );
    for n in &t.notes {
        let _ = writeln!(s, "{}", escape(n));
    }
    s.push_str("</pre>\n<p class=\"legend\"><span>bars: leases (colour = worker, text = token)</span>\
<span>dashed strip: how long the holder believed it held the lease</span><span style=\"color:#e76f51\">shaded: faults</span>\
<span style=\"color:#d62828\">red: violations</span><span style=\"color:#2a9d8f\">green: each host's wall clock minus true time</span></p>\n");
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" viewBox=\"0 0 {} {height}\">",
        LABEL_W + PLOT_W + 20.0,
        LABEL_W + PLOT_W + 20.0
    );
    axis(&mut s, t.end_ms, height, &x);
    let lane_y = |i: usize| 30.0 + i as f64 * LANE_H;
    for (i, lane) in jobs.iter().enumerate() {
        job_lane(&mut s, lane, lane_y(i), &x);
    }
    let first_clock = jobs.len() + 1;
    for (i, c) in clocks.iter().enumerate() {
        clock_lane(&mut s, c, lane_y(first_clock + i), &x);
    }
    for f in &t.faults {
        let (x0, x1) = (x(f.from_ms), x(f.to_ms));
        let title = escape(&f.label);
        if f.to_ms > f.from_ms {
            let _ = writeln!(
                s,
                "<rect class=\"fault\" x=\"{x0:.1}\" y=\"24\" width=\"{:.1}\" height=\"{:.1}\"><title>{title}</title></rect>",
                (x1 - x0).max(1.0),
                height - 24.0
            );
        } else {
            let _ = writeln!(
                s,
                "<line class=\"fault inst\" x1=\"{x0:.1}\" y1=\"24\" x2=\"{x0:.1}\" y2=\"{height}\"><title>{title}</title></line>"
            );
        }
    }
    for m in &t.marks {
        let mx = x(m.at_ms);
        let _ = writeln!(
            s,
            "<line class=\"mark\" x1=\"{mx:.1}\" y1=\"12\" x2=\"{mx:.1}\" y2=\"{height}\"><title>{}</title></line>\
<text class=\"markl\" x=\"{:.1}\" y=\"20\">{}</text>",
            escape(&m.label),
            mx + 3.0,
            escape(&m.label.chars().take(60).collect::<String>())
        );
    }
    s.push_str("</svg>\n");
    if t.jobs.len() > MAX_LANES {
        let _ = writeln!(
            s,
            "<p>{} more job lanes not drawn.</p>",
            t.jobs.len() - MAX_LANES
        );
    }
    s.push_str("</body></html>\n");
    s
}

fn axis(s: &mut String, end_ms: u64, height: f64, x: &impl Fn(u64) -> f64) {
    let step = [
        1_000u64, 5_000, 10_000, 30_000, 60_000, 300_000, 600_000, 3_600_000,
    ]
    .into_iter()
    .find(|st| end_ms / st <= 12)
    .unwrap_or(3_600_000);
    for k in 0..=(end_ms / step).min(100) {
        let ms = k * step;
        let _ = writeln!(
            s,
            "<line class=\"axis\" x1=\"{0:.1}\" y1=\"24\" x2=\"{0:.1}\" y2=\"{height}\"/><text class=\"lbl\" x=\"{0:.1}\" y=\"10\">{1}</text>",
            x(ms),
            crate::duration::format_ms(ms)
        );
    }
}

fn job_lane(s: &mut String, lane: &JobLane, y: f64, x: &impl Fn(u64) -> f64) {
    let _ = writeln!(
        s,
        "<rect class=\"lane\" x=\"0\" y=\"{y}\" width=\"{}\" height=\"{LANE_H}\"/><text class=\"lbl\" x=\"4\" y=\"{:.1}\">{}</text>",
        LABEL_W + PLOT_W,
        y + 15.0,
        escape(&lane.label)
    );
    for b in &lane.leases {
        let (x0, x1) = (x(b.from_ms), x(b.to_ms));
        let w = (x1 - x0).max(1.5);
        let _ = writeln!(
            s,
            "<rect class=\"lease\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{} token {} {}..{} ({})</title></rect>",
            y + 2.0,
            LANE_H - 10.0,
            colour(&b.worker),
            escape(&b.worker),
            b.token,
            crate::duration::format_ms(b.from_ms),
            crate::duration::format_ms(b.to_ms),
            escape(&b.end)
        );
        if w > 40.0 {
            let _ = writeln!(
                s,
                "<text class=\"tok\" x=\"{:.1}\" y=\"{:.1}\">{} t{}</text>",
                x0 + 2.0,
                y + 11.5,
                escape(&b.worker),
                b.token
            );
        }
    }
    for b in &lane.leases {
        let x0 = x(b.from_ms);
        if let Some(until) = b.believed_until_ms.filter(|u| *u > b.from_ms) {
            // The holder's belief, as a strip under the bar; where it runs
            // past the bar, the holder believed in a lease the store had ended.
            let by = y + LANE_H - 2.0 - (b.token % 2) as f64 * 3.5;
            let _ = writeln!(
                s,
                "<line class=\"belief\" x1=\"{x0:.1}\" y1=\"{by:.1}\" x2=\"{:.1}\" y2=\"{by:.1}\" stroke=\"{}\"><title>{} believed it held token {} until {}</title></line>",
                x(until),
                colour(&b.worker),
                escape(&b.worker),
                b.token,
                crate::duration::format_ms(until)
            );
        }
    }
    for (at, what) in &lane.ticks {
        let tx = x(*at);
        let _ = writeln!(
            s,
            "<line class=\"tick\" x1=\"{tx:.1}\" y1=\"{:.1}\" x2=\"{tx:.1}\" y2=\"{:.1}\"><title>{} at {}</title></line>",
            y + 2.0,
            y + LANE_H - 2.0,
            escape(what),
            crate::duration::format_ms(*at)
        );
    }
}

fn clock_lane(s: &mut String, c: &ClockLane, y: f64, x: &impl Fn(u64) -> f64) {
    let max = c
        .offsets
        .iter()
        .map(|(_, o)| o.unsigned_abs())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let _ = writeln!(
        s,
        "<rect class=\"alt\" x=\"0\" y=\"{y}\" width=\"{}\" height=\"{LANE_H}\"/><text class=\"lbl\" x=\"4\" y=\"{:.1}\">{} clock ±{}</text>",
        LABEL_W + PLOT_W,
        y + 15.0,
        escape(&c.host),
        crate::duration::format_ms(max as u64)
    );
    let stride = c.offsets.len().div_ceil(MAX_CLOCK_POINTS).max(1);
    let mid = y + LANE_H / 2.0;
    let points: Vec<String> = c
        .offsets
        .iter()
        .step_by(stride)
        .map(|(t, o)| {
            format!(
                "{:.1},{:.1}",
                x(*t),
                mid - (*o as f64 / max) * (LANE_H / 2.0 - 2.0)
            )
        })
        .collect();
    if !points.is_empty() {
        let _ = writeln!(
            s,
            "<polyline class=\"clock\" points=\"{}\"><title>{} wall clock minus true time</title></polyline>",
            points.join(" "),
            escape(&c.host)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_is_self_contained_and_escaped() {
        let t = Timeline {
            title: "a <b> & c".into(),
            notes: vec!["seed 3".into()],
            end_ms: 60_000,
            jobs: vec![JobLane {
                label: "job 1".into(),
                leases: vec![LeaseBar {
                    worker: "worker-1".into(),
                    token: 1,
                    from_ms: 1_000,
                    to_ms: 20_000,
                    end: "swept".into(),
                    believed_until_ms: Some(25_000),
                }],
                ticks: vec![(500, "enqueued".into())],
            }],
            clocks: vec![ClockLane {
                host: "store".into(),
                offsets: vec![(0, 0), (60_000, 5)],
            }],
            faults: vec![FaultSpan {
                label: "pause worker-1 for 10s at 5s".into(),
                from_ms: 5_000,
                to_ms: 15_000,
                hosts: vec!["worker-1".into()],
            }],
            marks: vec![Mark {
                at_ms: 21_000,
                label: "I3: two believers".into(),
                job: Some("job 1".into()),
            }],
        };
        let html = render(&t);
        assert!(html.contains("a &lt;b&gt; &amp; c"));
        assert!(
            !html.contains("<script")
                && !html.contains("http://www.w3.org/1999")
                && !html.contains("src=")
        );
        assert!(html.contains("class=\"belief\""));
        assert!(html.contains("class=\"mark\""));
        assert!(html.contains("class=\"fault\""));
    }
}
