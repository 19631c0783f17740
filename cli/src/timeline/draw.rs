//! The SVG drawing of a [`Timeline`]: host lanes (faults, clock with its
//! scale), job lanes (leases, beliefs, ticks, violation markers), arrows
//! for held and late messages, and the time axis.
//!
//! Every text label goes through a [`Row`], which keeps the spans already
//! taken on its line: a label that would touch another is left out (its
//! text stays in the tooltip and the list), so nothing overprints.

use super::escape::escape;
use super::page::{ClockLane, FaultSpan, JobLane, Mark, Timeline, MAX_LANES};
use super::palette::{self, Palette};
use leasehold_model::duration::format_ms;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Width of the label column.
const LABEL_W: f64 = 180.0;
/// Width of the time axis.
const PLOT_W: f64 = 1100.0;
/// Height of a host lane (room for its clock).
const HOST_H: f64 = 36.0;
/// Height of a job lane.
const JOB_H: f64 = 22.0;
/// Top of the first lane (the axis labels sit above it).
const TOP: f64 = 28.0;
/// Space between the host and job sections.
const GAP: f64 = 12.0;
/// Most points drawn per clock line.
const MAX_CLOCK_POINTS: usize = 2_000;
/// Most arrows drawn.
const MAX_ARROWS: usize = 400;
/// Font sizes (px).
const LABEL_FONT: f64 = 11.0;
const SMALL_FONT: f64 = 9.0;
/// Room right of the plot: a violation badge at the run's end starts at
/// the plot's edge, and its widest label (`9999-9999`) must still fit.
const RIGHT_MARGIN: f64 = 64.0;

/// Estimated width of `text` at `font` px: 0.62 em a character, an
/// upper bound for the monospace and sans-serif faces the page asks for.
pub fn text_width(text: &str, font: f64) -> f64 {
    text.chars().count() as f64 * font * 0.62
}

/// The spans taken on one line of text.
#[derive(Default)]
struct Row {
    taken: Vec<(f64, f64)>,
}

impl Row {
    /// Takes `[x0, x1]` (plus a 2 px margin) if nothing there is taken.
    fn take(&mut self, x0: f64, x1: f64) -> bool {
        let (a, b) = (x0 - 2.0, x1 + 2.0);
        if self.taken.iter().any(|&(c, d)| a < d && c < b) {
            return false;
        }
        self.taken.push((a, b));
        true
    }
}

/// The marks in their numbered order: by time, then job, then text.
pub fn ordered_marks(t: &Timeline) -> Vec<&Mark> {
    let mut v: Vec<&Mark> = t.marks.iter().collect();
    v.sort_by(|a, b| (a.at_ms, &a.job, &a.label).cmp(&(b.at_ms, &b.job, &b.label)));
    v
}

struct Canvas<'a> {
    s: String,
    t: &'a Timeline,
    palette: &'a Palette,
    /// Text rows by their baseline (in tenths of a pixel).
    rows: BTreeMap<i64, Row>,
    /// Host lane tops, by host.
    host_y: BTreeMap<&'a str, f64>,
}

impl Canvas<'_> {
    fn x(&self, ms: u64) -> f64 {
        let end = self.t.end_ms.max(1) as f64;
        LABEL_W + (ms as f64 / end).min(1.0) * PLOT_W
    }

    /// Writes a text label at (x, y) if it fits on its row; `end` anchors
    /// it by its right edge.
    fn text(&mut self, x: f64, y: f64, font: f64, class: &str, text: &str, end: bool) -> bool {
        let w = text_width(text, font);
        let (x0, x1) = if end { (x - w, x) } else { (x, x + w) };
        let row = self.rows.entry((y * 10.0).round() as i64).or_default();
        if !row.take(x0, x1) {
            return false;
        }
        let anchor = if end { " text-anchor=\"end\"" } else { "" };
        let _ = writeln!(
            self.s,
            "<text class=\"{class}\" x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{font}\"{anchor}>{}</text>",
            escape(text)
        );
        true
    }
}

/// The SVG element.
pub fn svg(t: &Timeline, palette: &Palette) -> String {
    let hosts: Vec<_> = t.clocks.iter().take(MAX_LANES).collect();
    let jobs: Vec<&JobLane> = t.jobs.iter().take(MAX_LANES).collect();
    let loose = t.marks.iter().any(|m| {
        m.job
            .as_ref()
            .is_none_or(|j| !jobs.iter().any(|l| &l.label == j))
    });
    let jobs_top = TOP + hosts.len() as f64 * HOST_H + GAP;
    let job_lanes = jobs.len() + usize::from(loose);
    let height = jobs_top + job_lanes as f64 * JOB_H + 8.0;
    let width = LABEL_W + PLOT_W + RIGHT_MARGIN;
    let mut c = Canvas {
        s: String::new(),
        t,
        palette,
        rows: BTreeMap::new(),
        host_y: BTreeMap::new(),
    };
    let _ = writeln!(
        c.s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"monospace\">"
    );
    let _ = writeln!(
        c.s,
        "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"{0}\" fill-opacity=\".12\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"{0}\" stroke-width=\"2.2\" stroke-opacity=\".55\"/></pattern>\
<marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#333\"/></marker></defs>",
        palette::FAULT
    );
    axis(&mut c, height);
    for (i, h) in hosts.iter().enumerate() {
        let y = TOP + i as f64 * HOST_H;
        c.host_y.insert(h.host.as_str(), y);
        host_lane(&mut c, h, y);
    }
    for f in &t.faults {
        fault(&mut c, f);
    }
    for h in &hosts {
        if let Some(&y) = c.host_y.get(h.host.as_str()) {
            clock(&mut c, h, y);
        }
    }
    let mut lane_of: BTreeMap<&str, f64> = BTreeMap::new();
    for (i, lane) in jobs.iter().enumerate() {
        let y = jobs_top + i as f64 * JOB_H;
        lane_of.insert(lane.label.as_str(), y);
        job_lane(&mut c, lane, y, i);
    }
    let loose_y = jobs_top + jobs.len() as f64 * JOB_H;
    if loose {
        lane_rect(&mut c, loose_y, JOB_H, "#fdf0f0", "lane marks", "");
        c.text(
            4.0,
            loose_y + 15.0,
            LABEL_FONT,
            "lbl",
            "violations (no job)",
            false,
        );
    }
    marks(&mut c, &lane_of, loose_y);
    arrows(&mut c);
    c.s.push_str("</svg>\n");
    c.s
}

fn lane_rect(c: &mut Canvas<'_>, y: f64, h: f64, fill: &str, class: &str, data: &str) {
    let _ = writeln!(
        c.s,
        "<rect class=\"{class}\" x=\"0\" y=\"{y:.1}\" width=\"{}\" height=\"{h}\" fill=\"{fill}\"{data}/>",
        LABEL_W + PLOT_W
    );
}

fn axis(c: &mut Canvas<'_>, height: f64) {
    let end = c.t.end_ms;
    let step = [
        1_000u64, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000,
        1_800_000, 3_600_000,
    ]
    .into_iter()
    .find(|st| end / st <= 12)
    .unwrap_or(3_600_000);
    for k in 0..=(end / step).min(100) {
        let ms = k * step;
        let x = c.x(ms);
        let _ = writeln!(
            c.s,
            "<line class=\"axis\" x1=\"{x:.1}\" y1=\"{}\" x2=\"{x:.1}\" y2=\"{height}\" stroke=\"#bbb\" stroke-width=\".5\"/>",
            TOP - 4.0
        );
        c.text(
            x - 8.0,
            14.0,
            LABEL_FONT,
            "lbl axisl",
            &format_ms(ms),
            false,
        );
    }
}

fn host_lane(c: &mut Canvas<'_>, h: &ClockLane, y: f64) {
    let data = format!(" data-host=\"{}\" data-h=\"{HOST_H}\"", escape(&h.host));
    lane_rect(c, y, HOST_H, "#f3f4f6", "lane host", &data);
    let _ = writeln!(
        c.s,
        "<line x1=\"0\" y1=\"{0:.1}\" x2=\"{1}\" y2=\"{0:.1}\" stroke=\"#fff\" stroke-width=\"1\"/>",
        y + HOST_H,
        LABEL_W + PLOT_W
    );
    let mid = y + HOST_H / 2.0 + 4.0;
    c.text(4.0, mid, LABEL_FONT, "lbl host", &h.host, false);
    if let Some(w) = &h.worker {
        let sx = 4.0 + text_width(&h.host, LABEL_FONT) + 6.0;
        let _ = writeln!(
            c.s,
            "<rect class=\"swatch\" x=\"{sx:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{}\"><title>runs as {}</title></rect>",
            mid - 9.0,
            c.palette.colour(w),
            escape(w)
        );
    }
}

/// A fault on the lane of each host it concerns.
fn fault(c: &mut Canvas<'_>, f: &FaultSpan) {
    let (x0, x1) = (c.x(f.from_ms), c.x(f.to_ms));
    let down = f.label.ends_with(" down");
    for host in &f.hosts {
        let Some(&y) = c.host_y.get(host.as_str()) else {
            continue;
        };
        let title = escape(&f.label);
        let host = escape(host);
        if f.to_ms > f.from_ms {
            let (fill, extra) = if down {
                (palette::DOWN, " fill-opacity=\".45\"")
            } else {
                ("url(#hatch)", "")
            };
            let _ = writeln!(
                c.s,
                "<rect class=\"fault\" data-host=\"{host}\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\"{extra}><title>{title}</title></rect>",
                y + 1.0,
                (x1 - x0).max(1.5),
                HOST_H - 2.0
            );
        } else {
            let _ = writeln!(
                c.s,
                "<rect class=\"fault inst\" data-host=\"{host}\" x=\"{:.1}\" y=\"{:.1}\" width=\"2\" height=\"{:.1}\" fill=\"{}\"><title>{title}</title></rect>",
                x0 - 1.0,
                y + 1.0,
                HOST_H - 2.0,
                palette::FAULT
            );
        }
    }
}

/// The host's wall clock minus true time, with its scale in the label
/// column: `+max` at the top, `0` in the middle, `-max` at the bottom.
fn clock(c: &mut Canvas<'_>, h: &ClockLane, y: f64) {
    let max = h
        .offsets
        .iter()
        .map(|(_, o)| o.unsigned_abs())
        .max()
        .unwrap_or(0);
    let half = HOST_H / 2.0 - 5.0;
    let mid = y + HOST_H / 2.0;
    let scale = max.max(1) as f64;
    let _ = writeln!(
        c.s,
        "<line class=\"zero\" x1=\"{LABEL_W}\" y1=\"{mid:.1}\" x2=\"{}\" y2=\"{mid:.1}\" stroke=\"#ccc\" stroke-dasharray=\"2 3\"/>",
        LABEL_W + PLOT_W
    );
    let tick_x = LABEL_W - 4.0;
    for (dy, text) in [
        (-half, format!("+{}", format_ms(max))),
        (0.0, "0".to_string()),
        (half, format!("-{}", format_ms(max))),
    ] {
        let ty = mid + dy;
        let _ = writeln!(
            c.s,
            "<line class=\"scale\" x1=\"{tick_x}\" y1=\"{ty:.1}\" x2=\"{LABEL_W}\" y2=\"{ty:.1}\" stroke=\"{}\"/>",
            palette::CLOCK
        );
        if max > 0 || dy == 0.0 {
            c.text(tick_x - 2.0, ty + 3.0, SMALL_FONT, "scalel", &text, true);
        }
    }
    let stride = h.offsets.len().div_ceil(MAX_CLOCK_POINTS).max(1);
    let points: Vec<String> = h
        .offsets
        .iter()
        .step_by(stride)
        .map(|(t, o)| format!("{:.1},{:.1}", c.x(*t), mid - (*o as f64 / scale) * half))
        .collect();
    if !points.is_empty() {
        let _ = writeln!(
            c.s,
            "<polyline class=\"clock\" data-host=\"{}\" points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"><title>{} wall clock minus true time (scale ±{})</title></polyline>",
            escape(&h.host),
            points.join(" "),
            palette::CLOCK,
            escape(&h.host),
            format_ms(max)
        );
    }
}

fn job_lane(c: &mut Canvas<'_>, lane: &JobLane, y: f64, i: usize) {
    let fill = if i % 2 == 0 { "#fafafa" } else { "#f1f1f1" };
    let data = format!(" data-job=\"{}\" data-h=\"{JOB_H}\"", escape(&lane.label));
    lane_rect(c, y, JOB_H, fill, "lane job", &data);
    c.text(4.0, y + 15.0, LABEL_FONT, "lbl job", &lane.label, false);
    for b in &lane.leases {
        let (x0, x1) = (c.x(b.from_ms), c.x(b.to_ms));
        let w = (x1 - x0).max(1.5);
        let colour = c.palette.colour(&b.worker).to_string();
        let _ = writeln!(
            c.s,
            "<rect class=\"lease\" data-worker=\"{}\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{colour}\" stroke=\"#fff\" stroke-width=\".5\"><title>{} token {} {}..{} ({})</title></rect>",
            escape(&b.worker),
            y + 2.0,
            JOB_H - 10.0,
            escape(&b.worker),
            b.token,
            format_ms(b.from_ms),
            format_ms(b.to_ms),
            escape(&b.end)
        );
        let label = format!("{} t{}", b.worker, b.token);
        if text_width(&label, SMALL_FONT) + 4.0 <= w {
            c.text(x0 + 2.0, y + 11.5, SMALL_FONT, "tok", &label, false);
        }
    }
    for b in &lane.leases {
        let Some(until) = b.believed_until_ms.filter(|u| *u > b.from_ms) else {
            continue;
        };
        // Where the strip runs past the bar, the holder believed in a
        // lease the store had ended.
        let by = y + JOB_H - 3.0 - (b.token % 2) as f64 * 3.0;
        let (x0, x1) = (c.x(b.from_ms), c.x(until));
        let _ = writeln!(
            c.s,
            "<line class=\"belief\" x1=\"{x0:.1}\" y1=\"{by:.1}\" x2=\"{x1:.1}\" y2=\"{by:.1}\" stroke=\"{}\" stroke-width=\"2.5\" stroke-dasharray=\"4 2\"><title>{} believed it held token {} until {}</title></line>",
            c.palette.colour(&b.worker),
            escape(&b.worker),
            b.token,
            format_ms(until)
        );
    }
    for (at, what) in &lane.ticks {
        let tx = c.x(*at);
        let _ = writeln!(
            c.s,
            "<line class=\"tick\" x1=\"{tx:.1}\" y1=\"{:.1}\" x2=\"{tx:.1}\" y2=\"{:.1}\" stroke=\"#555\"><title>{} at {}</title></line>",
            y + 2.0,
            y + JOB_H - 2.0,
            escape(what),
            format_ms(*at)
        );
    }
}

/// Numbered violation markers on their job's lane (or the no-job lane).
/// Markers that would touch merge into one, labelled with the range of
/// their numbers.
fn marks(c: &mut Canvas<'_>, lane_of: &BTreeMap<&str, f64>, loose_y: f64) {
    let ordered = ordered_marks(c.t);
    let mut by_lane: BTreeMap<i64, Vec<(usize, &Mark)>> = BTreeMap::new();
    for (n, m) in ordered.iter().enumerate() {
        let y = m
            .job
            .as_deref()
            .and_then(|j| lane_of.get(j))
            .copied()
            .unwrap_or(loose_y);
        by_lane
            .entry((y * 10.0) as i64)
            .or_default()
            .push((n + 1, m));
    }
    for (y10, mut list) in by_lane {
        let y = y10 as f64 / 10.0;
        list.sort_by_key(|(n, m)| (m.at_ms, *n));
        let mut k = 0;
        while k < list.len() {
            let x = c.x(list[k].1.at_ms);
            let mut last = k;
            let width = |first: usize, last: usize| {
                let label = if first == last {
                    first.to_string()
                } else {
                    format!("{first}-{last}")
                };
                (text_width(&label, SMALL_FONT) + 6.0).max(12.0)
            };
            while last + 1 < list.len()
                && c.x(list[last + 1].1.at_ms) < x + width(list[k].0, list[last + 1].0) + 2.0
            {
                last += 1;
            }
            let (first_n, last_n) = (list[k].0, list[last].0);
            let label = if first_n == last_n {
                first_n.to_string()
            } else {
                format!("{first_n}-{last_n}")
            };
            let w = width(first_n, last_n);
            let titles: Vec<String> = list[k..=last]
                .iter()
                .map(|(n, m)| {
                    format!(
                        "#{n} at {} {}: {}",
                        format_ms(m.at_ms),
                        m.job.as_deref().unwrap_or("(no job)"),
                        m.label
                    )
                })
                .collect();
            for (_, m) in &list[k..=last] {
                let mx = c.x(m.at_ms);
                let _ = writeln!(
                    c.s,
                    "<line class=\"markline\" x1=\"{mx:.1}\" y1=\"{y:.1}\" x2=\"{mx:.1}\" y2=\"{:.1}\" stroke=\"{}\" stroke-width=\"1.5\"/>",
                    y + JOB_H,
                    palette::VIOLATION
                );
            }
            let job = list[k].1.job.as_deref().unwrap_or("");
            let _ = writeln!(
                c.s,
                "<g class=\"mark\" data-job=\"{}\"><rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"12\" rx=\"6\" fill=\"{}\"/><title>{}</title></g>",
                escape(job),
                y + 5.0,
                palette::VIOLATION,
                escape(&titles.join("\n"))
            );
            c.text(x + 3.0, y + 14.5, SMALL_FONT, "markl", &label, false);
            k = last + 1;
        }
    }
}

/// Held and late messages, from the sender's lane to the receiver's.
fn arrows(c: &mut Canvas<'_>) {
    for a in c.t.arrows.iter().take(MAX_ARROWS) {
        let (Some(&ya), Some(&yb)) = (c.host_y.get(a.from.as_str()), c.host_y.get(a.to.as_str()))
        else {
            continue;
        };
        let (xa, xb) = (c.x(a.sent_ms), c.x(a.delivered_ms));
        let (y1, y2) = (ya + HOST_H / 2.0, yb + HOST_H / 2.0);
        let dash = if a.held {
            ""
        } else {
            " stroke-dasharray=\"2 2\""
        };
        let _ = writeln!(
            c.s,
            "<line class=\"arrow {}\" data-from=\"{}\" data-to=\"{}\" x1=\"{xa:.1}\" y1=\"{y1:.1}\" x2=\"{xb:.1}\" y2=\"{y2:.1}\" stroke=\"#333\" stroke-opacity=\".7\" stroke-width=\"1\"{dash} marker-end=\"url(#arrow)\"><title>{} {}: sent {} by {}, delivered {} to {}</title></line>",
            if a.held { "held" } else { "late" },
            escape(&a.from),
            escape(&a.to),
            if a.held { "held" } else { "late" },
            escape(&a.label),
            format_ms(a.sent_ms),
            escape(&a.from),
            format_ms(a.delivered_ms),
            escape(&a.to)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_refuses_a_label_that_touches_another() {
        let mut r = Row::default();
        assert!(r.take(10.0, 50.0));
        assert!(!r.take(45.0, 80.0));
        assert!(!r.take(0.0, 9.0));
        assert!(r.take(60.0, 90.0));
    }
}
