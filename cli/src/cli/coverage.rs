//! Coverage in the reports of `leasehold run` and `leasehold merge`: per
//! scenario and in total, which named situations the seeds reached, on how
//! many seeds and how many times; the declared ones (`[coverage]
//! expects`) that no seed reached; and, for the catalogue, each bug's
//! catch rate beside the reach rate of the situation it needs.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// One situation over many seeds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reach {
    /// Seeds that reached it at least once.
    pub seeds: u64,
    /// Times it was reached, over those seeds.
    pub times: u64,
}

/// The coverage of many seeds (one scenario's, or all of a run's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Seeds counted (those that ran; an error counts none).
    pub seeds: u64,
    /// Each situation reached, in name order.
    pub reached: BTreeMap<String, Reach>,
}

impl Tally {
    /// Counts one seed's coverage: each situation with its times.
    pub fn add_seed<'a>(&mut self, seed: impl IntoIterator<Item = (&'a str, u64)>) {
        self.seeds += 1;
        for (name, times) in seed {
            let r = self.reached.entry(name.to_string()).or_default();
            r.seeds += 1;
            r.times = r.times.saturating_add(times);
        }
    }

    /// Adds another tally's seeds and reaches.
    pub fn merge(&mut self, other: &Tally) {
        self.seeds += other.seeds;
        for (name, r) in &other.reached {
            let mine = self.reached.entry(name.clone()).or_default();
            mine.seeds += r.seeds;
            mine.times = mine.times.saturating_add(r.times);
        }
    }

    /// Seeds that reached `name`.
    pub fn seeds_reaching(&self, name: &str) -> u64 {
        self.reached.get(name).map_or(0, |r| r.seeds)
    }

    /// The declared situations none of the seeds reached (none when no
    /// seed ran: an error is reported as such, not as a gap).
    pub fn missing<'a>(&self, expects: &'a [String]) -> Vec<&'a str> {
        if self.seeds == 0 {
            return Vec::new();
        }
        expects
            .iter()
            .filter(|n| self.seeds_reaching(n) == 0)
            .map(String::as_str)
            .collect()
    }

    /// [`Tally::missing`], judged only when the seeds cover the scenario's
    /// own budget (`seeds` of its file): a declaration says what those
    /// seeds reach, so a run of fewer (CI's `--seeds 3` on PostgreSQL, a
    /// quick `--seeds 2`) judges none.
    pub fn missing_within<'a>(&self, expects: &'a [String], budget: u64) -> Vec<&'a str> {
        if self.seeds < budget {
            return Vec::new();
        }
        self.missing(expects)
    }

    /// `{"seeds": N, "reached": {"name": {"seeds": s, "times": t}, ...}}`.
    pub fn to_json(&self) -> Value {
        let reached: Map<String, Value> = self
            .reached
            .iter()
            .map(|(k, r)| (k.clone(), json!({"seeds": r.seeds, "times": r.times})))
            .collect();
        json!({"seeds": self.seeds, "reached": reached})
    }
}

/// One seed's coverage as its `run` line carries it: `{"name": times}`.
pub fn seed_json<'a>(seed: impl IntoIterator<Item = (&'a str, u64)>) -> Value {
    let m: Map<String, Value> = seed
        .into_iter()
        .map(|(k, n)| (k.to_string(), json!(n)))
        .collect();
    Value::Object(m)
}

/// One seed's coverage read back from its `run` line (`None` for a line
/// written before coverage was reported).
pub fn seed_from_json(v: &Value) -> Option<Vec<(String, u64)>> {
    let m = v.as_object()?;
    Some(
        m.iter()
            .map(|(k, n)| (k.clone(), n.as_u64().unwrap_or(0)))
            .collect(),
    )
}

/// The verdict's reason when declared situations went unreached.
pub fn missing_reason(missing: &[&str], seeds: u64) -> String {
    let s = if missing.len() == 1 { "" } else { "s" };
    format!(
        "coverage: declared situation{s} {} reached on none of the {seeds} seeds",
        missing.join(", ")
    )
}

/// One scenario's lines of the text report: its name, how many
/// situations its seeds reached, and each declared one's reach.
pub fn scenario_line(name: &str, t: &Tally, expects: &[String]) -> String {
    let declared: Vec<String> = expects
        .iter()
        .map(|n| format!("{n} {}/{}", t.seeds_reaching(n), t.seeds))
        .collect();
    let mut line = format!("  {name}: {} situations", t.reached.len());
    if !declared.is_empty() {
        line.push_str(&format!("; declared: {}", declared.join(", ")));
    }
    line
}

/// The text report's total table: each built-in situation with the seeds
/// that reached it and how often, then any other (a harness's own), then
/// the built-in ones never reached.
pub fn total_lines(total: &Tally) -> Vec<String> {
    let builtin = leasehold_model::situation::BUILTIN;
    let width = builtin.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let reached = builtin
        .iter()
        .filter(|s| total.seeds_reaching(s.name) > 0)
        .count();
    let mut out = vec![format!(
        "coverage: {reached} of {} built-in situations reached over {} seeds (seeds reaching, times):",
        builtin.len(),
        total.seeds
    )];
    for (name, r) in &total.reached {
        out.push(format!("  {name:<width$}  {:>6}  {:>8}", r.seeds, r.times));
    }
    let never: Vec<&str> = builtin
        .iter()
        .filter(|s| total.seeds_reaching(s.name) == 0)
        .map(|s| s.name)
        .collect();
    if !never.is_empty() {
        out.push(format!(
            "  never reached ({}): {}",
            never.len(),
            never.join(", ")
        ));
    }
    out
}

/// The catalogue yardstick's line for one bug: its catch rate beside the
/// reach rate of each situation it declares.
pub fn catalogue_line(bug: &str, caught: u64, t: &Tally, expects: &[String]) -> String {
    let needs: Vec<String> = expects
        .iter()
        .map(|n| format!("{n} reached {}/{}", t.seeds_reaching(n), t.seeds))
        .collect();
    let needs = if needs.is_empty() {
        "no situation declared".to_string()
    } else {
        needs.join(", ")
    };
    format!("  {bug}: caught {caught}/{}; {needs}", t.seeds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_count_seeds_and_times_and_name_what_is_missing() {
        let mut a = Tally::default();
        a.add_seed([("x", 2), ("y", 1)]);
        a.add_seed([("x", 1)]);
        let mut b = Tally::default();
        b.add_seed([]);
        b.merge(&a);
        assert_eq!(b.seeds, 3);
        assert_eq!(b.reached["x"], Reach { seeds: 2, times: 3 });
        assert_eq!(b.seeds_reaching("y"), 1);
        let expects = vec!["x".to_string(), "z".to_string()];
        assert_eq!(b.missing(&expects), ["z"]);
        assert!(Tally::default().missing(&expects).is_empty(), "no seed ran");
        assert_eq!(b.missing_within(&expects, 3), ["z"], "the whole budget ran");
        assert!(
            b.missing_within(&expects, 4).is_empty(),
            "fewer seeds than its budget"
        );
        let back = seed_from_json(&seed_json([("x", 2)])).unwrap();
        assert_eq!(back, [("x".to_string(), 2)]);
        assert_eq!(b.to_json()["reached"]["x"], json!({"seeds": 2, "times": 3}));
    }
}
