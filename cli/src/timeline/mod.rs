//! `leasehold replay --timeline FILE.html`: one self-contained HTML page
//! (inline SVG and CSS, no scripts or external assets) showing a run in
//! true time.
//!
//! - a lane per host: its faults drawn on it (hatched grey: a crash, a
//!   pause, a partition or a hold touching that host), its wall clock's
//!   offset from true time with a labelled scale, and its worker colour;
//! - a lane per job: who held which token when (one colour per worker,
//!   from a palette that has no grey and no red), how long the holder
//!   believed it (dashed strip), and violations marked on the job's lane
//!   with a numbered red marker;
//! - arrows for held and late messages, from the sender's lane at the send
//!   to the receiver's lane at the delivery;
//! - a legend, and the numbered violations listed under the drawing.
//!
//! Labels never overprint: a label is drawn only where it fits (the layout
//! in `draw` keeps each row's occupied spans), and whatever did not fit
//! is in the element's tooltip and in the list.
//!
//! The page is drawn from a [`Timeline`], plain data that the replay
//! command builds from a history.

mod build;
mod draw;
mod palette;

pub use build::{from_history, MarkAt, LATE_MS};
pub use draw::text_width;
pub use palette::Palette;

use std::fmt::Write;

/// Most lanes drawn per section (the rest are summarised).
pub const MAX_LANES: usize = 400;

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
    /// One lane per host, with its clock.
    pub clocks: Vec<ClockLane>,
    /// Fault intervals, each drawn on the lanes of the hosts it concerns.
    pub faults: Vec<FaultSpan>,
    /// Violations, marked on their job's lane.
    pub marks: Vec<Mark>,
    /// Held and late messages.
    pub arrows: Vec<Arrow>,
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

/// A host's lane: its clock as samples of (true ms, offset of its wall
/// clock in ms), and the worker identity it runs under, if any.
#[derive(Clone, Debug, Default)]
pub struct ClockLane {
    /// Host name.
    pub host: String,
    /// The worker identity it runs under (its colour), if a worker.
    pub worker: Option<String>,
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
    /// The job lane it belongs to (its label, like `job 7`), if any.
    pub job: Option<String>,
}

/// A message that arrived late: sent by `from` at `sent_ms`, delivered to
/// `to` at `delivered_ms`.
#[derive(Clone, Debug)]
pub struct Arrow {
    /// Sender host.
    pub from: String,
    /// Receiver host.
    pub to: String,
    /// Sent, true ms.
    pub sent_ms: u64,
    /// Delivered, true ms.
    pub delivered_ms: u64,
    /// Whether a hold between the two hosts kept it (else: just late).
    pub held: bool,
    /// What it carried, like `renew job 3 t2`.
    pub label: String,
}

const STYLE: &str = "body{font:13px system-ui,sans-serif;margin:16px;color:#222}\
h1{font-size:18px}pre{background:#f6f6f6;padding:8px;white-space:pre-wrap}\
.legend{display:flex;flex-wrap:wrap;gap:6px 16px;margin:8px 0}.legend span{white-space:nowrap}\
.sw{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:middle;border:1px solid #0003}\
table.marks{border-collapse:collapse;font-size:12px}table.marks td{padding:2px 8px;border-bottom:1px solid #eee;vertical-align:top}";

/// Renders the page.
pub fn render(t: &Timeline) -> String {
    let palette = Palette::of(t);
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
    s.push_str("</pre>\n");
    legend(&mut s, &palette);
    s.push_str(&draw::svg(t, &palette));
    if t.jobs.len() > MAX_LANES {
        let _ = writeln!(
            s,
            "<p>{} more job lanes not drawn.</p>",
            t.jobs.len() - MAX_LANES
        );
    }
    marks_table(&mut s, t);
    s.push_str("</body></html>\n");
    s
}

fn legend(s: &mut String, palette: &Palette) {
    s.push_str("<div class=\"legend\" id=\"legend\">");
    for (worker, colour) in palette.workers() {
        let _ = write!(
            s,
            "<span class=\"worker\" data-worker=\"{0}\"><i class=\"sw\" style=\"background:{1}\"></i>{0}</span>",
            escape(worker),
            colour
        );
    }
    let _ = write!(
        s,
        "<span><i class=\"sw\" style=\"background:repeating-linear-gradient(45deg,{0} 0 2px,#fff 2px 5px)\"></i>fault on this host (hover for which)</span>\
<span><i class=\"sw\" style=\"background:{1}\"></i>host down (crashed)</span>\
<span><i class=\"sw\" style=\"background:{2};border-radius:50%\"></i>violation (numbered, listed below)</span>\
<span><i class=\"sw\" style=\"background:none;border:none;border-top:2px dashed #555\"></i>holder's belief</span>\
<span>&#8594; held (solid) or late (dotted) message</span>\
<span><i class=\"sw\" style=\"background:none;border:none;border-top:2px solid {3}\"></i>host clock minus true time</span>",
        palette::FAULT,
        palette::DOWN,
        palette::VIOLATION,
        palette::CLOCK
    );
    s.push_str("</div>\n");
}

fn marks_table(s: &mut String, t: &Timeline) {
    if t.marks.is_empty() {
        return;
    }
    s.push_str("<h2>Violations</h2>\n<table class=\"marks\" id=\"violations\">");
    for (i, m) in draw::ordered_marks(t).iter().enumerate() {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            i + 1,
            leasehold_model::duration::format_ms(m.at_ms),
            escape(m.job.as_deref().unwrap_or("(no job)")),
            escape(&m.label)
        );
    }
    s.push_str("</table>\n");
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
