//! The machine's load averages, for reports: other builds share the
//! machine, so each figure says how busy it was.

/// The 1, 5 and 15 minute load averages (Linux).
pub fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut it = text.split_whitespace().map(|v| v.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

/// [`load_average`] as text, `n/a` when unknown.
pub fn load_text(l: Option<[f64; 3]>) -> String {
    l.map(|l| format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2]))
        .unwrap_or_else(|| "n/a".into())
}
