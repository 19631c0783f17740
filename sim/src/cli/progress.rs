//! A one-line progress display on stderr, drawn only when stderr is a
//! terminal (never in CI logs or when piped).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Least time between two redraws.
const REDRAW_EVERY: Duration = Duration::from_millis(100);
/// Width of the bar in characters.
const BAR: usize = 24;

/// The progress line.
pub struct Progress {
    enabled: bool,
    total: usize,
    done: usize,
    failed: usize,
    started: Instant,
    last_draw: Option<Instant>,
}

impl Progress {
    /// A progress line for `total` runs; silent unless stderr is a terminal.
    pub fn new(total: usize) -> Progress {
        Progress {
            enabled: std::io::stderr().is_terminal(),
            total,
            done: 0,
            failed: 0,
            started: Instant::now(),
            last_draw: None,
        }
    }

    /// Records one finished run and redraws when due.
    pub fn tick(&mut self, failed: bool, label: &str) {
        self.done += 1;
        self.failed += usize::from(failed);
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        if self.last_draw.is_some_and(|t| now - t < REDRAW_EVERY) && self.done < self.total {
            return;
        }
        self.last_draw = Some(now);
        let filled = (self.done * BAR).checked_div(self.total).unwrap_or(BAR);
        let rate = self.done as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
        let label: String = label.chars().take(40).collect();
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
