//! Mutations of a kept input for the guided explorer
//! ([`super::explore_guided`]): a run near one that reached a rare
//! situation, changed in one of four ways: its seed, its fault mix, one
//! timing range, or its topology.
//!
//! Invariant: a mutation stays inside the envelope of the scenario as
//! written. A fault kind is switched on only back to the scenario's own
//! range; a timing range is only narrowed to a part of the scenario's own
//! range (half of it, or one of its ends); the topology moves one worker
//! at a time and keeps at least one. So a mutated run is a run the
//! scenario's own draws could have made more rarely, never one outside
//! what it declares (a drift beyond its bound, a fault it does not have).
//! Every draw comes from [`Draws`], so a mutation is a pure function of
//! the explore seed and the runs before it.
//!
//! A timing mutation says what it narrowed ([`Narrowing`]); when the run
//! it made came nearer to a situation no run had reached, the explorer
//! narrows that range again the same way ([`narrow_again`]: the same half
//! of what is left), toward the end that moved the run closer. Still
//! inside the envelope: the new range is a part of the kept one, itself a
//! part of the scenario's.

use super::swarm_mix::{kinds, splitmix};
use leasehold_model::config::{Range, SimConfig};
use leasehold_model::duration::{Dur, SignedDur};

/// Most extra workers a topology mutation adds above the scenario's own.
pub const MAX_EXTRA_WORKERS: u32 = 2;

/// A deterministic stream of draws (SplitMix64 over a counter).
#[derive(Clone, Debug)]
pub struct Draws(u64);

impl Draws {
    /// The stream of `seed`.
    pub fn new(seed: u64) -> Draws {
        Draws(splitmix(seed ^ 0x6775_6964_6564))
    }

    /// The next draw.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        splitmix(self.0)
    }

    /// A draw in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// What a mutation changed, for the progress lines and the corpus header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// A new seed, the same configuration.
    Seed,
    /// A fault kind switched off, or back on to the scenario's range.
    Faults(String),
    /// One timing range narrowed inside the scenario's range.
    Timing(String),
    /// The number of workers moved by one.
    Topology(String),
}

impl std::fmt::Display for Mutation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mutation::Seed => write!(f, "seed"),
            Mutation::Faults(s) => write!(f, "faults: {s}"),
            Mutation::Timing(s) => write!(f, "timing: {s}"),
            Mutation::Topology(s) => write!(f, "topology: {s}"),
        }
    }
}

/// A timing range a mutation narrowed, and which part of it it kept (the
/// choice of [`part`]: 0 lower half, 1 upper half, 2 low end, 3 high end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Narrowing {
    /// The range's name, as in [`Mutation::Timing`].
    pub range: &'static str,
    /// The part kept.
    pub side: u64,
}

/// Mutates `kept` (a configuration that ran, of the scenario written as
/// `original`) into a new configuration; answers it with what changed.
/// A mutation that has nothing to change (a scenario without two fault
/// kinds, without a timing range, ...) or that makes an invalid
/// configuration falls back to the seed: the caller then draws a new seed.
/// (The explorer calls [`mutate_with`], which says what it narrowed.)
#[cfg(test)]
pub fn mutate(original: &SimConfig, kept: &SimConfig, d: &mut Draws) -> (SimConfig, Mutation) {
    let (out, m, _) = mutate_with(original, kept, d);
    (out, m)
}

/// [`mutate`], answering also the timing range it narrowed, if it did.
pub fn mutate_with(
    original: &SimConfig,
    kept: &SimConfig,
    d: &mut Draws,
) -> (SimConfig, Mutation, Option<Narrowing>) {
    let mut out = kept.clone();
    let mut narrowed = None;
    let changed = match d.below(4) {
        0 => None,
        1 => faults(original, &mut out, d).map(Mutation::Faults),
        2 => timing(original, &mut out, d).map(|(m, n)| {
            narrowed = Some(n);
            Mutation::Timing(m)
        }),
        _ => topology(original, &mut out, d).map(Mutation::Topology),
    };
    // A change the scenario's checks refuse (a worker named by a scripted
    // fault taken away, ...), or one that changed nothing (a range narrowed
    // to the part it already was), is not run: the seed changes instead.
    match changed {
        Some(m) if out != *kept && out.validate().is_ok() => (out, m, narrowed),
        _ => (kept.clone(), Mutation::Seed, None),
    }
}

/// Narrows `kept`'s range `n.range` again to the same part of what it is
/// now (a half of a half, ...), toward the end that the narrowing which
/// made `kept` moved the run to; `None` when nothing is left to narrow
/// (an end is one value already) or the result fails validation.
pub fn narrow_again(kept: &SimConfig, n: Narrowing) -> Option<(SimConfig, Mutation)> {
    let (lo, hi) = ranges(kept)
        .into_iter()
        .find(|r| r.0 == n.range)
        .map(|r| (r.1, r.2))?;
    let (a, b, how) = part(lo, hi, n.side)?;
    let mut out = kept.clone();
    set_range(&mut out, n.range, a, b);
    (out != *kept && out.validate().is_ok()).then(|| {
        (
            out,
            Mutation::Timing(format!("{} {how} again [{a}, {b}]", n.range)),
        )
    })
}

/// Switches one of the scenario's fault kinds off, or back on to its own
/// range; keeps at least one on.
fn faults(original: &SimConfig, out: &mut SimConfig, d: &mut Draws) -> Option<String> {
    let mut orig = original.clone();
    let own: Vec<(&'static str, Range<f64>)> = kinds(&mut orig)
        .into_iter()
        .filter(|(_, r)| r.hi > 0.0)
        .map(|(n, r)| (n, *r))
        .collect();
    if own.len() < 2 {
        return None;
    }
    let (name, range) = own[d.below(own.len() as u64) as usize];
    let mut now = kinds(out);
    let on = now.iter().filter(|(_, r)| r.hi > 0.0).count();
    let slot = now.iter_mut().find(|(n, _)| *n == name)?;
    if slot.1.hi > 0.0 {
        if on < 2 {
            return None;
        }
        *slot.1 = Range::exactly(0.0);
        Some(format!("{name} off"))
    } else {
        *slot.1 = range;
        Some(format!("{name} on"))
    }
}

/// A part of `[lo, hi]` by choice `c`: the lower half, the upper half, the
/// low end, or the high end (`None` when the range is one value).
fn part(lo: i128, hi: i128, c: u64) -> Option<(i128, i128, &'static str)> {
    if lo >= hi {
        return None;
    }
    let mid = lo + (hi - lo) / 2;
    Some(match c % 4 {
        0 => (lo, mid, "lower half"),
        1 => (mid, hi, "upper half"),
        2 => (lo, lo, "low end"),
        _ => (hi, hi, "high end"),
    })
}

/// Narrows one timing range the scenario draws from to a part of the
/// scenario's own range.
fn timing(original: &SimConfig, out: &mut SimConfig, d: &mut Draws) -> Option<(String, Narrowing)> {
    let mut ranges = ranges(original);
    ranges.retain(|(_, lo, hi)| lo < hi);
    if ranges.is_empty() {
        return None;
    }
    let (name, lo, hi) = ranges[d.below(ranges.len() as u64) as usize];
    let side = d.next();
    let (a, b, how) = part(lo, hi, side)?;
    set_range(out, name, a, b);
    Some((
        format!("{name} {how} [{a}, {b}]"),
        Narrowing {
            range: name,
            side: side % 4,
        },
    ))
}

/// Every timing range a mutation may narrow, as (name, low, high) in
/// milliseconds or ppm.
fn ranges(o: &SimConfig) -> Vec<(&'static str, i128, i128)> {
    // (name, the scenario's range, as milliseconds or ppm).
    let durs: [(&str, Range<Dur>); 6] = [
        ("network.latency", o.network.latency),
        ("faults.partition_len", o.faults.partition_len),
        ("faults.pause_len", o.faults.pause_len),
        ("faults.hold_len", o.faults.hold_len),
        ("faults.restart_after", o.faults.restart_after),
        ("workload.run_time", o.workload.run_time),
    ];
    let mut ranges: Vec<(&str, i128, i128)> = durs
        .iter()
        .map(|(n, r)| (*n, i128::from(r.lo.as_ms()), i128::from(r.hi.as_ms())))
        .collect();
    ranges.push((
        "faults.clock_offset",
        i128::from(o.faults.clock_offset.lo.0),
        i128::from(o.faults.clock_offset.hi.0),
    ));
    ranges.push((
        "faults.clock_drift_ppm",
        i128::from(o.faults.clock_drift_ppm.lo),
        i128::from(o.faults.clock_drift_ppm.hi),
    ));
    ranges
}

/// Sets range `name` of `out` to `[a, b]`.
fn set_range(out: &mut SimConfig, name: &str, a: i128, b: i128) {
    let dur = |v: i128| Dur::ms(u64::try_from(v).unwrap_or(0));
    let signed = |v: i128| i64::try_from(v).unwrap_or(0);
    match name {
        "network.latency" => out.network.latency = Range::new(dur(a), dur(b)),
        "faults.partition_len" => out.faults.partition_len = Range::new(dur(a), dur(b)),
        "faults.pause_len" => out.faults.pause_len = Range::new(dur(a), dur(b)),
        "faults.hold_len" => out.faults.hold_len = Range::new(dur(a), dur(b)),
        "faults.restart_after" => out.faults.restart_after = Range::new(dur(a), dur(b)),
        "workload.run_time" => out.workload.run_time = Range::new(dur(a), dur(b)),
        "faults.clock_offset" => {
            out.faults.clock_offset = Range::new(SignedDur(signed(a)), SignedDur(signed(b)));
        }
        _ => out.faults.clock_drift_ppm = Range::new(signed(a), signed(b)),
    }
}

/// Moves the number of workers by one, within `1..=own + MAX_EXTRA_WORKERS`.
fn topology(original: &SimConfig, out: &mut SimConfig, d: &mut Draws) -> Option<String> {
    let own = original.topology.workers;
    let now = out.topology.workers;
    let up = now < own.saturating_add(MAX_EXTRA_WORKERS);
    let down = now > 1;
    let to = match (up, down) {
        (true, true) if d.next() & 1 == 0 => now + 1,
        (true, _) => now + 1,
        (false, true) => now - 1,
        (false, false) => return None,
    };
    out.topology.workers = to;
    Some(format!("workers {now} -> {to}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_stay_inside_the_scenarios_envelope() {
        let original = leasehold_model::builtin::standard();
        let mut d = Draws::new(7);
        let mut cfg = original.clone();
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..400 {
            let (next, m) = mutate(&original, &cfg, &mut d);
            seen.insert(m.to_string().split(':').next().map(str::to_owned));
            let (mut a, mut b) = (original.clone(), next.clone());
            for ((name, own), (_, now)) in kinds(&mut a).iter().zip(kinds(&mut b).iter()) {
                assert!(
                    **now == Range::exactly(0.0) || **now == **own,
                    "{name}: only off or the scenario's own range"
                );
            }
            let (lo, hi) = (original.network.latency.lo, original.network.latency.hi);
            assert!(lo <= next.network.latency.lo && next.network.latency.hi <= hi);
            let (lo, hi) = (
                original.faults.clock_drift_ppm.lo,
                original.faults.clock_drift_ppm.hi,
            );
            assert!(lo <= next.faults.clock_drift_ppm.lo && next.faults.clock_drift_ppm.hi <= hi);
            let w = next.topology.workers;
            assert!((1..=original.topology.workers + MAX_EXTRA_WORKERS).contains(&w));
            if m != Mutation::Seed {
                assert_ne!(next, cfg, "{m} changed nothing");
            }
            cfg = next;
        }
        assert_eq!(seen.len(), 4, "every kind of mutation is drawn");
    }

    #[test]
    fn narrowing_again_halves_the_same_side_of_what_is_left() {
        let original = leasehold_model::builtin::standard();
        let mut d = Draws::new(5);
        // Find a timing mutation that kept a half (an end cannot narrow).
        let (kept, n) = (0..400)
            .find_map(|_| match mutate_with(&original, &original, &mut d) {
                (c, Mutation::Timing(_), Some(n)) if n.side < 2 => Some((c, n)),
                _ => None,
            })
            .expect("a timing mutation to a half");
        let (lo, hi) = ranges(&kept)
            .into_iter()
            .find(|r| r.0 == n.range)
            .map(|r| (r.1, r.2))
            .unwrap();
        let (again, m) = narrow_again(&kept, n).expect("a half narrows again");
        let (a, b) = ranges(&again)
            .into_iter()
            .find(|r| r.0 == n.range)
            .map(|r| (r.1, r.2))
            .unwrap();
        let mid = lo + (hi - lo) / 2;
        let want = if n.side == 0 { (lo, mid) } else { (mid, hi) };
        assert_eq!((a, b), want, "{m}: the same half of [{lo}, {hi}]");
        assert!(m.to_string().contains("again"), "{m}");
        // Inside the scenario's own range, as every mutation.
        let (olo, ohi) = ranges(&original)
            .into_iter()
            .find(|r| r.0 == n.range)
            .map(|r| (r.1, r.2))
            .unwrap();
        assert!(olo <= a && b <= ohi);
        // An end is one value: nothing is left to narrow.
        let end = Narrowing {
            range: n.range,
            side: 2,
        };
        let (point, _) = narrow_again(&kept, end).expect("narrows to the low end");
        assert!(narrow_again(&point, end).is_none());
    }

    #[test]
    fn draws_are_a_pure_function_of_the_seed() {
        let a: Vec<u64> = {
            let mut d = Draws::new(3);
            (0..8).map(|_| d.next()).collect()
        };
        let b: Vec<u64> = {
            let mut d = Draws::new(3);
            (0..8).map(|_| d.next()).collect()
        };
        let c: Vec<u64> = {
            let mut d = Draws::new(4);
            (0..8).map(|_| d.next()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
