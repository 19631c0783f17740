//! Progress on stderr: a redrawn bar when stderr is a terminal; otherwise
//! (CI logs, pipes) one plain line per scenario as its last seed finishes.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Least time between two redraws.
const REDRAW_EVERY: Duration = Duration::from_millis(100);
/// Width of the bar in characters.
const BAR: usize = 24;

/// The progress display.
pub struct Progress {
    enabled: bool,
    total: usize,
    done: usize,
    failed: usize,
    started: Instant,
    last_draw: Option<Instant>,
    /// Per scenario: name, seeds left, seeds with violations.
    scenarios: Vec<(String, usize, usize)>,
}

impl Progress {
    /// Progress over `scenarios` (name and number of seeds each).
    pub fn new(scenarios: Vec<(String, usize)>) -> Progress {
        Progress {
            enabled: std::io::stderr().is_terminal(),
            total: scenarios.iter().map(|s| s.1).sum(),
            done: 0,
            failed: 0,
            started: Instant::now(),
            last_draw: None,
            scenarios: scenarios.into_iter().map(|(n, k)| (n, k, 0)).collect(),
        }
    }

    /// Records one finished seed of scenario `scenario`.
    pub fn tick(&mut self, scenario: usize, failed: bool) {
        self.done += 1;
        self.failed += usize::from(failed);
        let Some(s) = self.scenarios.get_mut(scenario) else {
            return;
        };
        s.1 = s.1.saturating_sub(1);
        s.2 += usize::from(failed);
        let (label, left, bad) = (s.0.clone(), s.1, s.2);
        if !self.enabled {
            if left == 0 {
                eprintln!(
                    "[{}/{}] {label}: done, {}",
                    self.done,
                    self.total,
                    if bad == 0 {
                        "no violations".to_string()
                    } else {
                        format!("{bad} seeds with violations or errors")
                    }
                );
            }
            return;
        }
        let now = Instant::now();
        if self.last_draw.is_some_and(|t| now - t < REDRAW_EVERY) && self.done < self.total {
            return;
        }
        self.last_draw = Some(now);
        let filled = (self.done * BAR).checked_div(self.total).unwrap_or(BAR);
        let rate = self.done as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
        let label: String = label.chars().take(40).collect::<String>();
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K[{}{}] {}/{} {:.1} seeds/s {} failed  {}",
            "#".repeat(filled),
            "-".repeat(BAR - filled),
            self.done,
            self.total,
            rate,
            self.failed,
            label
        );
        let _ = err.flush();
    }

    /// Erases the line.
    pub fn finish(&mut self) {
        if self.enabled && self.last_draw.is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}
