//! The page around the drawing: title, notes, the SVG, the legend and
//! the numbered list of violations.

use super::draw;
use super::escape::escape;
use super::page::{Timeline, MAX_LANES};
use super::palette::{self, Palette};
use std::fmt::Write;

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
