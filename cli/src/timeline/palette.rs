//! Colours: one per worker, from a palette that holds no grey (faults)
//! and no red (violations), so a lease never blends into the shading and
//! never reads as an error.

use super::page::Timeline;
use std::collections::BTreeMap;

/// Fault hatching.
pub const FAULT: &str = "#6b6b6b";
/// A crashed host's down time.
pub const DOWN: &str = "#3a3a3a";
/// Violation markers.
pub const VIOLATION: &str = "#d62828";
/// Clock offset lines.
pub const CLOCK: &str = "#1b7f79";

/// Worker colours, in order: Paul Tol's bright and muted schemes without
/// their reds and greys, each distinct from its neighbours.
const WORKERS: [&str; 10] = [
    "#4477aa", "#228833", "#ccbb44", "#aa3377", "#66ccee", "#332288", "#999933", "#44aa99",
    "#ddcc77", "#117733",
];

/// The colour of each worker on one page.
#[derive(Clone, Debug, Default)]
pub struct Palette {
    by_worker: BTreeMap<String, String>,
}

impl Palette {
    /// Colours for every worker `t` shows, in name order.
    pub fn of(t: &Timeline) -> Palette {
        let mut names: Vec<&str> = t
            .jobs
            .iter()
            .flat_map(|j| j.leases.iter().map(|l| l.worker.as_str()))
            .chain(t.clocks.iter().filter_map(|c| c.worker.as_deref()))
            .collect();
        names.sort_by_key(|a| natural(a));
        names.dedup();
        let by_worker = names
            .into_iter()
            .enumerate()
            .map(|(i, w)| (w.to_string(), colour(i)))
            .collect();
        Palette { by_worker }
    }

    /// The worker's colour (a neutral blue-grey for an unknown name).
    pub fn colour(&self, worker: &str) -> &str {
        self.by_worker.get(worker).map_or("#5577aa", String::as_str)
    }

    /// Every worker and its colour, in name order.
    pub fn workers(&self) -> Vec<(&str, &str)> {
        let mut v: Vec<(&str, &str)> = self
            .by_worker
            .iter()
            .map(|(w, c)| (w.as_str(), c.as_str()))
            .collect();
        v.sort_by_key(|a| natural(a.0));
        v
    }
}

/// Sorts `worker-10` after `worker-9`.
fn natural(name: &str) -> (String, u64, String) {
    let digits = name.trim_end_matches(|c: char| c.is_ascii_digit());
    let n = name[digits.len()..].parse().unwrap_or(0);
    (digits.to_string(), n, name.to_string())
}

/// The i-th worker colour: the palette, then hues that keep clear of red
/// (hue 345..15) and of grey (saturation 60%).
fn colour(i: usize) -> String {
    match WORKERS.get(i) {
        Some(c) => (*c).to_string(),
        None => {
            let k = (i - WORKERS.len()) as u64;
            // Golden-angle steps over hues 25..335.
            let hue = 25 + (k * 137) % 310;
            format!("hsl({hue},60%,42%)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_worker_gets_a_distinct_colour_never_grey_or_red() {
        let colours: Vec<String> = (0..40).map(colour).collect();
        let mut unique = colours.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), colours.len());
        for c in &colours {
            assert!(c != FAULT && c != DOWN && c != VIOLATION, "{c}");
        }
        assert!(natural("worker-10") > natural("worker-9"));
    }
}
