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
    scenarios: Vec<Tally>,
}

/// One scenario's seeds so far.
struct Tally {
    name: String,
    seeds: usize,
    left: usize,
    /// Seeds that failed: a violation the scenario does not expect, or an
    /// error.
    bad: usize,
    /// Seeds of a scenario that expects a violation (the catalogue's) on
    /// which one was found: its bug caught, not a failure.
    caught: usize,
}

/// How one seed ended, as the progress display counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedEnd {
    /// Every invariant held (or the seed found nothing its scenario
    /// expects).
    Clean,
    /// The seed broke an invariant its scenario expects broken.
    Caught,
    /// A violation its scenario does not expect, or an error.
    Failed,
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
            scenarios: scenarios
                .into_iter()
                .map(|(name, seeds)| Tally {
                    name,
                    seeds,
                    left: seeds,
                    bad: 0,
                    caught: 0,
                })
                .collect(),
        }
    }

    /// Records one finished seed of scenario `scenario`.
    pub fn tick(&mut self, scenario: usize, end: SeedEnd) {
        let failed = end == SeedEnd::Failed;
        self.done += 1;
        self.failed += usize::from(failed);
        let Some(s) = self.scenarios.get_mut(scenario) else {
            return;
        };
        s.left = s.left.saturating_sub(1);
        s.bad += usize::from(failed);
        s.caught += usize::from(end == SeedEnd::Caught);
        let (label, left, bad) = (s.name.clone(), s.left, s.bad);
        let Some(bar) = &self.bar else {
            if left == 0 {
                eprintln!(
                    "[{}/{}] {label}: done, {}",
                    self.done,
                    self.total,
                    s.verdict()
                );
            }
            return;
        };
        bar.inc(1);
        bar.set_prefix(format!("{} failed", self.failed));
        if left == 0 && bad > 0 {
            // Kept above the bar: which scenario failed, as it happens.
            bar.println(format!("{label}: {}", s.verdict()));
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

impl Tally {
    /// What its finished seeds came to: failures first, then violations
    /// the scenario expects (a catalogue scenario's are what it exists
    /// for, so they are not reported as "no violations"; whether they are
    /// the invariant it names is judged with the whole budget, in the
    /// summary).
    fn verdict(&self) -> String {
        match (self.bad, self.caught) {
            (0, 0) => "no violations".to_string(),
            (0, c) => format!(
                "{c} of {} seeds broke an invariant, as the scenario expects",
                self.seeds
            ),
            (b, _) => format!("{b} seeds with violations or errors"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(bad: usize, caught: usize) -> Tally {
        Tally {
            name: "s".into(),
            seeds: 4,
            left: 0,
            bad,
            caught,
        }
    }

    #[test]
    fn a_caught_bug_is_not_reported_as_no_violations() {
        assert_eq!(tally(0, 0).verdict(), "no violations");
        assert_eq!(
            tally(0, 3).verdict(),
            "3 of 4 seeds broke an invariant, as the scenario expects"
        );
        assert_eq!(tally(1, 0).verdict(), "1 seeds with violations or errors");
        assert_eq!(tally(2, 1).verdict(), "2 seeds with violations or errors");
    }
}
