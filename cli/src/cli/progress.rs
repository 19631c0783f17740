//! Progress on stderr: an `indicatif` bar when stderr is a terminal;
//! otherwise (CI logs, pipes) one plain line per scenario as its last seed
//! finishes. Wall time appears here only, never in a simulation.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// Redraws per second at most.
const REDRAWS_PER_S: u8 = 10;

/// The progress display.
pub struct Progress {
    bar: Option<ProgressBar>,
    total: usize,
    done: usize,
    failed: usize,
    /// Per scenario: name, seeds left, seeds with violations.
    scenarios: Vec<(String, usize, usize)>,
}

impl Progress {
    /// Progress over `scenarios` (name and number of seeds each).
    pub fn new(scenarios: Vec<(String, usize)>) -> Progress {
        let total: usize = scenarios.iter().map(|s| s.1).sum();
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(
                Some(total as u64),
                ProgressDrawTarget::stderr_with_hz(REDRAWS_PER_S),
            );
            let style = ProgressStyle::with_template(
                "[{bar:24}] {pos}/{len} {per_sec:.1} eta {eta} {prefix} {wide_msg}",
            )
            .map(|s| s.progress_chars("#>-"))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_prefix("0 failed");
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        Progress {
            bar,
            total,
            done: 0,
            failed: 0,
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
        let Some(bar) = &self.bar else {
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
        };
        bar.inc(1);
        bar.set_prefix(format!("{} failed", self.failed));
        if left == 0 && bad > 0 {
            // Kept above the bar: which scenario failed, as it happens.
            bar.println(format!("{label}: {bad} seeds with violations or errors"));
        }
        bar.set_message(label);
    }

    /// Erases the bar.
    pub fn finish(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
